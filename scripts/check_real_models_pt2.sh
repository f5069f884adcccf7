#!/usr/bin/env bash
# Compiles the real models exported as .pt2 (scripts/make_real_models.py --pt2, not committed) with no --shapes
# and checks each against PyTorch's own output (<name>.expected.npy, written at export) with `thunderc run
# --expect`: no Python and no LibTorch here, so it also checks a -DTHUNDERC_WITH_LIBTORCH=OFF build
# (THUNDERC=build-nolt/bin/thunderc). Prints a markdown table; exits non-zero if a model fails to compile or
# differs by more than --atol (default 1e-3) anywhere. Models exported with a dynamic batch
# (make_real_models.py --pt2 --dynamic-batch N) compile to one symbolic variant and are also checked at every
# batch size that has a <name>.input.b<B>.npy.
#
#   VENV/bin/python scripts/make_real_models.py --pt2 /tmp/thunderc-real-models-pt2   # once
#   bash scripts/check_real_models_pt2.sh [DIR] [--atol X] [-- extra compile flags]
#   THUNDERC=build-nolt/bin/thunderc bash scripts/check_real_models_pt2.sh [DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=/tmp/thunderc-real-models-pt2
atol=1e-3
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --atol) atol=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) dir=$1; shift ;;
  esac
done
thunderc=${THUNDERC:-build/bin/thunderc}
[[ -x $thunderc ]] || { echo "check_real_models_pt2.sh: $thunderc not built (bash scripts/build.sh)" >&2; exit 1; }
compgen -G "$dir/*.pt2" >/dev/null ||
  { echo "check_real_models_pt2.sh: no .pt2 models in $dir (run scripts/make_real_models.py --pt2 $dir)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

failed=0
echo "| model | compile s | executors (ops) | max abs diff vs PyTorch |"
echo "|---|---|---|---|"
# Runs the model on $2 and checks it against $3; prints the max abs diff, or the error and returns 1.
check() {
  local run
  if run=$("$thunderc" run "$1" "$2" --expect "$3" --rtol 0 --atol "$atol" --output-dir "$out" 2>&1); then
    grep -o 'max abs diff [^,)]*' <<<"$run" | head -n 1 | sed 's/max abs diff //'
  else
    echo "$(tail -n 1 <<<"$run" | tr '|' ' ') (over atol $atol)"
    return 1
  fi
}
for model in "$dir"/*.pt2; do
  name=$(basename "$model" .pt2)
  start=$(date +%s.%N)
  if ! log=$("$thunderc" "$model" -o "$out/$name.so" "${extra[@]}" 2>&1); then
    echo "| $name | failed: $(head -n 3 <<<"$log" | tr '\n|' '  ') | | |"
    failed=1
    continue
  fi
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  # The manifest's executor counts, e.g. {"blas": 21, "cpp": 16}, as "blas 21, cpp 16".
  counts=$(tr -d '\n ' <"$out/$name.json" | grep -o '"executors":{[^}]*}' | head -n 1 |
           sed -e 's/"executors":{//' -e 's/}//' -e 's/"\([a-z]*\)":\([0-9]*\)/\1 \2/g' -e 's/,/, /g')
  # "symbolic sizes: s77 in 1..8 (read from ...)" -> "s77 in 1..8"
  symbolic=$(grep -o 'symbolic sizes: [^(]*' <<<"$log" | head -n 1 | sed -e 's/symbolic sizes: //' -e 's/ *$//' || true)
  diffs=$(check "$out/$name.so" "$dir/$name.input.npy" "$dir/$name.expected.npy") || failed=1
  for input in "$dir/$name".input.b*.npy; do
    [[ -e $input ]] || continue
    b=${input##*.input.b}; b=${b%.npy}
    d=$(check "$out/$name.so" "$input" "$dir/$name.expected.b$b.npy") || failed=1
    diffs+="; B=$b: $d"
  done
  echo "| $name${symbolic:+ ($symbolic)} | $seconds | $counts | $diffs |"
done
exit $failed
