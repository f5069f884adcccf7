#!/usr/bin/env bash
# Install the Debian 12 packages thunderc needs to build and test.
#
#   bash scripts/install-deps.sh            # build + test dependencies
#   bash scripts/install-deps.sh --samples  # also Debian's PyTorch, to regenerate samples/
#   bash scripts/install-deps.sh --sanitize # also GCC's sanitizer runtimes (scripts/test.sh --sanitize)
#   bash scripts/install-deps.sh --fuzz     # also clang 14 and its libFuzzer/sanitizer runtimes (scripts/fuzz.sh)
#
# Idempotent and silent when everything is already present: only the missing
# packages are installed, and `apt-get update` runs only when something is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(build-essential cmake libtorch-dev libcli11-dev nlohmann-json3-dev
          doctest-dev libdlpack-dev libopenblas-dev libopenblas0-openmp libdnnl-dev
          # tests of --emit-build (runs the build.ninja), the installed package (pkg-config), examine --dot
          ninja-build pkg-config graphviz
          # the Python package's tests (tests/python): Debian's numpy and torch, and an offline pip install
          python3-numpy python3-torch python3-venv python3-pip python3-setuptools python3-wheel)

for arg in "$@"; do
  case "$arg" in
    --samples) packages+=(python3-torch python3-torchvision) ;;
    # GCC 12's ASan, UBSan and TSan runtimes (build-essential usually brings the first two already).
    --sanitize) packages+=(libasan8 libubsan1 libtsan2) ;;
    # clang 14 with libclang_rt.fuzzer / asan / ubsan (libclang-rt-14-dev).
    --fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "install-deps.sh: error: $*" >&2; exit 1; }

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found; this script targets Debian 12"

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

if ((${#missing[@]})); then
  echo "install-deps.sh: installing missing packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq || die "apt-get update failed"
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install failed for: ${missing[*]}"
  for p in "${missing[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true) == installed ]] \
      || die "package '$p' is still not installed"
  done
fi

# Select OpenBLAS, built for OpenMP, as libopenblas.so.0, libblas.so.3 and liblapack.so.3.
# - LibTorch (and so the benchmarks' LibTorch baseline) uses whatever libblas.so.3 points to; with the
#   reference BLAS it would be several times slower than usual, an unfair comparison.
# - thunderc's generated kernels use OpenMP; OpenBLAS's OpenMP build shares that thread pool, where the
#   pthread build's workers and OpenMP's spinning workers compete for the cores (measured on 2 cores:
#   cnn at batch 16, 2 threads, 1.46 ms with the pthread build, 0.95 ms with the OpenMP build).
for lib in libopenblas.so.0 libblas.so.3 liblapack.so.3; do
  for alt in /var/lib/dpkg/alternatives/"$lib"-*; do
    [[ -e "$alt" ]] || continue
    name=$(basename "$alt")
    want=$(update-alternatives --list "$name" 2>/dev/null | grep '/openblas-openmp/' | head -n1 || true)
    [[ -n "$want" ]] || want=$(update-alternatives --list "$name" 2>/dev/null | grep '/openblas' | head -n1 || true)
    [[ -n "$want" ]] || continue
    current=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p')
    if [[ "$current" != "$want" ]]; then
      echo "install-deps.sh: selecting $want for $name"
      as_root update-alternatives --quiet --set "$name" "$want" \
        || die "update-alternatives --set $name $want failed"
    fi
  done
done
