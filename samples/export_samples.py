#!/usr/bin/env python3
# Writes the torch.export (.pt2) samples of the .pt2 frontend (core/frontend/pt2.h) into samples/pt2/:
# <name>.pt2 (torch.export.export + torch.export.save), <name>.input.npy and <name>.expected.npy (PyTorch's
# output on that input). thunderc reads these without LibTorch or Python; only this script needs PyTorch 2.x.
# It also writes samples/torch2/: TorchScript saved by torch 2.x (rms_norm, scaled_dot_product_attention), which
# only a thunderc built against LibTorch 2.x loads (scripts/build.sh --libtorch-venv).
#
# Run with a Python that has PyPI torch (CPU is enough) and numpy, from the repository root:
#   python3 -m venv /tmp/pt2-venv
#   /tmp/pt2-venv/bin/pip install --no-deps torch
#   /tmp/pt2-venv/bin/pip install numpy sympy mpmath filelock typing-extensions networkx jinja2 MarkupSafe fsspec
#   # PyPI's wheel is the CUDA build: importing it also needs these (the system NCCL is too old)
#   /tmp/pt2-venv/bin/pip install --no-deps nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13
#   /tmp/pt2-venv/bin/pip install "cuda-toolkit[cufile]"
#   /tmp/pt2-venv/bin/python samples/export_samples.py [NAME ...]
# (or `bash scripts/pypi-torch-venv.sh /tmp/pt2-venv` for the venv). With NAMEs, only those samples are written
# (the others stay byte-identical), which needs the torch version samples/pt2/VERSION names.
#
# Every model is small (a few KB of weights), seeded and deterministic. samples/pt2/VERSION records the
# torch version that wrote the files.
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pt2")
OUT_TORCH2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch2")


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=1, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.conv2(x))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


class GPTBlock(nn.Module):
    def __init__(self, embed=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(embed)
        self.qkv = nn.Linear(embed, 3 * embed)
        self.proj = nn.Linear(embed, embed)
        self.ln2 = nn.LayerNorm(embed)
        self.fc = nn.Linear(embed, 4 * embed)
        self.out = nn.Linear(4 * embed, embed)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.silu(self.fc(self.ln2(x))))


class MaskedSoftmax(nn.Module):
    """Causal attention written out by hand, as make_samples.py's GPT block does: masked_fill with -inf, which
    torch.export serializes as the string "-Infinity" (JSON has no infinities)."""

    def __init__(self, embed=16, t=6):
        super().__init__()
        self.qk = nn.Linear(embed, 2 * embed)
        self.register_buffer("mask", torch.tril(torch.ones(t, t)) == 0, persistent=False)

    def forward(self, x):
        q, k = self.qk(x).chunk(2, dim=-1)
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask, float("-inf"))
        return torch.softmax(scores, dim=-1)


