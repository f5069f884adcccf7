#!/usr/bin/env bash
# Creates (or completes) a Python venv with PyPI's torch 2.x and torchvision, for what needs PyTorch 2.x:
# samples/export_samples.py (.pt2 and torch2/ fixtures), scripts/make_real_models.py --pt2, and the LibTorch 2.x
# build (scripts/build.sh --libtorch-venv, which links the LibTorch inside the wheel).
#
#   bash scripts/pypi-torch-venv.sh VENV        # e.g. /tmp/pt2-venv; idempotent: a complete venv is left as is
#
# PyPI's torch wheel is the CUDA build. It is installed without its dependency pins (they pull in several GB of
# CUDA libraries); importing it needs only the few CUDA packages below (the system NCCL is too old).
set -euo pipefail
[[ $# -eq 1 && $1 != -* ]] || { sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
venv=$1
die() { echo "pypi-torch-venv.sh: error: $*" >&2; exit 1; }

if [[ -x $venv/bin/python ]] && "$venv/bin/python" -c "import torch, torchvision, numpy" >/dev/null 2>&1; then
  exit 0
fi
command -v python3 >/dev/null || die "python3 not found"
python3 -c "import venv, ensurepip" 2>/dev/null || {
  echo "pypi-torch-venv.sh: installing python3-venv"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
} || die "python3-venv is missing and could not be installed"
echo "pypi-torch-venv.sh: installing PyPI torch and torchvision into $venv (a few GB, several minutes)"
python3 -m venv "$venv" || die "could not create the venv $venv"
pip=("$venv/bin/pip" install -q --disable-pip-version-check)
"${pip[@]}" --no-deps torch torchvision || die "pip could not install torch"
"${pip[@]}" numpy sympy mpmath filelock typing-extensions networkx jinja2 MarkupSafe fsspec pillow ||
  die "pip could not install torch's Python dependencies"
"${pip[@]}" --no-deps nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13 ||
  die "pip could not install the CUDA libraries torch loads"
"${pip[@]}" "cuda-toolkit[cufile]" || die "pip could not install cuda-toolkit[cufile]"
"$venv/bin/python" -c "import torch, torchvision; print('pypi-torch-venv.sh: torch', torch.__version__)" ||
  die "torch does not import in $venv"
