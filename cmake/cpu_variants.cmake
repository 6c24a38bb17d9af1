# The host kernels' ISA variants (src/ptk/core/cpu_variants.def; docs/design.md, "CPU ISA variants"). Sets:
#   PTK_CPU_VARIANTS        (cache) the variants built: a set of kernel objects and a backend module each; empty where
#                           the build has none (PTK_NATIVE_ISA, a GPU Kokkos, not x86-64, not g++ or clang)
#   PTK_CPU_VARIANT         (cache) the variant of this build tree's own programs (ptk, ptk_tests, ptk_bench, libptk.a):
#                           by default the best of PTK_CPU_VARIANTS that the build machine runs
#   PTK_CPU_RUNNABLE        the variants of PTK_CPU_VARIANTS the build machine runs, best first (CI tests each)
#   ptk_cpu_flags_<name>    the compiler flags of a variant's kernel units, a list
# and compiles everything that is not a kernel unit (library core, tool, tests, benchmarks) for the last variant built,
# which every CPU that runs any of them has.
file(READ ${PROJECT_SOURCE_DIR}/src/ptk/core/cpu_variants.def _ptk_def)
string(REGEX MATCHALL "\nPTK_CPU_VARIANT\\([a-z0-9_]+, *\"[^\"]*\",[ \n]*\"[^\"]*\"\\)" _ptk_rows "${_ptk_def}")
set(ptk_cpu_table)
foreach(row IN LISTS _ptk_rows)
  string(REGEX REPLACE "^\nPTK_CPU_VARIANT\\(([a-z0-9_]+), *\"([^\"]*)\",[ \n]*\"([^\"]*)\"\\)$" "\\1" name "${row}")
  string(REGEX REPLACE "^\nPTK_CPU_VARIANT\\(([a-z0-9_]+), *\"([^\"]*)\",[ \n]*\"([^\"]*)\"\\)$" "\\2" flags "${row}")
  separate_arguments(ptk_cpu_flags_${name} UNIX_COMMAND "${flags}")
  list(APPEND ptk_cpu_table ${name})
endforeach()
if(NOT ptk_cpu_table)
  message(FATAL_ERROR "ptk: no PTK_CPU_VARIANT rows read from src/ptk/core/cpu_variants.def")
endif()

set(_ptk_variants_apply OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$"
   AND NOT PTK_NATIVE_ISA AND NOT "CUDA" IN_LIST Kokkos_DEVICES AND NOT "HIP" IN_LIST Kokkos_DEVICES)
  set(_ptk_variants_apply ON)
endif()
if(_ptk_variants_apply)
  set(PTK_CPU_VARIANTS "${ptk_cpu_table}" CACHE STRING "Host kernel ISA variants to build (src/ptk/core/cpu_variants.def)")
else()
  set(PTK_CPU_VARIANTS "" CACHE STRING "Host kernel ISA variants to build (src/ptk/core/cpu_variants.def)")
  if(PTK_CPU_VARIANTS AND NOT _ptk_variants_apply)
    message(STATUS "ptk: PTK_CPU_VARIANTS ignored: variants are for x86-64 host builds without PTK_NATIVE_ISA")
  endif()
  set(PTK_CPU_VARIANTS "")
endif()
foreach(v IN LISTS PTK_CPU_VARIANTS)
  if(NOT v IN_LIST ptk_cpu_table)
    message(FATAL_ERROR "ptk: PTK_CPU_VARIANTS names '${v}'; cpu_variants.def has ${ptk_cpu_table}")
  endif()
endforeach()
# In the table's order, best first, whatever order the cache names them in.
set(_ptk_ordered)
foreach(v IN LISTS ptk_cpu_table)
  if(v IN_LIST PTK_CPU_VARIANTS)
    list(APPEND _ptk_ordered ${v})
  endif()
endforeach()
set(PTK_CPU_VARIANTS_ORDERED ${_ptk_ordered})

set(PTK_CPU_RUNNABLE)
if(PTK_CPU_VARIANTS_ORDERED)
  # Which variants this machine runs: cpu_features.hpp's own answer, from a probe compiled and run here.
  set(_ptk_probe ${CMAKE_BINARY_DIR}/ptk_cpu_probe.cpp)
  file(WRITE ${_ptk_probe} "#include <cstdio>\n#include \"ptk/core/cpu_features.hpp\"\nint main() {\n"
       "  const auto f = ptk::cpu::features();\n"
       "  for (const auto& v : ptk::cpu::variants()) if (ptk::cpu::missing(v, f).empty()) std::printf(\"%s;\", v.name);\n}\n")
  try_run(_ptk_run _ptk_compiled ${CMAKE_BINARY_DIR}/ptk_cpu_probe ${_ptk_probe}
          CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${PROJECT_SOURCE_DIR}/src" CXX_STANDARD 17
          RUN_OUTPUT_VARIABLE _ptk_here)
  foreach(v IN LISTS PTK_CPU_VARIANTS_ORDERED)
    if(_ptk_compiled AND "${_ptk_here}" MATCHES "(^|;)${v};")
      list(APPEND PTK_CPU_RUNNABLE ${v})
    endif()
  endforeach()
  list(GET PTK_CPU_VARIANTS_ORDERED -1 _ptk_lowest)
  set(_ptk_default ${_ptk_lowest})
  if(PTK_CPU_RUNNABLE)
    list(GET PTK_CPU_RUNNABLE 0 _ptk_default)
  endif()
  set(PTK_CPU_VARIANT "${_ptk_default}" CACHE STRING "The variant of this build tree's programs and libptk.a")
  if(NOT PTK_CPU_VARIANT IN_LIST PTK_CPU_VARIANTS_ORDERED)
    message(FATAL_ERROR "ptk: PTK_CPU_VARIANT is '${PTK_CPU_VARIANT}'; this build has ${PTK_CPU_VARIANTS_ORDERED}")
  endif()
  # Everything but the kernel units: the last variant's flags, less its vector-width preference.
  set(ptk_cpu_base_flags ${ptk_cpu_flags_${_ptk_lowest}})
  list(FILTER ptk_cpu_base_flags EXCLUDE REGEX "^-mprefer-vector-width=")
  add_compile_options(${ptk_cpu_base_flags})
  message(STATUS "ptk: CPU variants ${PTK_CPU_VARIANTS_ORDERED} (this machine runs: ${PTK_CPU_RUNNABLE}); "
                 "this tree's programs: ${PTK_CPU_VARIANT}; the rest compiled with ${ptk_cpu_base_flags}")
else()
  set(PTK_CPU_VARIANT "")
  if(PTK_NATIVE_ISA)
    # -march=native, and 512-bit vectors where it has AVX-512: g++ 12's tunings for Ice Lake, Sapphire Rapids and
    # Rocket Lake prefer 256, which halves the FMA width of the auto-vectorized micro-kernels.
    add_compile_options(-march=native)
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_FLAGS -march=native)
    check_cxx_source_compiles("#ifndef __AVX512F__\n#error no AVX-512\n#endif\nint main() {}" PTK_NATIVE_HAS_AVX512)
    unset(CMAKE_REQUIRED_FLAGS)
    if(PTK_NATIVE_HAS_AVX512)
      add_compile_options(-mprefer-vector-width=512)
    endif()
  endif()
endif()
