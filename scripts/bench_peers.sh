#!/usr/bin/env bash
# Times thunderc against ONNX Runtime, torch.compile (Inductor) and TorchScript-frozen on the CPU, on the samples
# and the real models of scripts/make_real_models.py, at 1 and 2 threads: same weights, same input shape, outputs
# checked against eager PyTorch (max abs diff <= 1e-3 * max(1, max |output|)). Prints one markdown table of medians
# and ratios (peer / thunderc: above 1 thunderc is faster) with their geomeans; scripts/bench_peers.py says more.
# Makes or completes the venv (scripts/pypi-torch-venv.sh, then onnxruntime, onnx and onnxscript from PyPI).
#
#   bash scripts/bench_peers.sh [--venv VENV] [--only NAME,...] [--threads "1 2"] [--iterations 50] [--rounds 3] [--warmup 10]
#        [--workdir DIR] [--thunderc PATH] [--executors LIST] [--json-out FILE] [--list]
#
# VENV defaults to /tmp/pt2-venv, DIR (the cached exports) to /tmp/thunderc-bench-peers. Build first
# (bash scripts/build.sh); a model that fails in one runner shows "fail" there, with the reason on stderr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv=/tmp/pt2-venv
args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --venv) venv=$2; shift 2 ;;
    --venv=*) venv=${1#--venv=}; shift ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done

bash scripts/pypi-torch-venv.sh "$venv"
if ! "$venv/bin/python" -c "import onnxruntime, onnx, onnxscript" >/dev/null 2>&1; then
  echo "bench_peers.sh: installing onnxruntime, onnx and onnxscript into $venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check onnxruntime onnx onnxscript ||
    { echo "bench_peers.sh: error: pip could not install onnxruntime, onnx and onnxscript" >&2; exit 1; }
fi
exec "$venv/bin/python" scripts/bench_peers.py "${args[@]}"