class LlamaBlock(nn.Module):
    """A Llama-style decoder block: RMSNorm, rotary embeddings, grouped-query causal attention through
    scaled_dot_product_attention, per-head RMSNorm of q and k with eps=None (Qwen3), and a SwiGLU MLP."""

    def __init__(self, embed=32, heads=4, kv_heads=2, hidden=64, max_len=16):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, embed // heads
        self.attn_norm = nn.RMSNorm(embed, eps=1e-6)
        self.q = nn.Linear(embed, embed, bias=False)
        self.k = nn.Linear(embed, kv_heads * self.head_dim, bias=False)
        self.v = nn.Linear(embed, kv_heads * self.head_dim, bias=False)
        self.q_norm = nn.RMSNorm(self.head_dim)
        self.k_norm = nn.RMSNorm(self.head_dim)
        self.o = nn.Linear(embed, embed, bias=False)
        self.mlp_norm = nn.RMSNorm(embed, eps=1e-6)
        self.gate = nn.Linear(embed, hidden, bias=False)
        self.up = nn.Linear(embed, hidden, bias=False)
        self.down = nn.Linear(hidden, embed, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(max_len).float(), inv_freq)
        angles = torch.cat([angles, angles], dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        with torch.no_grad():  # RMSNorm weights start at 1: make them matter
            for norm in (self.attn_norm, self.q_norm, self.k_norm, self.mlp_norm):
                norm.weight.copy_(torch.rand_like(norm.weight) + 0.5)

    @staticmethod
    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat([-x[..., half:], x[..., :half]], dim=-1)

    def rope(self, x, t):
        cos, sin = self.cos[:t], self.sin[:t]
        return x * cos + self.rotate_half(x) * sin

    def forward(self, x):
        b, t, c = x.shape
        h = self.attn_norm(x)
        q = self.q_norm(self.q(h).view(b, t, self.heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k(h).view(b, t, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = self.rope(q, t), self.rope(k, t)
        rep = self.heads // self.kv_heads  # grouped-query attention, as Llama's repeat_kv writes it
        k = k[:, :, None].expand(b, self.kv_heads, rep, t, self.head_dim).reshape(b, self.heads, t, self.head_dim)
        v = v[:, :, None].expand(b, self.kv_heads, rep, t, self.head_dim).reshape(b, self.heads, t, self.head_dim)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, c))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class InPlace(nn.Module):
    """In-place updates as torchvision writes them (relu_, out += identity, hardtanh_, dropout_ at eval), which
    torch.export keeps, plus unflatten (as nn.MultiheadAttention's export has it)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 16)
        self.fc2 = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.1, inplace=True)

    def forward(self, x):
        out = self.fc1(x)
        out.relu_()
        out = self.fc2(out)
        out += x
        out = F.hardtanh(out, -0.5, 0.5, inplace=True)
        out = self.drop(out)
        return out.unflatten(-1, (4, -1)).sum(-1)


class InPlaceView(nn.Module):
    """Writes through a view into a tensor read afterwards: refused by the .pt2 frontend (for now)."""

    def forward(self, x):
        h = x * 2.0
        h[:, 0].add_(1.0)
        return h + 1.0


class DynamicBatch(nn.Module):
    """A small MLP whose batch dimension is exported as Dim("B", min=1, max=16)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 6)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return torch.softmax(self.fc2(h) * 0.5 - 1.0, dim=-1)


class Unsupported(nn.Module):
    """Uses operators thunderc has no catalog entry for (cummax twice, median along a dim): the import lists them
    together."""

    def forward(self, x):
        return torch.cummax(torch.cummax(x, 0).values, 1).values + torch.median(x, dim=1, keepdim=True).values


class Positions(nn.Module):
    """Orderings, scatters, advanced indexing and resampling as torch.export writes them: sort, topk, prod,
    diagonal, scatter, scatter_add, scatter_reduce, index.Tensor, index_put (with positions and with a mask),
    remainder of int64 by a number, upsample_bilinear2d (a size with align_corners, a scale factor without).
    Every result flattened into one vector (indices as floats)."""

    def forward(self, x):
        v, i = torch.sort(x, dim=1, descending=True)
        tv, ti = torch.topk(x, 3, dim=-1)
        p = torch.prod(x[:, :4], dim=1, keepdim=True)
        d = torch.diagonal(x, 1)
        s = torch.zeros_like(x).scatter(1, i[:, :3], x[:, :3])
        sa = torch.zeros_like(x).scatter_add(1, i[:, 2:5], x[:, :3])
        sr = x.scatter_reduce(1, i[:, :4] % 3, x[:, 4:], "amax", include_self=False)
        g = x[:, i[0, :3]]
        y = x.clone()
        y[:, i[1, :2]] = 0.5
        z = x.clone()
        z[x > 1] = -1.0
        img = x.reshape(1, 2, 4, 4)
        u = F.interpolate(img, scale_factor=2.0, mode="bilinear", align_corners=False)
        u2 = F.interpolate(img, size=(7, 5), mode="bilinear", align_corners=True)
        parts = [v, i.float(), tv, ti.float(), p, d, s, sa, sr, g, y, z, u, u2]
        return torch.cat([t.reshape(-1) for t in parts])


class CoreOps(nn.Module):
    """Core ATen operators beyond the blocks above, as torch.export writes them: cumsum of int64, flip,
    index_select, argmax + gather, max.dim, var, amin, any, constant_pad_nd, repeat, bitwise ops, remainder,
    atan2, clamp, expm1, sign, floor, log1p, full_like."""

    def forward(self, x):
        pos = torch.cumsum(torch.ones_like(x[:, 0], dtype=torch.int64), 0) - 1
        idx = torch.argmax(x, dim=1)
        g = torch.gather(x, 1, idx.unsqueeze(1))
        sel = torch.index_select(x, 0, pos.flip(0))
        v = x.var(dim=1, keepdim=True) + x.amin(1, keepdim=True)
        m, mi = x.max(dim=0)
        any_ = (x > 1.5).any(dim=1, keepdim=True).float()
        pad = F.pad(x, (1, 2), value=-1.0)[:, 1:-2]
        rep = x.repeat(1, 2)[:, :6]
        bits = ((pos & 1) ^ (pos | 2)).to(x.dtype).unsqueeze(1)
        r = torch.remainder(x, 0.7) + torch.atan2(x, sel) + torch.clamp(x, -0.5, 0.5) + torch.expm1(x).sign()
        full = torch.full_like(x, 0.25)
        return (sel + g + v + m + mi.to(x.dtype) + any_ + pad + rep + bits + r + full + torch.floor(x * 2) +
                torch.log1p(x.abs()))


class Spectral(nn.Module):
    """torch.fft as torch.export writes it (_fft_r2c, _fft_c2r, _fft_c2c) with complex arithmetic around it: a
    filter in the frequency domain, magnitudes, a 2-D transform and back, the real part through view_as_real."""

    def __init__(self):
        super().__init__()
        self.filter = nn.Parameter(torch.rand(9))

    def forward(self, x):  # x: [4, 16]
        X = torch.fft.rfft(x)
        y = torch.fft.irfft(X * self.filter, n=16)
        f = torch.fft.fft2(x, norm="ortho")
        g = torch.fft.ifft2(f * 0.5 - f / (f.abs() + 1.0), norm="ortho").real
        return y + g + X.abs().mean(-1, keepdim=True) + torch.fft.fft(x).imag


class Sampling(nn.Module):
    """3-D pooling, grid sampling and embedding bags as torch.export writes them: max_pool3d_with_indices,
    avg_pool3d, _adaptive_avg_pool3d, grid_sampler_2d (bilinear with reflection, nearest with border),
    _embedding_bag (mean with offsets, sum of 2-D bags with padding_idx). One flattened vector out."""

    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(10, 4, mode="mean")
        self.bag2 = nn.EmbeddingBag(10, 4, mode="sum", padding_idx=3)
        self.register_buffer("offsets", torch.tensor([0, 2, 2, 5]))

    def forward(self, x):
        a = F.max_pool3d(x, 3, 2, 1)
        b = F.avg_pool3d(x, 2, ceil_mode=True, count_include_pad=False)
        c = F.adaptive_avg_pool3d(x, (2, 3, 2))
        img = x[:, :, 0]
        grid = torch.tanh(x[:, :2, 1, :4, :].permute(0, 2, 3, 1)) * 1.2
        s1 = F.grid_sample(img, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
        s2 = F.grid_sample(img, grid, mode="nearest", padding_mode="border", align_corners=True)
        ids = torch.sort(x.flatten()[:9]).indices
        e1 = self.bag(ids, self.offsets)
        e2 = self.bag2(ids[:8].reshape(2, 4))
        return torch.cat([t.reshape(-1) for t in [a, b, c, s1, s2, e1, e2]])


class Composites(nn.Module):
    """Core ATen operators thunderc rewrites at import into its own: cdist (p = 2, 1, inf, 0.5, 0), pdist, as_strided,
    F.fold (col2im), batch norm with batch statistics (F.batch_norm training=True without running statistics, and
    nn.BatchNorm2d(track_running_stats=False)), atan2 with out=, sym_numel under a dynamic batch. One flattened
    vector out."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(2, track_running_stats=False)
        with torch.no_grad():
            self.bn.weight.copy_(torch.rand(2) + 0.5)
            self.bn.bias.copy_(torch.randn(2) * 0.1)

    def forward(self, x):  # x: [B, 8]
        y = x[:3] * 0.5 + 0.25
        c2 = torch.cdist(x, y)
        c1 = torch.cdist(x, y, p=1.0)
        ci = torch.cdist(x.unsqueeze(0), y.unsqueeze(0), p=float("inf"))
        ch = torch.cdist(x, y, p=0.5)
        c0 = torch.cdist(x, y.round(), p=0.0)
        pd = F.pdist(x)
        st = torch.as_strided(x, (3, 4), (2, 1), 1)
        cols = x[:2].reshape(1, 4, 4)  # 1 channel, 2x2 kernel, 4 blocks
        fold = F.fold(cols, output_size=(3, 3), kernel_size=2)
        fold2 = F.fold(cols, output_size=(3, 3), kernel_size=2, stride=2, padding=1)
        fold3 = F.fold(cols[0], output_size=(4, 4), kernel_size=2, dilation=2)  # unbatched
        img = x[:2].reshape(1, 2, 2, 4)
        bs = F.batch_norm(img, None, None, training=True, eps=1e-3)
        bm = self.bn(img)
        a = torch.empty_like(x)
        torch.atan2(x, y[:1] + 1.0, out=a)
        flat = x.reshape(x.numel())
        parts = [c2, c1, ci, ch, c0, pd, st, fold, fold2, fold3, bs, bm, a, flat[:5]]
        return torch.cat([t.reshape(-1) for t in parts])


class BatchNormTraining(nn.Module):
    """nn.BatchNorm1d in training mode: PyTorch updates its running statistics in place, which thunderc refuses."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(x)


class DynamicNumel(nn.Module):
    """x.numel() under a dynamic batch: aten.sym_numel."""

    def forward(self, x):
        return x.reshape(x.numel()) * 2.0


class DynamicComposites(nn.Module):
    """cdist and batch norm with batch statistics over a dynamic batch (the statistics' divisor is the run-time
    batch size). Also written at batch 7 (.b7.input.npy, .b7.expected.npy) to check the symbolic variant there."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(6, track_running_stats=False)

    def forward(self, x):  # x: [B, 6]
        d = torch.cdist(x, x[:1] * 0.5 + 1.0).reshape(-1)
        return torch.cat([d, self.bn(x).reshape(-1)])


class DenseBlock(nn.Module):
    """Two DenseNet dense layers (cat -> batch norm -> relu -> 1x1 conv -> relu -> 3x3 conv, growth 8) over a
    dynamic batch: the concatenations are lazy in thunderc's loops (each piece's batch norm + relu written into
    its channels). Also written at batch 5 (.b5.input.npy, .b5.expected.npy) to check the symbolic variant there."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList()
        for c in (8, 16):
            bn1, bn2 = nn.BatchNorm2d(c), nn.BatchNorm2d(16)
            for bn in (bn1, bn2):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
            self.layers.append(nn.Sequential(bn1, nn.ReLU(), nn.Conv2d(c, 16, 1, bias=False), bn2, nn.ReLU(),
                                             nn.Conv2d(16, 8, 3, padding=1, bias=False)))

    def forward(self, x):  # x: [B, 8, 6, 6]
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


class RandomOps(nn.Module):
    """torch.rand, randn, randn_like and randperm: thunderc samples them once at compile time (a sharp edge), so
    only their shapes, dtypes and distributions are comparable with PyTorch's; expected.npy is not."""

    def forward(self, x):  # x: [4, 8]
        u = torch.rand(4, 1000)
        g = torch.randn(4, 1000, dtype=torch.float64).float()
        h = torch.randn_like(x)
        p = torch.randperm(50)
        return torch.cat([u.reshape(-1), g.reshape(-1), (x + h).reshape(-1), p.float()])


WANT = set(sys.argv[1:])  # the samples to write; all when empty


def export_one(name, model, x, dynamic_shapes=None, decompose=False, train=False):
    """train=True exports in training mode (batch norm with batch statistics); the models that use it have no
    dropout or other randomness."""
    if WANT and name not in WANT:
        return
    model.train(train)
    with torch.no_grad():
        expected = model(x)
        ep = torch.export.export(model, (x,), dynamic_shapes=dynamic_shapes)
        if decompose:  # the core ATen opset: convolution, addmm, permute, _native_batch_norm_legit_no_training, ...
            ep = ep.run_decompositions()
    torch.export.save(ep, os.path.join(OUT, name + ".pt2"))
    np.save(os.path.join(OUT, name + ".input.npy"), x.numpy())
    np.save(os.path.join(OUT, name + ".expected.npy"), expected.numpy())
    print(name, tuple(x.shape), "->", tuple(expected.shape))


def script_one(name, model, x):
    """TorchScript saved by torch 2.x (torch.jit.trace): the input shape rides along as the extra file
    thunderc.json, as in samples/make_samples.py. Written to samples/torch2/, for the LibTorch 2.x build
    (LibTorch 1.13 has no aten::rms_norm)."""
    if WANT and name not in WANT:
        return
    import json
    model.eval()
    os.makedirs(OUT_TORCH2, exist_ok=True)
    with torch.no_grad():
        expected = model(x)
        traced = torch.jit.trace(model, x)
    meta = {"inputs": [{"name": "x", "shape": list(x.shape), "dtype": "float32"}]}
    path = os.path.join(OUT_TORCH2, name + ".pt")
    torch.jit.save(traced, path, _extra_files={"thunderc.json": json.dumps(meta, sort_keys=True)})
    with torch.no_grad():
        if not torch.allclose(torch.jit.load(path)(x), expected, rtol=1e-5, atol=1e-5):
            sys.exit(f"export_samples.py: {name}: loaded TorchScript disagrees with eager")
    np.save(os.path.join(OUT_TORCH2, name + ".input.npy"), x.numpy())
    np.save(os.path.join(OUT_TORCH2, name + ".expected.npy"), expected.numpy())
    print(name, tuple(x.shape), "->", tuple(expected.shape), "(TorchScript)")


def main():
    os.makedirs(OUT, exist_ok=True)
    version = "torch %s\n" % torch.__version__
    if WANT:
        with open(os.path.join(OUT, "VERSION")) as f:
            if f.read() != version:
                sys.exit("export_samples.py: samples/pt2 was written by another torch; rewrite every sample (no NAMEs)")
    torch.manual_seed(0)
    export_one("mlp", MLP(), torch.randn(4, 16))

    torch.manual_seed(1)
    cnn = CNN()
    with torch.no_grad():  # non-trivial running statistics, so batch_norm is not an identity
        cnn.bn1.running_mean.copy_(torch.randn(8) * 0.1)
        cnn.bn1.running_var.copy_(torch.rand(8) + 0.5)
        cnn.bn1.weight.copy_(torch.rand(8) + 0.5)
        cnn.bn1.bias.copy_(torch.randn(8) * 0.1)
    export_one("cnn", cnn, torch.randn(2, 3, 16, 16))
    export_one("cnn_decomposed", cnn, torch.randn(2, 3, 16, 16), decompose=True)

    torch.manual_seed(2)
    export_one("gpt_block", GPTBlock(), torch.randn(2, 8, 32))

    torch.manual_seed(7)
    export_one("masked_softmax", MaskedSoftmax(), torch.randn(2, 6, 16))

    torch.manual_seed(5)
    export_one("llama_block", LlamaBlock(), torch.randn(2, 12, 32))
    torch.manual_seed(5)  # the same weights and input, as TorchScript
    script_one("llama_block_scripted", LlamaBlock(), torch.randn(2, 12, 32))

    torch.manual_seed(6)
    export_one("inplace", InPlace(), torch.randn(3, 16))
    export_one("inplace_view", InPlaceView(), torch.randn(3, 4))
    # The remedy the refusal names: run_decompositions() makes the update functional (select_scatter-like ops).
    export_one("inplace_view_decomposed", InPlaceView(), torch.randn(3, 4), decompose=True)

    torch.manual_seed(3)
    export_one("dynamic_batch", DynamicBatch(), torch.randn(4, 12), dynamic_shapes={"x": {0: Dim("B", min=1, max=16)}})

    torch.manual_seed(3)  # the same model, its batch a Dim without bounds (torch records 0..inf)
    export_one("dynamic_unbounded", DynamicBatch(), torch.randn(4, 12), dynamic_shapes={"x": {0: Dim("B")}})

    torch.manual_seed(4)
    export_one("unsupported", Unsupported(), torch.randn(3, 4))

    torch.manual_seed(8)
    export_one("core_ops", CoreOps(), torch.randn(4, 6))
    export_one("core_ops_decomposed", CoreOps(), torch.randn(4, 6), decompose=True)

    torch.manual_seed(9)
    export_one("positions", Positions(), torch.randn(4, 8))

    torch.manual_seed(15)
    export_one("spectral", Spectral(), torch.randn(4, 16))
    export_one("spectral_decomposed", Spectral(), torch.randn(4, 16), decompose=True)

    torch.manual_seed(10)
    export_one("sampling", Sampling(), torch.randn(2, 3, 5, 6, 6))

    torch.manual_seed(11)
    export_one("composites", Composites(), torch.randn(4, 8), train=True)
    export_one("composites_decomposed", Composites(), torch.randn(4, 8), decompose=True, train=True)
    export_one("batch_norm_training", BatchNormTraining(), torch.randn(3, 4), train=True)
    export_one("dynamic_numel", DynamicNumel(), torch.randn(3, 4), dynamic_shapes={"x": {0: Dim("B", min=1, max=16)}})

    torch.manual_seed(13)
    dyn = DynamicComposites()
    export_one("dynamic_composites", dyn, torch.randn(4, 6), dynamic_shapes={"x": {0: Dim("B", min=2, max=16)}},
               train=True)
    if not WANT or "dynamic_composites" in WANT:
        x7 = torch.randn(7, 6)
        with torch.no_grad():
            np.save(os.path.join(OUT, "dynamic_composites.b7.input.npy"), x7.numpy())
            np.save(os.path.join(OUT, "dynamic_composites.b7.expected.npy"), dyn(x7).numpy())

    torch.manual_seed(12)
    export_one("random_ops", RandomOps(), torch.randn(4, 8))

    torch.manual_seed(14)
    block = DenseBlock()
    export_one("dynamic_dense_block", block, torch.randn(2, 8, 6, 6), dynamic_shapes={"x": {0: Dim("B", min=1, max=8)}})
    if not WANT or "dynamic_dense_block" in WANT:
        x5 = torch.randn(5, 8, 6, 6)
        with torch.no_grad():
            np.save(os.path.join(OUT, "dynamic_dense_block.b5.input.npy"), x5.numpy())
            np.save(os.path.join(OUT, "dynamic_dense_block.b5.expected.npy"), block.eval()(x5).numpy())

    if not WANT:
        with open(os.path.join(OUT, "VERSION"), "w") as f:
            f.write(version)
    print("torch", torch.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
