#!/usr/bin/env bash
# Install missing dependencies, then configure and build thunderc into build/.
#
#   bash scripts/build.sh [extra cmake configure args, e.g. -DCMAKE_PREFIX_PATH=/path/to/libtorch]
#   bash scripts/build.sh --libtorch-venv VENV [extra cmake args]   # LibTorch 2.x from PyPI, into build-torch2/
#
# --libtorch-venv builds against the LibTorch inside PyPI's torch wheel in VENV (created or completed first by
# scripts/pypi-torch-venv.sh), into build-torch2/ ($THUNDERC_TORCH2_BUILD_DIR overrides it): that thunderc loads
# TorchScript saved by torch 2.x (aten::rms_norm, aten::scaled_dot_product_attention), which Debian's LibTorch
# 1.13 cannot. Uses Ninja when it is installed, make otherwise. An already-configured build folder keeps its
# generator.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh

build_dir=build
if [[ "${1:-}" == --libtorch-venv ]]; then
  [[ $# -ge 2 ]] || { echo "build.sh: --libtorch-venv needs the venv's path" >&2; exit 2; }
  venv=$2
  shift 2
  bash scripts/pypi-torch-venv.sh "$venv"
  # The wheel's package folder is the prefix: torch/lib/libtorch.so is found before Debian's /usr/lib one.
  torch_dir=$(compgen -G "$venv/lib/python3*/site-packages/torch/share/cmake/Torch" | head -n 1 || true)
  [[ -n $torch_dir ]] || { echo "build.sh: no torch/share/cmake/Torch in $venv" >&2; exit 1; }
  build_dir=${THUNDERC_TORCH2_BUILD_DIR:-build-torch2}
  set -- "-DCMAKE_PREFIX_PATH=${torch_dir%/share/cmake/Torch}" "$@"
fi

generator=()
if [[ ! -f $build_dir/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi

cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j"$(nproc)"
