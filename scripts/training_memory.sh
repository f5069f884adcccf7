#!/usr/bin/env bash
# Saved-tensor memory of a training step: every sample compiled with --autograd (and, with --real-models DIR, the
# real models of scripts/make_real_models.py) against LibTorch autograd's graph on the same module, in eval mode
# as scripts/bench_training.sh times it. Counts what each keeps between forward and backward, parameters and
# buffers excepted (scripts/saved_bytes.py says how); the min-cut's saving over saving everything the backward
# reads is shown too. Needs a Python with torch of the LibTorch thunderc links (PYTHON, default /usr/bin/python3).
#
#   bash scripts/training_memory.sh [--real-models DIR] [--only NAME,...]   (build first)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

real=""
only=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --real-models) real=$2; shift 2 ;;
    --only) only=,$2,; shift 2 ;;
    *) echo "training_memory.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
thunderc=${THUNDERC:-build/bin/thunderc}
python=${PYTHON:-/usr/bin/python3}
[[ -x $thunderc ]] || { echo "training_memory.sh: $thunderc not built (run bash scripts/build.sh)" >&2; exit 1; }
"$python" -c "import torch" 2>/dev/null || { echo "training_memory.sh: $python has no torch (apt-get install python3-torch)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

models=()
for name in mlp cnn gpt_block encoder_layer bert_tiny distilbert_tiny gpt2_tiny; do models+=("samples/$name.pt"); done
if [[ -n $real ]]; then
  compgen -G "$real/*.pt" >/dev/null || { echo "training_memory.sh: no models in $real" >&2; exit 1; }
  for m in "$real"/*.pt; do [[ $m == *_fastpath.pt ]] || models+=("$m"); done
fi

echo "| model | thunderc saved | LibTorch saved | thunderc / LibTorch |"
echo "|---|---|---|---|"
ratios=()
for model in "${models[@]}"; do
  name=$(basename "$model" .pt)
  [[ -z $only || $only == *",$name,"* ]] || continue
  if ! log=$("$thunderc" "$model" --autograd -o "$out/$name.so" 2>&1); then
    echo "| $name | compile failed: $(head -n 2 <<<"$log" | tr '\n|' '  ') | | |"
    continue
  fi
  read -r _ ours theirs < <("$python" scripts/saved_bytes.py "$model" "$out/$name.json" 2>/dev/null)
  ratio=$("$python" -c "import sys; print('%.2f' % (int(sys.argv[1]) / int(sys.argv[2])))" "$ours" "$theirs")
  ratios+=("$ratio")
  kib() { "$python" -c "import sys; print('%.1f KiB' % (int(sys.argv[1]) / 1024))" "$1"; }
  echo "| $name | $(kib "$ours") | $(kib "$theirs") | ${ratio}x |"
done
"$python" -c '
import math, sys
r = [float(x) for x in sys.argv[1:]]
print(f"\ngeomean thunderc / LibTorch saved bytes over {len(r)} models: {math.exp(sum(map(math.log, r)) / len(r)):.2f}x (max {max(r):.2f}x)")' "${ratios[@]}"
