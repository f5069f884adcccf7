"""Saved-tensor memory of one training step: thunderc's (the manifest's variants[0].training.saved) against
LibTorch autograd's on the same TorchScript module (eval mode, as `thunderc bench --compare` times it).

LibTorch's is what its autograd graph keeps for the backward: every tensor a node saves passes the
saved-tensor pack hook (torch.autograd.graph.saved_tensors_hooks, which TorchScript's interpreter honours too);
distinct storages are counted once, and storages of parameters and buffers are left out on both sides (the
.so holds its parameters as state, not as saved tensors). Token ids and attention masks come from the sample's
.npy files next to the model when they exist, else random ids in [0, 96) and masks of ones.

    python3 scripts/saved_bytes.py MODEL.pt TRAIN.json     (prints: name ours_bytes torch_bytes)
"""
import json
import os
import sys

import numpy as np
import torch

DTYPES = {"float32": (torch.float32, 4), "float64": (torch.float64, 8), "int64": (torch.int64, 8),
          "int32": (torch.int32, 4), "bool": (torch.bool, 1), "float16": (torch.float16, 2),
          "bfloat16": (torch.bfloat16, 2), "uint8": (torch.uint8, 1), "int8": (torch.int8, 1)}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def main(pt, manifest_path):
    manifest = json.load(open(manifest_path))
    variant = manifest["variants"][0]
    ours = sum(numel(s["shape"]) * DTYPES[s["dtype"]][1] for s in variant["training"]["saved"])

    module = torch.jit.load(pt)
    module.eval()
    state = {p.storage().data_ptr() for p in module.parameters()}
    state |= {b.storage().data_ptr() for b in module.buffers()}
    torch.manual_seed(0)
    inputs = []
    stem = os.path.splitext(pt)[0]
    for guard in variant["guards"]:
        dtype = DTYPES[guard["dtype"]][0]
        shape = guard["shape"]
        file = f"{stem}.{guard['input']}.npy"
        if dtype.is_floating_point:
            inputs.append(torch.randn(shape, dtype=dtype))
        elif os.path.exists(file):
            inputs.append(torch.from_numpy(np.load(file)))
        elif guard["input"] == "attention_mask":
            inputs.append(torch.ones(shape, dtype=dtype))
        else:
            inputs.append(torch.randint(0, 96, shape, dtype=dtype))

    saved = {}

    def pack(t):
        ptr = t.storage().data_ptr()
        if ptr not in state:
            saved[ptr] = t.storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = module(*inputs)
    del out
    name = os.path.basename(stem)
    print(name, ours, sum(saved.values()))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
