#!/usr/bin/env python3
# Reference gradients of the torch.export samples, for `thunderc MODEL.pt2 --autograd` (tests/frontend/pt2_test.cpp,
# "--autograd on .pt2 fixtures"): for each sample below, torch.export.load(samples/pt2/<name>.pt2).module() runs
# on <name>.input.npy, and torch.autograd.grad of its output against a seeded random output gradient gives every
# parameter's gradient and the input's. Written to samples/pt2/grads/<name>/ under the names `thunderc grad`
# gives its files: grad_output0.npy (the output gradient used), grad_<parameter>.npy, grad_x.npy.
#
# Run with the venv of samples/export_samples.py (PyPI torch 2.x; `bash scripts/pypi-torch-venv.sh /tmp/pt2-venv`):
#   /tmp/pt2-venv/bin/python samples/pt2_gradients.py
# It reads the .pt2 files as committed and does not rewrite them.
import os
import sys

import numpy as np
import torch

PT2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pt2")
SAMPLES = ["mlp", "cnn", "gpt_block", "llama_block"]


def gradients(name):
    ep = torch.export.load(os.path.join(PT2, name + ".pt2"))
    module = ep.module()
    x = torch.from_numpy(np.load(os.path.join(PT2, name + ".input.npy"))).requires_grad_(True)
    params = dict(module.named_parameters())
    for p in params.values():
        p.requires_grad_(True)
    y = module(x)
    if isinstance(y, (tuple, list)):
        sys.exit(f"pt2_gradients.py: {name} has several outputs; this script handles one")
    expected = torch.from_numpy(np.load(os.path.join(PT2, name + ".expected.npy")))
    if not torch.allclose(y.detach(), expected, rtol=1e-5, atol=1e-6):
        sys.exit(f"pt2_gradients.py: {name}: the loaded program disagrees with its recorded output")
    gen = torch.Generator().manual_seed(11)
    gy = torch.randn(y.shape, generator=gen, dtype=y.dtype)
    names = list(params)
    grads = torch.autograd.grad(y, [params[n] for n in names] + [x], gy, allow_unused=True)
    out = os.path.join(PT2, "grads", name)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "grad_output0.npy"), gy.numpy())
    for n, g in zip(names + ["x"], grads):
        if g is None:  # a parameter the forward never reads: thunderc has no such parameter either
            continue
        np.save(os.path.join(out, "grad_" + n + ".npy"), g.detach().numpy())
    print(name, len(names), "parameters")


def main():
    torch.manual_seed(0)
    for name in SAMPLES:
        gradients(name)


if __name__ == "__main__":
    main()
