#!/usr/bin/env bash
# Installs what a ptk preset needs on Debian 12 and builds Kokkos + Kokkos Kernels for it.
#
#   scripts/bootstrap.sh [cpu|cpu-portable|cpu-native|cpu-serial|debug|debug-kokkos3|cpu-kokkos4|cuda|cuda-kokkos3|hip]
#                                                                                        (default: cpu)
#
# Idempotent: a second run that finds the packages and the Kokkos install does nothing.
# Each preset names a Kokkos version and a flavour (the CMake presets' PTK_KOKKOS_VERSION and
# PTK_KOKKOS_FLAVOR); Kokkos is installed into ${PTK_CACHE:-$HOME/.cache/ptk}/kokkos-<version>/
# <flavour>, outside any build tree, where the CMake presets look for it.
#   - Kokkos 3.4.01 (cpu, cpu-portable, cpu-serial, debug-kokkos3, cuda-kokkos3, hip) comes from Debian's
#     `trilinos` source package (apt-get source).
#   - Kokkos 4.6.01 (debug, cpu-kokkos4, cuda) is built from release sources: PTK_KOKKOS_SOURCE=DIR, a
#     folder holding kokkos-4.6.01.tar.gz and kokkos-kernels-4.6.01.tar.gz (or the two extracted
#     trees kokkos-4.6.01/ and kokkos-kernels-4.6.01/); default ../shared/kokkos beside the repo.
# If Kokkos_ROOT (and KokkosKernels_ROOT) are set, nothing is built: CMake uses that install
# instead. Run it as root or as a user with sudo (only apt runs through sudo).
set -euo pipefail

preset=${1:-cpu}
case "$preset" in
  cpu | cpu-portable | cpu-serial) kokkos_version=3.4.01 flavour=$preset ;;
  cpu-native) kokkos_version=3.4.01 flavour=cpu ;;  # ptk's own units -march=native; Kokkos the cpu preset's
  debug) kokkos_version=4.6.01 flavour=debug ;;
  debug-kokkos3) kokkos_version=3.4.01 flavour=debug ;;
  cuda-kokkos3) kokkos_version=3.4.01 flavour=cuda ;;
  hip) kokkos_version=3.4.01 flavour=hip ;;
  cpu-kokkos4) kokkos_version=4.6.01 flavour=openmp ;;
  cuda) kokkos_version=4.6.01 flavour=cuda ;;
  *) echo "bootstrap: unknown preset '$preset' (expected cpu, cpu-portable, cpu-native, cpu-serial, debug, debug-kokkos3, cpu-kokkos4, cuda, cuda-kokkos3 or hip)" >&2; exit 2 ;;
esac
kokkos_major=${kokkos_version%%.*}

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${PTK_CACHE:-$HOME/.cache/ptk}
prefix=$cache/kokkos-$kokkos_version/$flavour
if [ "$kokkos_version" = 3.4.01 ]; then
  src=$cache/src                       # Debian's trilinos: packages/kokkos and packages/kokkos-kernels
else
  src=$cache/src-$kokkos_version
  kokkos_source=${PTK_KOKKOS_SOURCE:-$root/../shared/kokkos}
fi
jobs=${PTK_JOBS:-$(nproc)}
log() { printf '[bootstrap %s] %s\n' "$preset" "$*"; }

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "bootstrap: needs root or sudo to install Debian packages" >&2; exit 1
fi

# --- Debian packages ---------------------------------------------------------------------------
apt_options=()
packages=(cmake ninja-build ccache g++ make dpkg-dev libgtest-dev libbenchmark-dev libopenblas-dev
          libdnnl-dev python3 python3-matplotlib nlohmann-json3-dev zlib1g-dev libcli11-dev
          libopenmpi-dev openmpi-bin libpcre2-dev libsentencepiece-dev sentencepiece python3-sentencepiece
          clang libclang-rt-14-dev python3-torch)
case "$preset" in
  # Without the toolkit's recommends (nsight-compute, nsight-systems, the visual profiler, cuda-gdb, the docs: over
  # 1 GB): a build needs nvcc and the libraries alone.
  cuda | cuda-kokkos3) packages+=(nvidia-cuda-toolkit g++-11) apt_options=(--no-install-recommends) ;;
  hip) packages+=(hipcc libamdhip64-dev rocm-device-libs) ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done

