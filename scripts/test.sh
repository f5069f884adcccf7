#!/usr/bin/env bash
# Build (dependencies included), then run the test suite.
#
#   bash scripts/test.sh [extra ctest args, e.g. -R runtime -V]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/build.sh
ctest --test-dir build --output-on-failure -j2 "$@"
