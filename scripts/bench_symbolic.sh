#!/usr/bin/env bash
# Symbolic variants against fixed shapes on the native executors: each sample is compiled once with
# --cache "symbolic values" (sizes read at run time) and once per size with fixed shapes (--executors
# cpp,blas --standalone both), and `thunderc bench` times both at every size with the same threads.
# Prints a markdown table of medians and the ratio fixed / symbolic (1.0 = as fast; below 1 = slower).
#
#   bash scripts/bench_symbolic.sh [--iterations N] [--threads N]      (build first: bash scripts/build.sh)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

iterations=200
threads=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --iterations) iterations=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "bench_symbolic.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
thunderc=${THUNDERC:-build/bin/thunderc}
[[ -x $thunderc ]] || { echo "bench_symbolic.sh: $thunderc not built (run bash scripts/build.sh)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
native=(--executors cpp,blas --standalone)

# model | symbolic --shapes | --dim | the input shape with S for the symbol | sizes
cases=(
  "samples/mlp_scripted.pt|x=Bx64|B=1:64|Sx64|1 7 64"
  "samples/cnn.pt|x=Bx3x32x32|B=1:16|Sx3x32x32|1 5 16"
  "samples/gpt_block.pt|x=1xTx64|T=2:16|1xSx64|2 9 16"
  "samples/pt2/dynamic_batch.pt2|||Sx12|1 7 16"
)

median() { sed -n 's/.*"median_ms": *\([0-9.e+-]*\).*/\1/p'; }

echo "| model | input | threads | fixed median ms | symbolic median ms | fixed / symbolic |"
echo "|---|---|---|---|---|---|"
for entry in "${cases[@]}"; do
  IFS='|' read -r model shapes dim pattern sizes <<<"$entry"
  name=$(basename "${model%.*}")
  if [[ -n $shapes ]]; then
    "$thunderc" "$model" -o "$out/$name-sym.so" "${native[@]}" --cache "symbolic values" --shapes "$shapes" --dim "$dim" >/dev/null
  else  # a .pt2 with a dynamic dimension: symbolic by default
    "$thunderc" "$model" -o "$out/$name-sym.so" "${native[@]}" >/dev/null
  fi
  for n in $sizes; do
    shape=${pattern//S/$n}
    "$thunderc" "$model" -o "$out/$name-$n.so" "${native[@]}" --shapes "x=$shape" >/dev/null
    fixed=$("$thunderc" bench "$out/$name-$n.so" --threads "$threads" --warmup 20 --iterations "$iterations" --json | median)
    sym=$("$thunderc" bench "$out/$name-sym.so" --shapes "x=$shape" --threads "$threads" --warmup 20 \
      --iterations "$iterations" --json | median)
    ratio=$(awk -v f="$fixed" -v s="$sym" 'BEGIN { printf "%.2f", f / s }')
    echo "| $name | $shape | $threads | $fixed | $sym | $ratio |"
  done
done
