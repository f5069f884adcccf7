#!/usr/bin/python3
"""Trace real-world models for local testing and benchmarking (outputs are NOT committed).

    /usr/bin/python3 scripts/make_real_models.py [OUT_DIR] [--only NAME ...]
    VENV/bin/python scripts/make_real_models.py --pt2 [--dynamic-batch N] [OUT_DIR] [--only NAME ...]

--pt2 exports the same models with torch.export instead (PyPI torch 2.x in a venv, with torchvision: see
samples/export_samples.py for the install), writing <name>.pt2, <name>.input.npy and <name>.expected.npy
(PyTorch's output): scripts/check_real_models_pt2.sh compiles and checks them, with or without LibTorch.
--dynamic-batch N (with --pt2) exports the batch as Dim("batch", min=1, max=N), so thunderc compiles one
symbolic variant, and also writes <name>.input.b<B>.npy / <name>.expected.b<B>.npy for B = 1, an odd size
in between and N.

OUT_DIR defaults to /tmp/thunderc-real-models. Needs Debian's PyTorch
(`bash scripts/install-deps.sh --samples`). Models are randomly initialised
(weights=None: nothing is downloaded), put in eval mode and traced; each is
loaded back and checked against eager once. A model that fails is skipped with
the reason printed; the exit status is non-zero only if all of them fail.

Attention fast paths: under torch.no_grad() in eval mode, PyTorch 1.13 routes
nn.TransformerEncoderLayer and nn.MultiheadAttention to fused kernels
(aten::_transformer_encoder_layer_fwd, aten::_native_multi_head_attention), and
tracing records those single ops. To get the decomposed graph (linear, bmm,
softmax, layer_norm, ...) every model is traced with autograd enabled. Models
that have such a fast path are saved a second time, traced under no_grad, as
`<name>_fastpath.pt`.

As in samples/make_samples.py, the example input shapes are stored inside each
archive as the extra file `thunderc.json`, because TorchScript drops traced
input shapes on save/load.
"""
import inspect
import json
import os
import sys
import time
import warnings

if os.environ.get("PYTHONHASHSEED") != "0":  # byte-stable outputs across reruns
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import torch
import torch.nn as nn

DEFAULT_OUT = "/tmp/thunderc-real-models"
IMAGE = (1, 3, 224, 224)


def torchvision_model(name):
    def make():
        import torchvision.models as tvm
        return getattr(tvm, name)(weights=None)
    return make


def transformer_encoder_layer():
    return nn.TransformerEncoderLayer(d_model=256, nhead=8, batch_first=True)


# name -> (constructor, input shape)
MODELS = {name: (torchvision_model(name), IMAGE) for name in [
    "resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
    "squeezenet1_1", "shufflenet_v2_x1_0", "densenet121", "convnext_tiny", "vit_b_16",
    "regnet_y_400mf",
]}
MODELS["transformer_encoder_layer"] = (transformer_encoder_layer, (2, 32, 256))
# Models that are also saved as <name>_fastpath.pt (see the module docstring).
FASTPATH = {"transformer_encoder_layer", "vit_b_16"}


def build_model(ctor, shape):
    """The model in eval mode (seed 0) and its example input (seed 1): what every script here compiles and times.
    Some torchvision heads start at zero (ViT's classifier), which makes every output 0 and a parity check
    vacuous: all-zero weight matrices get small random values instead."""
    torch.manual_seed(0)
    model = ctor().eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0.0, 0.02)
    return model, torch.randn(*shape, generator=torch.Generator().manual_seed(1))


