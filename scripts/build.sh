#!/usr/bin/env bash
# Install missing dependencies, then configure and build thunderc into build/.
#
#   bash scripts/build.sh [extra cmake configure args, e.g. -DCMAKE_PREFIX_PATH=/path/to/libtorch]
#
# Uses Ninja when it is installed, make otherwise. An already-configured build/
# keeps its generator.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh

generator=()
if [[ ! -f build/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi

cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
