#!/usr/bin/env bash
# Benchmarks every sample against TorchScript (frozen, run through LibTorch in the same process by
# `thunderc bench --compare`), at batch 1 and a larger batch, at 1 thread and at all cores. Prints a
# markdown table of medians and speedups (TorchScript median / thunderc median) and the geometric mean.
#
#   bash scripts/bench.sh [--iterations N] [--executors LIST]      (build first: bash scripts/build.sh)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

iterations=200
executors=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --iterations) iterations=$2; shift 2 ;;
    --executors) executors=(--executors "$2"); shift 2 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
thunderc=${THUNDERC:-build/bin/thunderc}
[[ -x $thunderc ]] || { echo "bench.sh: $thunderc not built (run bash scripts/build.sh)" >&2; exit 1; }
cores=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# sample: batch-1 shape, larger-batch shape
samples=(
  "mlp x=1x64 x=64x64"
  "cnn x=1x3x32x32 x=16x3x32x32"
  "gpt_block x=1x16x64 x=8x16x64"
)

echo "| sample | shape | threads | thunderc median ms | TorchScript median ms | speedup | max abs diff |"
echo "|---|---|---|---|---|---|---|"
ratios=()
for entry in "${samples[@]}"; do
  read -r name small large <<<"$entry"
  "$thunderc" "samples/$name.pt" -o "$out/$name.so" --shapes "$small" --shapes "$large" "${executors[@]}" >/dev/null
  for shape in "$small" "$large"; do
    for threads in 1 "$cores"; do
      json=$("$thunderc" bench "$out/$name.so" --shapes "$shape" --threads "$threads" --warmup 20 \
        --iterations "$iterations" --compare "samples/$name.pt" --json)
      row=$(python3 -c '
import json, sys
j = json.loads(sys.argv[1])
print("%.3f %.3f %.2f %.1e" % (j["median_ms"], j["torchscript_median_ms"], j["speedup"], j["max_abs_diff"]))' "$json")
      read -r ms ts speedup diff <<<"$row"
      ratios+=("$speedup")
      echo "| $name | ${shape#x=} | $threads | $ms | $ts | ${speedup}x | $diff |"
    done
  done
done
python3 -c '
import math, sys
r = [float(x) for x in sys.argv[1:]]
print(f"\ngeomean speedup over {len(r)} runs: {math.exp(sum(map(math.log, r)) / len(r)):.2f}x (min {min(r):.2f}x)")' "${ratios[@]}"