def make_one(name, ctor, shape, out_dir, fastpath=False):
    model, x = build_model(ctor, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings are expected for some models
        # check_trace=False: its re-run happens under no_grad and would take the fast
        # path, so it would always "differ"; the comparison below checks the result.
        with torch.set_grad_enabled(not fastpath):
            traced = torch.jit.trace(model, x, check_trace=False)
        path = os.path.join(out_dir, name + ("_fastpath" if fastpath else "") + ".pt")
        arg = next(iter(inspect.signature(model.forward).parameters))  # e.g. "x", or "src"
        meta = {"inputs": [{"name": arg, "shape": list(shape), "dtype": "float32"}]}
        torch.jit.save(traced, path, _extra_files={"thunderc.json": json.dumps(meta, sort_keys=True)})
        with torch.no_grad():
            want = model(x)
            got = torch.jit.load(path)(x)
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
        os.remove(path)
        raise RuntimeError("loaded trace disagrees with eager model")
    return path


def export_one(name, ctor, shape, out_dir, fastpath=False, dynamic_batch=0):
    """torch.export at the example shape; the archive is loaded back and checked against eager once."""
    import numpy as np
    from torch.export import Dim
    assert not fastpath
    if dynamic_batch:  # torch.export specializes a dimension whose example size is 1
        shape = (max(2, shape[0]),) + tuple(shape[1:])
    model, x = build_model(ctor, shape)
    path = os.path.join(out_dir, name + ".pt2")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        want = model(x)
        dynamic = None
        if dynamic_batch:
            arg = next(iter(inspect.signature(model.forward).parameters))
            dynamic = {arg: {0: Dim("batch", min=1, max=dynamic_batch)}}
        torch.export.save(torch.export.export(model, (x,), dynamic_shapes=dynamic), path)
        loaded = torch.export.load(path).module()
        got = loaded(x)
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
        os.remove(path)
        raise RuntimeError("loaded export disagrees with eager model")
    np.save(os.path.join(out_dir, name + ".input.npy"), x.numpy())
    np.save(os.path.join(out_dir, name + ".expected.npy"), want.numpy())
    if dynamic_batch:
        for b in sorted({1, max(1, dynamic_batch // 2 - 1) | 1, dynamic_batch}):
            xb = torch.randn(b, *shape[1:], generator=torch.Generator().manual_seed(b))
            with torch.no_grad():
                np.save(os.path.join(out_dir, f"{name}.input.b{b}.npy"), xb.numpy())
                np.save(os.path.join(out_dir, f"{name}.expected.b{b}.npy"), model(xb).numpy())
    return path


def main(argv):
    out_dir, only, pt2, dynamic_batch = DEFAULT_OUT, [], False, 0
    args = iter(argv)
    for a in args:
        if a == "--only":
            only.extend(args)
        elif a == "--pt2":
            pt2 = True
        elif a == "--dynamic-batch":
            dynamic_batch = int(next(args))
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            out_dir = a
    unknown = [n for n in only if n not in MODELS]
    if unknown:
        print(f"make_real_models.py: unknown model(s): {' '.join(unknown)}; known: {' '.join(MODELS)}",
              file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)

    ok, skipped = [], []
    jobs = [(name, ctor, shape, fp) for name, (ctor, shape) in MODELS.items()
            for fp in ((False, True) if name in FASTPATH and not pt2 else (False,))]
    for name, ctor, shape, fastpath in jobs:
        if only and name not in only:
            continue
        label = name + "_fastpath" if fastpath else name
        t0 = time.time()
        try:
            if pt2:
                path = export_one(name, ctor, shape, out_dir, fastpath, dynamic_batch)
            else:
                path = make_one(name, ctor, shape, out_dir, fastpath)
        except Exception as e:  # report and carry on with the rest
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            print(f"SKIP {label:<36} {type(e).__name__}: {reason}")
            skipped.append(label)
            continue
        mb = os.path.getsize(path) / 2**20
        print(f"ok   {label:<36} {list(shape)!s:<18} {mb:8.1f} MiB  {time.time() - t0:5.1f}s  {path}")
        ok.append(label)

    print(f"\n{len(ok)} {'exported' if pt2 else 'traced'} into {out_dir}" + (f"; skipped: {' '.join(skipped)}" if skipped else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
