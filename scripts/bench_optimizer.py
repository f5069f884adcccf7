#!/usr/bin/python3
"""Times one optimizer step of a model compiled with `thunderc MODEL --autograd --optimizer sgd|adamw` against
torch.optim's (Debian's PyTorch) on parameters and gradients of the same shapes, at the same thread count:
medians of interleaved steps (so a slow moment of the machine hits both).

    PYTHONPATH=python THUNDERC_RUNTIME_LIBRARY=build/lib/libthunderc_runtime.so \\
        /usr/bin/python3 scripts/bench_optimizer.py OUT.so [--threads N] [--iterations K]

The update runs on random gradients; the values do not matter for the time. sgd runs with momentum 0.9 and
weight decay 0.01, adamw with weight decay 0.01 (each one step's arithmetic, no Python in thunderc's step).
"""
import argparse
import statistics
import time

import numpy as np
import torch

import thunderc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=20)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m = thunderc.load(a.model, num_threads=a.threads)
    if m.optimizer is None:
        raise SystemExit(f"bench_optimizer.py: {a.model} was compiled without --optimizer")
    rng = np.random.default_rng(0)
    shapes = {p.name: p.shape for p in m.parameters}
    grads = [rng.standard_normal(shapes[g.name]).astype(np.float32) if g.is_parameter else None for g in m.gradients]
    params = [torch.from_numpy(rng.standard_normal(p.shape).astype(np.float32)) for p in m.parameters if p.trainable]
    for p, g in zip(params, [g for g in grads if g is not None]):
        p.grad = torch.from_numpy(g)
    if m.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9, weight_decay=0.01)
        kwargs = dict(lr=1e-3, momentum=0.9, weight_decay=0.01)
    else:
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
        kwargs = dict(lr=1e-3, weight_decay=0.01)
    ours, theirs = [], []
    for it in range(a.iterations + 2):
        t0 = time.perf_counter()
        m.optimizer_step(grads, **kwargs)
        t1 = time.perf_counter()
        with torch.no_grad():
            opt.step()
        t2 = time.perf_counter()
        if it >= 2:  # warm-up: state allocation on both sides
            ours.append(t1 - t0)
            theirs.append(t2 - t1)
    n = sum(p.numel() for p in params)
    mo, mt = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
    print(f"{a.model}: {m.optimizer}, {n / 1e6:.1f}M parameters, {a.threads} thread(s): thunderc {mo:.2f} ms, "
          f"torch.optim {mt:.2f} ms (torch {torch.__version__}), torch/thunderc {mt / mo:.2f}x")


if __name__ == "__main__":
    main()