# The release CPU flavours are compiled for baseline x86-64: ptk's host kernels, where the time goes, come in ISA
# variants of their own (cmake/cpu_variants.cmake) and inline what they use of Kokkos, and a backend module of any
# variant links this one Kokkos. The debug flavour keeps -march=native, as the debug preset does.
kokkos_config() {
  # Position-independent: a preset links Kokkos into its backend module, a shared object (docs/design.md,
  # "Backends chosen at run time").
  local common=(-G Ninja -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF -DKokkos_ENABLE_SERIAL=ON -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
  local native=-DCMAKE_CXX_FLAGS=-march=native
  case "$flavour" in
    cpu) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_OPENMP=ON" ;;
    cpu-portable) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_OPENMP=ON" ;;
    cpu-serial) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release" ;;
    # openmp (cpu-kokkos4): OpenMP alone. Kokkos 3.4's cpu preset runs every kernel on Serial; Kokkos 4's Serial
    # is compiled by the cuda preset (its host space), so a third set of Serial instances would only add build time.
    openmp) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=OFF" ;;
    # debug: OpenMP alone (Serial off, later -D wins): the sanitized build compiles and runs each kernel for OpenMP
    # with the host and the GPU tuning; the release builds run Serial (docs/testing.md).
    debug) echo "${common[@]} -DCMAKE_BUILD_TYPE=Debug -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=OFF -DKokkos_ENABLE_DEBUG=ON -DKokkos_ENABLE_DEBUG_BOUNDS_CHECK=ON $native" ;;
    # Kokkos 3.4 has no Hopper option: Ampere sm_80 code + PTX. 4.x emits sm_90 (H100) directly.
    # The -arch flag keeps nvcc_wrapper's old default arch out of CMake's compiler check.
    cuda) if [ "$kokkos_major" -ge 4 ]; then
            echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_CUDA=ON -DKokkos_ARCH_HOPPER90=ON -DCMAKE_CXX_FLAGS=-arch=sm_90"
          else
            echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_AMPERE80=ON -DCMAKE_CXX_FLAGS=-arch=sm_80"
          fi ;;
    hip) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_HIP=ON -DKokkos_ARCH_VEGA908=ON -DCMAKE_CXX_FLAGS=--offload-arch=gfx90a" ;;
  esac
}

kokkos_ready() {
  [ -n "${Kokkos_ROOT:-}" ] && return 0
  [ -f "$prefix/.ptk-stamp" ] && [ "$(cat "$prefix/.ptk-stamp")" = "$(kokkos_config)" ]
}

