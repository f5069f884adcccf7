#!/usr/bin/env bash
# Compile TorchScript models for CUDA and run them without a GPU: the generated kernels.cu is built as host C++
# for the CUDA emulator (tests/cuda_emu), and `thunderc run --expect` goes through the real runtime with the
# fake driver, fake cuBLASLt and fake cuDNN of tests/runtime/fake_cuda (all on the host). The expected output
# is LibTorch's on a seeded input (randn, seed 123, shape from the model's thunderc.json).
#
#   bash scripts/cuda_emulate_models.sh [--flags "--device cuda"] [--rtol 1e-4] [--atol 1e-4] [--atol-of-max]
#                                       DIR|MODEL.pt ...
#
# --atol-of-max: atol is that fraction of the largest |expected| value of each model (for low precisions, where
# an output's error scales with the output's magnitude). With --precision bf16 in the flags, the table also
# shows how far PyTorch's own CPU autocast (torch.autocast("cpu", torch.bfloat16)) is from the float32
# output: the yardstick for thunderc's difference.
#
# DIR: every *.pt in it (e.g. the output of scripts/make_real_models.py). Needs a build (bash scripts/build.sh;
# the fake libraries are built with the tests) and Debian's python3-torch for the expected outputs.
# Prints one line per model and a Markdown table at the end (library calls, kernels, max abs difference).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
flags="--device cuda"
rtol=1e-4
atol=1e-4
atol_of_max=0
models=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --flags) flags=$2; shift 2 ;;
    --rtol) rtol=$2; shift 2 ;;
    --atol) atol=$2; shift 2 ;;
    --atol-of-max) atol_of_max=1; shift ;;
    -h|--help) sed -n 2,18p "$0"; exit 0 ;;
    *) if [[ -d $1 ]]; then models+=("$1"/*.pt); else models+=("$1"); fi; shift ;;
  esac
done
[[ ${#models[@]} -gt 0 ]] || { echo "usage: $0 [--flags FLAGS] DIR|MODEL.pt ..." >&2; exit 2; }
py=${THUNDERC_PYTHON:-/usr/bin/python3}  # Debian's python3-torch (LibTorch 1.13, as thunderc links)
tc=$root/build/bin/thunderc
fake=$root/build/tests/runtime/fake_cuda
for f in "$tc" "$fake/libcuda.so.1" "$fake/libcublasLt.so.13" "$fake/libcudnn.so.9"; do
  [[ -e $f ]] || { echo "$0: $f is missing; build first (bash scripts/build.sh, which builds the tests)" >&2; exit 1; }
done
work=${THUNDERC_EMULATE_DIR:-$root/out/cuda-emulate}
mkdir -p "$work"
rows=()
failed=0
for model in "${models[@]}"; do
  name=$(basename "$model" .pt)
  dir=$work/$name
  rm -rf "$dir" && mkdir -p "$dir"
  # Seeded input and LibTorch's output.
  autocast=0
  [[ " $flags " == *" --precision bf16 "* ]] && autocast=1
  "$py" - "$model" "$dir" "$autocast" <<'EOF'
import json, sys
import numpy as np
import torch
torch.set_num_threads(1)
path, out, autocast = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
extra = {"thunderc.json": ""}
m = torch.jit.load(path, _extra_files=extra).eval()
shape = json.loads(extra["thunderc.json"])["inputs"][0]["shape"]
x = torch.randn(*shape, generator=torch.Generator().manual_seed(123), dtype=torch.float32)
with torch.no_grad():
    y = m(x)
np.save(f"{out}/input.npy", x.numpy())
np.save(f"{out}/expected.npy", y.float().contiguous().numpy())
with open(f"{out}/expected_max", "w") as f:
    f.write("%.3g" % float(y.abs().max()))
if autocast:
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        z = m(x).float()
    with open(f"{out}/autocast_diff", "w") as f:
        f.write("%.3g" % float((z - y.float()).abs().max()))
EOF
  model_atol=$atol
  ((atol_of_max)) && model_atol=$("$py" -c "print('%.3g' % ($atol * $(cat "$dir/expected_max")))")
  # shellcheck disable=SC2086
  if ! "$tc" "$model" -o "$dir/model.so" --keep-sources "$dir/src" $flags > "$dir/compile.log" 2>&1; then
    echo "$name: COMPILE FAILED"; tail -5 "$dir/compile.log"; failed=1; continue
  fi
  if ! c++ -std=c++17 -O1 -shared -fPIC -DTHUNDERC_CUDA_EMULATION -I"$root/tests/cuda_emu/include" -x c++ \
      "$dir/src/kernels.cu" -o "$dir/kernels_emu.so" > "$dir/emu_build.log" 2>&1; then
    echo "$name: EMULATED KERNELS DO NOT BUILD"; head -20 "$dir/emu_build.log"; failed=1; continue
  fi
  if LD_LIBRARY_PATH=$fake THUNDERC_FAKE_CUDA_KERNELS=$dir/kernels_emu.so THUNDERC_NUM_THREADS=1 \
      "$tc" run "$dir/model.so" "$dir/input.npy" --expect "$dir/expected.npy" --rtol "$rtol" --atol "$model_atol" \
      --output-dir "$dir/out" > "$dir/run.log" 2>&1; then
    status=match
  else
    status=MISMATCH; failed=1
  fi
  read -r calls kernels execs < <("$py" - "$dir/model.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
v = m["variants"][0]
libs = {}
for c in v["cuda"].get("library_calls", []):
    libs[c["library"]] = libs.get(c["library"], 0) + 1
calls = "+".join(f"{k}:{n}" for k, n in sorted(libs.items())) or "0"
execs = ",".join(f"{k}:{n}" for k, n in sorted(v["executors"].items()))
print(calls, len(v["cuda"]["kernels"]), execs)
EOF
)
  diff=$(grep -o "max abs diff [0-9.e+-]*" "$dir/run.log" | head -1 | awk '{print $4}')
  [[ -z $diff ]] && diff=$(grep -o "largest difference [0-9.e+-]*" "$dir/run.log" | head -1 | awk '{print $3}')
  max=$(cat "$dir/expected_max")
  ref=$(cat "$dir/autocast_diff" 2>/dev/null || echo "")
  echo "$name: $status (executors $execs; library calls $calls; kernels $kernels; max abs diff ${diff:-?}; max |expected| $max${ref:+; PyTorch bf16 autocast diff $ref}; atol $model_atol)"
  [[ $status == match ]] || tail -5 "$dir/run.log"
  rows+=("| $name | $execs | $calls | $kernels | $max | ${diff:-?} |${ref:+ $ref |} $status |")
done
echo
echo "flags: $flags; rtol $rtol, atol $atol$( ((atol_of_max)) && echo " x max |expected|")"
if [[ " $flags " == *" --precision bf16 "* ]]; then
  echo "| model | executors (operations) | library calls | kernels | max abs expected | max abs diff | PyTorch bf16 autocast diff | result |"
  echo "|---|---|---|---|---|---|---|---|"
else
  echo "| model | executors (operations) | library calls | kernels | max abs expected | max abs diff | result |"
  echo "|---|---|---|---|---|---|---|"
fi
printf '%s\n' "${rows[@]}"
exit $failed
