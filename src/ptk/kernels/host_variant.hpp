#pragma once
// Which CPU ISA variant of the host kernels a program holds (cmake/cpu_variants.cmake): its name in
// core/cpu_variants.def ("" in a build without variants: -march=native, a GPU build), and the widest vectors its
// kernel units were compiled for. Defined in the kernel objects themselves (host_variant.cpp is compiled with them),
// so a program reports the kernels it links, not the flags of the file that asks.
namespace ptk::kernels {
const char* host_variant();
int host_vector_bits();  // 512, 256, 128 (SSE2, NEON) or 0 (none known)
}  // namespace ptk::kernels