# apt entries this project needs beyond a stock Debian 12 image: the deb-src lines for `main`
# (apt-get source trilinos) and the contrib/non-free components (CUDA). They reuse the URI and
# keyring of the machine's own Debian entry, so no host is named here.
add_apt_sources() {
  local list=/etc/apt/sources.list.d/ptk.sources uri keyring codename
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk -v s="$codename" '/^URIs:/ {u=$2} /^Suites:/ {for (i=2;i<=NF;i++) if ($i==s) f=1}
          /^$/ {if (f && u) {print u; exit} f=0} END {if (f && u) print u}' /etc/apt/sources.list.d/debian.sources | head -n1)
    keyring=$(awk '/^Signed-By:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  else
    uri=$(awk -v s="$codename" '$1=="deb" {for (i=2;i<=NF;i++) if ($i==s) {print $(i-1); exit}}' /etc/apt/sources.list)
  fi
  keyring=${keyring:-/usr/share/keyrings/debian-archive-keyring.gpg}
  [ -n "$uri" ] || { echo "bootstrap: no Debian '$codename' entry found in the apt sources" >&2; exit 1; }
  log "adding deb-src main and contrib/non-free for $codename to $list"
  "${sudo[@]}" tee "$list" >/dev/null <<EOF
Types: deb-src
URIs: $uri
Suites: $codename
Components: main
Signed-By: $keyring

Types: deb
URIs: $uri
Suites: $codename $codename-updates
Components: contrib non-free
Signed-By: $keyring
EOF
}

need_source=0
[ "$kokkos_version" = 3.4.01 ] && ! kokkos_ready && [ ! -d "$src/kokkos" ] && need_source=1
if [ ${#missing[@]} -gt 0 ] || [ $need_source -eq 1 ]; then
  [ -f /etc/apt/sources.list.d/ptk.sources ] || add_apt_sources
  log "apt-get update"
  "${sudo[@]}" apt-get update -q >/dev/null
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${apt_options[@]}" "${missing[@]}"
fi

# --- Kokkos and Kokkos Kernels -----------------------------------------------------------------
if [ -n "${Kokkos_ROOT:-}" ]; then
  log "Kokkos_ROOT=$Kokkos_ROOT is set: using that install, building nothing"
  [ -n "${KokkosKernels_ROOT:-}" ] || log "note: KokkosKernels_ROOT is not set; CMake will search Kokkos_ROOT and the default paths"
  exit 0
fi
if kokkos_ready; then
  log "Kokkos $kokkos_version already installed in $prefix"
  exit 0
fi

if [ "$kokkos_version" != 3.4.01 ] && [ ! -d "$src/kokkos" ]; then
  # Release sources: the two tarballs (or trees) in PTK_KOKKOS_SOURCE, checked for their version.
  rm -rf "$src.tmp" && mkdir -p "$src.tmp"
  for part in kokkos kokkos-kernels; do
    if [ -d "$kokkos_source/$part-$kokkos_version" ]; then
      log "copying $kokkos_source/$part-$kokkos_version"
      cp -a "$kokkos_source/$part-$kokkos_version" "$src.tmp/$part"
    elif [ -f "$kokkos_source/$part-$kokkos_version.tar.gz" ]; then
      log "extracting $kokkos_source/$part-$kokkos_version.tar.gz"
      mkdir -p "$src.tmp/$part"
      tar -xzf "$kokkos_source/$part-$kokkos_version.tar.gz" -C "$src.tmp/$part" --strip-components=1
    else
      echo "bootstrap: preset $preset needs Kokkos $kokkos_version release sources: set PTK_KOKKOS_SOURCE to a folder" \
           "holding $part-$kokkos_version.tar.gz (or the extracted $part-$kokkos_version/); looked in $kokkos_source" >&2
      exit 1
    fi
  done
  IFS=. read -r want_major want_minor want_patch <<<"$kokkos_version"
  grep -q "set(Kokkos_VERSION_MAJOR $want_major)" "$src.tmp/kokkos/CMakeLists.txt" &&
    grep -q "set(Kokkos_VERSION_MINOR $want_minor)" "$src.tmp/kokkos/CMakeLists.txt" &&
    grep -q "set(Kokkos_VERSION_PATCH $((10#$want_patch)))" "$src.tmp/kokkos/CMakeLists.txt" ||
    { echo "bootstrap: the sources in $kokkos_source are not Kokkos $kokkos_version" >&2; exit 1; }
  rm -rf "$src" && mv "$src.tmp" "$src"
fi

if [ ! -d "$src/kokkos" ]; then
  log "fetching Kokkos $kokkos_version from Debian's trilinos source package"
  rm -rf "$cache/src.tmp" && mkdir -p "$cache/src.tmp"
  (cd "$cache/src.tmp" && apt-get source -d -q trilinos >/dev/null)
  log "extracting packages/kokkos and packages/kokkos-kernels"
  tar -xzf "$cache"/src.tmp/trilinos_*.orig.tar.gz -C "$cache/src.tmp" --wildcards \
    '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
  grep -q "Kokkos_VERSION_MINOR 4" "$cache"/src.tmp/*/packages/kokkos/CMakeLists.txt ||
    { echo "bootstrap: the trilinos source does not carry Kokkos $kokkos_version" >&2; exit 1; }
  rm -rf "$cache/src" && mkdir -p "$cache/src"
  mv "$cache"/src.tmp/*/packages/kokkos "$cache"/src.tmp/*/packages/kokkos-kernels "$cache/src/"
  rm -rf "$cache/src.tmp"
fi

compiler=(-DCMAKE_CXX_COMPILER=g++)
kk_tpls=(-DKokkosKernels_ENABLE_TPL_BLAS=ON -DBLAS_LIBRARIES=openblas)
[ "$kokkos_major" -ge 4 ] && kk_tpls+=(-DKokkosKernels_ENABLE_TPL_CUSOLVER=OFF)  # else 4.x stops without cuBLAS + cuSPARSE
env_vars=()
case "$flavour" in
  cuda)
    # Debian's CUDA 11.8 in /usr; the CUDA 13 nvcc in /usr/local/cuda builds neither Kokkos 3.4
    # nor 4.6, and CUDA 11.8 rejects g++ 12's libstdc++ headers.
    env_vars=(PATH=/usr/sbin:/usr/bin:/sbin:/bin CUDA_ROOT=/usr NVCC_WRAPPER_DEFAULT_COMPILER=g++-11)
    compiler=(-DCMAKE_CXX_COMPILER="$src/kokkos/bin/nvcc_wrapper")
    # 3.4 (sm_80) links cuBLAS; the 4.6 Hopper build has every CUDA TPL off, so its binaries need
    # only libcudart and can be carried to a GPU machine without the 575 MB cuBLAS 11.
    if [ "$kokkos_major" -ge 4 ]; then
      kk_tpls+=(-DKokkosKernels_ENABLE_TPL_CUBLAS=OFF -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF)
    else
      kk_tpls+=(-DKokkosKernels_ENABLE_TPL_CUBLAS=ON -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF)
    fi ;;
  hip)
    env_vars=(HIP_PLATFORM=amd)
    compiler=(-DCMAKE_CXX_COMPILER=hipcc) ;;
esac

build=$cache/build/kokkos-$kokkos_version-$flavour
rm -rf "$build" "$prefix" && mkdir -p "$build"
read -r -a config <<<"$(kokkos_config)"
start=$SECONDS
log "configuring Kokkos ($(kokkos_config))"
env "${env_vars[@]}" cmake -S "$src/kokkos" -B "$build/kokkos" "${config[@]}" "${compiler[@]}" \
  -DCMAKE_INSTALL_PREFIX="$prefix" >"$build.kokkos.log" 2>&1 ||
  { tail -n 30 "$build.kokkos.log"; exit 1; }
kokkos_start=$SECONDS
log "building Kokkos (log: $build.kokkos.log)"
env "${env_vars[@]}" cmake --build "$build/kokkos" --target install -j "$jobs" >>"$build.kokkos.log" 2>&1 ||
  { tail -n 30 "$build.kokkos.log"; exit 1; }

log "Kokkos built and installed ($((SECONDS - kokkos_start)) s)"
log "configuring Kokkos Kernels (no ETI; TPLs: ${kk_tpls[*]})"
# F77_BLAS_MANGLE given so that Kokkos Kernels does not probe a Fortran compiler; LAPACK is unused.
env "${env_vars[@]}" cmake -S "$src/kokkos-kernels" -B "$build/kokkos-kernels" "${config[@]}" "${compiler[@]}" \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" \
  -DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF \
  -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF -DKokkosKernels_INST_COMPLEX_FLOAT=OFF \
  -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF \
  -DKokkosKernels_INST_LAYOUTLEFT=OFF -DKokkosKernels_INST_LAYOUTRIGHT=OFF \
  -DKokkosKernels_ENABLE_TPL_LAPACK=OFF "-DF77_BLAS_MANGLE=(name,NAME) name ## _" "${kk_tpls[@]}" \
  >"$build.kokkos-kernels.log" 2>&1 || { tail -n 30 "$build.kokkos-kernels.log"; exit 1; }
log "building Kokkos Kernels (log: $build.kokkos-kernels.log)"
env "${env_vars[@]}" cmake --build "$build/kokkos-kernels" --target install -j "$jobs" >>"$build.kokkos-kernels.log" 2>&1 ||
  { tail -n 30 "$build.kokkos-kernels.log"; exit 1; }

kokkos_config >"$prefix/.ptk-stamp"
rm -rf "$build"
log "Kokkos $kokkos_version + Kokkos Kernels installed in $prefix ($((SECONDS - start)) s)"
