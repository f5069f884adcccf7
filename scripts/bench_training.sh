#!/usr/bin/env bash
# Benchmarks training steps: every sample compiled with --autograd (and, when a directory of real models from
# scripts/make_real_models.py is given, each of those) against LibTorch autograd's training step on the same
# TorchScript module (eval mode, not frozen; `thunderc bench --compare` on a training .so), at 1 thread and at
# all cores. One step is forward_train + backward with output gradients of ones; LibTorch's is forward +
# torch::autograd::backward with the same seeds. Prints a markdown table of medians, speedups (LibTorch
# median / thunderc median), the output and gradient differences (max |diff| / max(1, max |LibTorch|) over
# every gradient), and the geometric mean. Token ids and masks come from the samples' .npy files.
#
#   bash scripts/bench_training.sh [--iterations N] [--real-models DIR] [--only NAME,...]   (build first)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

iterations=50
real=""
only=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --iterations) iterations=$2; shift 2 ;;
    --real-models) real=$2; shift 2 ;;
    --only) only=,$2,; shift 2 ;;
    *) echo "bench_training.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
thunderc=${THUNDERC:-build/bin/thunderc}
[[ -x $thunderc ]] || { echo "bench_training.sh: $thunderc not built (run bash scripts/build.sh)" >&2; exit 1; }
cores=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

models=()
for name in mlp cnn gpt_block encoder_layer bert_tiny distilbert_tiny gpt2_tiny; do models+=("samples/$name.pt"); done
if [[ -n $real ]]; then
  compgen -G "$real/*.pt" >/dev/null || { echo "bench_training.sh: no models in $real" >&2; exit 1; }
  for m in "$real"/*.pt; do [[ $m == *_fastpath.pt ]] || models+=("$m"); done
fi

echo "| model | threads | thunderc step ms | LibTorch step ms | speedup | outputs max abs diff | gradients max rel diff |"
echo "|---|---|---|---|---|---|---|"
ratios=()
for model in "${models[@]}"; do
  name=$(basename "$model" .pt)
  [[ -z $only || $only == *",$name,"* ]] || continue
  if ! log=$("$thunderc" "$model" --autograd -o "$out/$name.so" 2>&1); then
    echo "| $name | compile failed: $(head -n 2 <<<"$log" | tr '\n|' '  ') | | | | | |"
    continue
  fi
  # Token ids and attention masks from the sample's files (random integers are no mask, and miss padding_idx).
  inputs=()
  for input in input_ids attention_mask; do
    file=$(dirname "$model")/$name.$input.npy
    [[ -f $file ]] && inputs+=(--input "$input=$file")
  done
  for threads in 1 "$cores"; do
    json=$("$thunderc" bench "$out/$name.so" "${inputs[@]}" --threads "$threads" --warmup 5 \
      --iterations "$iterations" --compare "$model" --json)
    row=$(python3 -c '
import json, sys
j = json.loads(sys.argv[1])
g = j["max_rel_grad_diff"]
print("%.3f %.3f %.2f %.1e %s" % (j["median_ms"], j["torchscript_median_ms"], j["speedup"],
      j["max_abs_diff"] if j["max_abs_diff"] is not None else float("nan"), "nan" if g is None else "%.1e" % g))' "$json")
    read -r ms ts speedup diff gdiff <<<"$row"
    ratios+=("$speedup")
    echo "| $name | $threads | $ms | $ts | ${speedup}x | $diff | $gdiff |"
  done
done
python3 -c '
import math, sys
r = [float(x) for x in sys.argv[1:]]
print(f"\ngeomean speedup over {len(r)} runs: {math.exp(sum(map(math.log, r)) / len(r)):.2f}x (min {min(r):.2f}x)")' "${ratios[@]}"
