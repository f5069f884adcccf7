#!/usr/bin/env bash
# Build (dependencies included), then run thunderc's main job on a sample model.
#
#   bash scripts/demo.sh [MODEL.pt [COMPILE OPTIONS...]]   (default: samples/mlp.pt)
#
# COMPILE OPTIONS go to the compile step, e.g.
#   bash scripts/demo.sh samples/mlp_scripted.pt --shapes x=1x64
#
# THUNDERC=/path/to/thunderc overrides the binary (default: build/bin/thunderc).
#
set -euo pipefail
model=${1:+$(realpath -m -- "$1")}   # resolve a user-given path before leaving their cwd
cd "$(dirname "${BASH_SOURCE[0]}")/.."

model=${model:-samples/mlp.pt}
compile_opts=("${@:2}")
name=$(basename "$model" .pt)
thunderc=${THUNDERC:-build/bin/thunderc}
[[ -f "$model" ]] || { echo "demo.sh: error: no such model: $model" >&2; exit 1; }

bash scripts/build.sh

[[ -x "$thunderc" ]] || { echo "demo.sh: error: $thunderc was not built" >&2; exit 1; }

step() { echo; echo "+ $*"; "$@"; }

# 1. What the frontend sees in the model, and which executor claims each operation.
step "$thunderc" examine "$model" "${compile_opts[@]}"

# 2. Compile to a self-contained shared library + manifest.
mkdir -p out
step "$thunderc" "$model" -o "out/$name.so" "${compile_opts[@]}"
step "$thunderc" inspect "out/$name.so"

# 3. Run it through the runtime on the sample's example input and check LibTorch's output for it
#    (samples/NAME.input.npy and NAME.expected.npy come from samples/make_samples.py).
stem=${model%.pt}
if [[ -f "$stem.input.npy" && -f "$stem.expected.npy" ]]; then
  step "$thunderc" run "out/$name.so" "$stem.input.npy" --expect "$stem.expected.npy" --output-dir "out/$name"
fi

# 4. Speed and parity against TorchScript (frozen, through LibTorch) on the same random inputs and threads.
step "$thunderc" bench "out/$name.so" --compare "$model" --warmup 5 --iterations 50

# 5. What the compiled model and the runtime load at run time: no LibTorch unless the torch executor ran
#    something (then libthunderc_aten_shim and LibTorch appear here).
step ldd "out/$name.so"
step ldd build/lib/libthunderc_runtime.so
