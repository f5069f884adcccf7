#!/usr/bin/env bash
# Compiles real models (traced by scripts/make_real_models.py, not committed) with the default executors
# and compares each against TorchScript on the same random inputs and thread count (thunderc bench
# --compare). Prints a markdown table; exits non-zero if a model fails to compile or differs by more
# than --atol (default 1e-3) anywhere.
#
#   /usr/bin/python3 scripts/make_real_models.py            # once: writes /tmp/thunderc-real-models
#   bash scripts/check_real_models.sh [DIR] [--atol X] [--iterations N] [-- extra compile flags]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=/tmp/thunderc-real-models
atol=1e-3
iterations=20
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --atol) atol=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) dir=$1; shift ;;
  esac
done
thunderc=${THUNDERC:-build/bin/thunderc}
[[ -x $thunderc ]] || { echo "check_real_models.sh: $thunderc not built (bash scripts/build.sh)" >&2; exit 1; }
compgen -G "$dir/*.pt" >/dev/null || { echo "check_real_models.sh: no models in $dir (run scripts/make_real_models.py)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

failed=0
echo "| model | compile s | executors (ops) | thunderc median ms | TorchScript median ms | speedup | max abs diff |"
echo "|---|---|---|---|---|---|---|"
for model in "$dir"/*.pt; do
  name=$(basename "$model" .pt)
  start=$(date +%s.%N)
  if ! log=$("$thunderc" "$model" -o "$out/$name.so" "${extra[@]}" 2>&1); then
    echo "| $name | failed: $(head -n 3 <<<"$log" | tr '\n' ' ') | | | | | |"
    failed=1
    continue
  fi
  seconds=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")
  counts=$(python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["variants"][0]["executors"]
print(", ".join("%s %d" % kv for kv in sorted(v.items())))' "$out/$name.json")
  json=$("$thunderc" bench "$out/$name.so" --compare "$model" --warmup 3 --iterations "$iterations" --json)
  row=$(python3 -c '
import json, sys
j = json.loads(sys.argv[1]); atol = float(sys.argv[2])
d = j["max_abs_diff"]
ok = d is not None and d <= atol
print("%.2f %.2f %.2f %s %d" % (j["median_ms"], j["torchscript_median_ms"], j["speedup"], "nan" if d is None else "%.1e" % d, ok))' "$json" "$atol")
  read -r ms ts speedup diff ok <<<"$row"
  [[ $ok == 1 ]] || failed=1
  echo "| $name | $seconds | $counts | $ms | $ts | ${speedup}x | $diff$([[ $ok == 1 ]] || echo ' (over atol)') |"
done
exit $failed
