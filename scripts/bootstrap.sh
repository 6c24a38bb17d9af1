#!/usr/bin/env bash
# Installs what a ptk preset needs on Debian 12 and builds Kokkos + Kokkos Kernels 3.4.01 for it.
#
#   scripts/bootstrap.sh [cpu|cpu-portable|cpu-serial|debug|cuda|hip]     (default: cpu)
#
# Idempotent: a second run that finds the packages and the Kokkos install does nothing.
# Kokkos comes from Debian's `trilinos` source package (apt-get source) and is installed into
# ${PTK_CACHE:-$HOME/.cache/ptk}/kokkos-3.4.01/<preset>, outside any build tree, where the CMake
# presets look for it. If Kokkos_ROOT (and KokkosKernels_ROOT) are set, nothing is built: CMake
# uses that install instead. Run it as root or as a user with sudo (only apt runs through sudo).
set -euo pipefail

preset=${1:-cpu}
case "$preset" in
  cpu | cpu-portable | cpu-serial | debug | cuda | hip) ;;
  *) echo "bootstrap: unknown preset '$preset' (expected cpu, cpu-portable, cpu-serial, debug, cuda or hip)" >&2; exit 2 ;;
esac

kokkos_version=3.4.01
cache=${PTK_CACHE:-$HOME/.cache/ptk}
prefix=$cache/kokkos-$kokkos_version/$preset
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
packages=(cmake ninja-build g++ make dpkg-dev libgtest-dev libbenchmark-dev libopenblas-dev
          libdnnl-dev python3 python3-matplotlib nlohmann-json3-dev zlib1g-dev)
case "$preset" in
  cuda) packages+=(nvidia-cuda-toolkit g++-11) ;;
  hip) packages+=(hipcc libamdhip64-dev rocm-device-libs) ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done

# The CPU flavours are compiled for this machine's instruction set (-march=native: AVX2/AVX-512
# where the CPU has them), as ptk itself is; cpu-portable targets baseline x86-64 for binaries
# that must run on other machines.
kokkos_config() {
  local common=(-G Ninja -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF -DKokkos_ENABLE_SERIAL=ON)
  local native=-DCMAKE_CXX_FLAGS=-march=native
  case "$preset" in
    cpu) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_OPENMP=ON $native" ;;
    cpu-portable) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_OPENMP=ON" ;;
    cpu-serial) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release $native" ;;
    debug) echo "${common[@]} -DCMAKE_BUILD_TYPE=Debug -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_DEBUG=ON -DKokkos_ENABLE_DEBUG_BOUNDS_CHECK=ON $native" ;;
    cuda) echo "${common[@]} -DCMAKE_BUILD_TYPE=Release -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_AMPERE80=ON -DCMAKE_CXX_FLAGS=-arch=sm_80" ;;
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
kokkos_ready || [ -d "$cache/src/kokkos" ] || need_source=1
if [ ${#missing[@]} -gt 0 ] || [ $need_source -eq 1 ]; then
  [ -f /etc/apt/sources.list.d/ptk.sources ] || add_apt_sources
  log "apt-get update"
  "${sudo[@]}" apt-get update -q >/dev/null
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
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

if [ ! -d "$cache/src/kokkos" ]; then
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
env_vars=()
case "$preset" in
  cuda)
    # Debian's CUDA 11.8 in /usr; the CUDA 13 nvcc in /usr/local/cuda cannot build Kokkos 3.4,
    # and CUDA 11.8 rejects g++ 12's libstdc++ headers.
    env_vars=(PATH=/usr/sbin:/usr/bin:/sbin:/bin CUDA_ROOT=/usr NVCC_WRAPPER_DEFAULT_COMPILER=g++-11)
    compiler=(-DCMAKE_CXX_COMPILER="$cache/src/kokkos/bin/nvcc_wrapper")
    kk_tpls+=(-DKokkosKernels_ENABLE_TPL_CUBLAS=ON -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF) ;;
  hip)
    env_vars=(HIP_PLATFORM=amd)
    compiler=(-DCMAKE_CXX_COMPILER=hipcc) ;;
esac

build=$cache/build/$preset
rm -rf "$build" "$prefix" && mkdir -p "$build"
read -r -a config <<<"$(kokkos_config)"
start=$SECONDS
log "configuring Kokkos ($(kokkos_config))"
env "${env_vars[@]}" cmake -S "$cache/src/kokkos" -B "$build/kokkos" "${config[@]}" "${compiler[@]}" \
  -DCMAKE_INSTALL_PREFIX="$prefix" >"$build.kokkos.log" 2>&1 ||
  { tail -n 30 "$build.kokkos.log"; exit 1; }
log "building Kokkos (log: $build.kokkos.log)"
env "${env_vars[@]}" cmake --build "$build/kokkos" --target install -j "$jobs" >>"$build.kokkos.log" 2>&1 ||
  { tail -n 30 "$build.kokkos.log"; exit 1; }

log "configuring Kokkos Kernels (no ETI; TPLs: ${kk_tpls[*]})"
# F77_BLAS_MANGLE given so that Kokkos Kernels does not probe a Fortran compiler; LAPACK is unused.
env "${env_vars[@]}" cmake -S "$cache/src/kokkos-kernels" -B "$build/kokkos-kernels" "${config[@]}" "${compiler[@]}" \
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
