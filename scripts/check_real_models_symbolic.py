#!/usr/bin/python3
"""Symbolic variants of the real models on the native executors, against TorchScript.

    /usr/bin/python3 scripts/make_real_models.py            # once: writes /tmp/thunderc-real-models
    /usr/bin/python3 scripts/check_real_models_symbolic.py [DIR] [--only NAME ...] [--max N]

Each model (one tensor input; its example shape is the `thunderc.json` the tracing script stored) is
compiled once with `--executors cpp,blas --standalone --cache "symbolic values"` and its batch dimension
as the symbol B in 1..N (default 8); models whose input is [batch, sequence, features] are compiled a
second time with the sequence length as the symbol T in 2..64. Each variant is run with `thunderc run` at
the minimum, an odd size and the maximum, and compared with the TorchScript model on the same input
(default rtol 1e-3, atol 1e-4, as scripts/check_real_models.sh; the max abs diff is printed). Prints a
markdown table; exits non-zero if anything fails to compile or to match. Needs Debian's PyTorch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

THUNDERC = os.environ.get("THUNDERC", os.path.join(os.path.dirname(__file__), "..", "build", "bin", "thunderc"))


def example_shape(path):
    extra = {"thunderc.json": ""}
    torch.jit.load(path, _extra_files=extra)
    shapes = json.loads(extra["thunderc.json"])["inputs"]
    return shapes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default="/tmp/thunderc-real-models")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--max", type=int, default=8)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    args = ap.parse_args()
    models = sorted(f[:-3] for f in os.listdir(args.dir) if f.endswith(".pt"))
    if args.only:
        models = [m for m in models if m in args.only]
    if not models:
        sys.exit(f"check_real_models_symbolic.py: no models in {args.dir} (run scripts/make_real_models.py)")
    failed = False
    out = tempfile.mkdtemp()
    print("| model | symbol | compile | sizes (max abs diff) |")
    print("|---|---|---|---|")
    for name in models:
        path = os.path.join(args.dir, name + ".pt")
        inputs = example_shape(path)
        if len(inputs) != 1:
            print(f"| {name} | - | skipped: {len(inputs)} inputs | |")
            continue
        input_name, shape = inputs[0]["name"], inputs[0]["shape"]
        cases = [("B", 0, 1, args.max)]
        if len(shape) == 3:
            cases.append(("T", 1, 2, 64))
        module = torch.jit.load(path).eval()
        for symbol, dim, lo, hi in cases:
            spec = [str(d) for d in shape]
            spec[dim] = symbol
            so = os.path.join(out, f"{name}_{symbol}.so")
            r = subprocess.run([THUNDERC, path, "-o", so, "--executors", "cpp,blas", "--standalone", "--cache",
                                "symbolic values", "--shapes", f"{input_name}={'x'.join(spec)}", "--dim",
                                f"{symbol}={lo}:{hi}"], capture_output=True, text=True)
            if r.returncode != 0:
                failed = True
                print(f"| {name} | {symbol} in {lo}..{hi} | failed: {(r.stdout + r.stderr).strip().splitlines()[-1][:300]} | |")
                continue
            results = []
            for n in sorted({lo, (lo + hi) // 2 | 1, hi}):
                s = list(shape)
                s[dim] = n
                torch.manual_seed(n)
                x = torch.randn(*s)
                with torch.no_grad():
                    y = module(x)
                np.save(os.path.join(out, "x.npy"), x.numpy())
                np.save(os.path.join(out, "y.npy"), y.numpy())
                run = subprocess.run([THUNDERC, "run", so, os.path.join(out, "x.npy"), "--expect",
                                      os.path.join(out, "y.npy"), "--rtol", str(args.rtol), "--atol", str(args.atol),
                                      "--output-dir", out], capture_output=True, text=True)
                text = run.stdout + run.stderr
                diff = text.split("max abs diff ")[1].split(",")[0] if "max abs diff " in text else "?"
                ok = run.returncode == 0
                failed = failed or not ok
                results.append(f"{n}: {diff}" + ("" if ok else " MISMATCH"))
            print(f"| {name} | {symbol} in {lo}..{hi} | ok | {'; '.join(results)} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
