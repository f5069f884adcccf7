#!/usr/bin/python3
"""Regenerate the small TorchScript sample models in samples/.

Run with Debian's PyTorch (python3-torch 1.13):

    bash scripts/install-deps.sh --samples && /usr/bin/python3 samples/make_samples.py

Deterministic: every model is built right after torch.manual_seed(0), in eval
mode. Norm layers get non-trivial affine parameters / running statistics so
that getting them wrong shows up in parity tests.

TorchScript does not keep the traced input shapes when a module is saved and
loaded back (the loaded graph's inputs are plain `Tensor`). So each sample also
carries its example inputs as an extra file in the archive, `thunderc.json`:

    {"inputs": [{"name": "x", "shape": [1, 64], "dtype": "float32"}]}

readable from C++ with torch::jit::load(path, device, extra_files) and from
Python with torch.jit.load(path, _extra_files={"thunderc.json": ""}).

Options:
    --ops   also print the set of op kinds in each sample's frozen graph
"""
import json

import numpy
import math
import os
import sys

# Scripted modules serialize some attributes in set-iteration order, which depends on
# Python's string hash seed; pin it so that reruns produce byte-identical files.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0


# --------------------------------------------------------------------------- models

class MLP(nn.Module):
    def __init__(self, d_in: int = 64, d_hidden: int = 128, d_out: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.norm = nn.LayerNorm(d_hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.norm(self.fc1(x))))


def conv_bn_relu(c_in, c_out, k=3, stride=1, groups=1):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class ResidualBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + x)


class SmallCNN(nn.Module):
    """[N,3,32,32] -> [N,10]."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.block1 = nn.Sequential(conv_bn_relu(3, 16), nn.MaxPool2d(2))              # 16x16x16
        self.block2 = nn.Sequential(conv_bn_relu(16, 32, groups=4), nn.MaxPool2d(2))   # grouped, 32x8x8
        self.down = nn.Sequential(
            conv_bn_relu(32, 32, stride=2, groups=32),                                  # depthwise, stride 2: 32x4x4
            conv_bn_relu(32, 64, k=1),                                                  # pointwise: 64x4x4
        )
        self.res = ResidualBlock(64)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.res(self.down(self.block2(self.block1(x))))
        x = F.adaptive_avg_pool2d(x, 1)
        x = torch.flatten(x, 1)
        return self.fc(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, max_seq: int, dropout: float):
        super().__init__()
        assert d_model % n_head == 0
        self.d_model = d_model
        self.n_head = n_head
        self.scale = 1.0 / math.sqrt(d_model // n_head)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(max_seq, max_seq)).view(1, 1, max_seq, max_seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(self.d_model, dim=2)
        hd = C // self.n_head
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)   # [B, H, T, hd]
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_drop(att)
        y = att @ v                                          # [B, H, T, hd]
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))


class GPTMLP(nn.Module):
    def __init__(self, d_model: int, dropout: float):
        super().__init__()
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.proj = nn.Linear(4 * d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.proj(F.gelu(self.fc(x), approximate="tanh")))


class GPTBlock(nn.Module):
    """Pre-norm GPT block: x + attn(ln1(x)), then + mlp(ln2(x)). [B,T,C] -> [B,T,C]."""

    def __init__(self, d_model: int = 64, n_head: int = 4, max_seq: int = 32, dropout: float = 0.1):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, max_seq, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = GPTMLP(d_model, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPTBlockAnyRank(nn.Module):
    """Scripted wrapper: accepts [B,T,C] or unbatched [T,C] (data-independent control flow
    on x.dim(), which constant-folds once the input rank is known)."""

    def __init__(self, block: GPTBlock):
        super().__init__()
        self.block = block

    def forward(self, x):
        if x.dim() == 3:
            return self.block(x)
        else:
            return self.block(x.unsqueeze(0)).squeeze(0)


class EncoderLayer(nn.Module):
    """Post-norm transformer encoder layer written out by hand (nn.TransformerEncoderLayer's fast path
    does not trace): self-attention whose last keys are padding (a bool key-padding mask buffer,
    True = padding, applied with masked_fill), scaled by a division; then a ReLU MLP. [B,T,C] -> [B,T,C]."""

    def __init__(self, d_model: int = 32, n_head: int = 2, d_ff: int = 64, seq: int = 12, n_pad: int = 3):
        super().__init__()
        self.n_head = n_head
        self.hd = d_model // n_head
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.ln1 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.register_buffer("key_padding", torch.arange(seq) >= seq - n_pad)

    def heads(self, t, B: int, T: int):
        return t.view(B, T, self.n_head, self.hd).transpose(1, 2)   # [B, H, T, hd]

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.heads(self.q(x), B, T), self.heads(self.k(x), B, T), self.heads(self.v(x), B, T)
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        att = att.masked_fill(self.key_padding[:T].view(1, 1, 1, T), float("-inf"))
        att = att.softmax(dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        x = self.ln1(x + self.out(y))
        return self.ln2(x + self.ff2(F.relu(self.ff1(x))))


# --------------------------------------------------------------------------- helpers

class TinyBert(nn.Module):
    """A BERT-style encoder written the way Hugging Face's BertModel computes (no dependency on transformers):
    word + position + token-type embeddings, LayerNorm, an extended attention mask built from the int64
    mask input, (1 - mask) * finfo.min, post-norm layers with erf GELU, and the tanh pooler on the first
    token. Inputs: input_ids and attention_mask, both int64 [batch, seq]; outputs: the last hidden state and
    the pooled output, as BertModel(...)[:2] traced with torch.jit.trace."""

    def __init__(self, vocab=96, hidden=32, heads=2, layers=2, ffn=64, max_pos=32, type_vocab=2):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.word = nn.Embedding(vocab, hidden, padding_idx=0)
        self.position = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(type_vocab, hidden)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)), persistent=False)
        self.emb_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "query": nn.Linear(hidden, hidden), "key": nn.Linear(hidden, hidden), "value": nn.Linear(hidden, hidden),
                "attn_out": nn.Linear(hidden, hidden), "attn_norm": nn.LayerNorm(hidden, eps=1e-12),
                "up": nn.Linear(hidden, ffn), "down": nn.Linear(ffn, hidden), "out_norm": nn.LayerNorm(hidden, eps=1e-12),
            }))
        self.pooler = nn.Linear(hidden, hidden)

    def heads_first(self, x):
        b, t, c = x.shape
        return x.view(b, t, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, input_ids, attention_mask):
        b, t = input_ids.shape
        token_types = torch.zeros((b, t), dtype=torch.long)
        h = self.word(input_ids) + self.token_type(token_types) + self.position(self.position_ids[:, :t])
        h = self.emb_norm(h)
        mask = attention_mask[:, None, None, :].to(h.dtype)
        mask = (1.0 - mask) * torch.finfo(h.dtype).min
        for layer in self.layers:
            q = self.heads_first(layer["query"](h))
            k = self.heads_first(layer["key"](h))
            v = self.heads_first(layer["value"](h))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + mask
            ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, t, -1)
            h = layer["attn_norm"](layer["attn_out"](ctx) + h)
            h = layer["out_norm"](layer["down"](F.gelu(layer["up"](h))) + h)
        return h, torch.tanh(self.pooler(h[:, 0]))


class TinyDistilBert(nn.Module):
    """A DistilBERT-style encoder as Hugging Face's DistilBertModel computes: word + position embeddings
    (positions from arange), LayerNorm, attention masked by `(attention_mask == 0)` expanded over the scores
    and masked_fill with finfo.min, q scaled before the product, erf-GELU FFN, post-norm. Inputs: input_ids,
    attention_mask (int64 [batch, seq]); output: the last hidden state."""

    def __init__(self, vocab=96, dim=32, heads=2, layers=2, hidden=64, max_pos=32):
        super().__init__()
        self.heads, self.head_size = heads, dim // heads
        self.word = nn.Embedding(vocab, dim, padding_idx=0)
        self.position = nn.Embedding(max_pos, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "q_lin": nn.Linear(dim, dim), "k_lin": nn.Linear(dim, dim), "v_lin": nn.Linear(dim, dim),
                "out_lin": nn.Linear(dim, dim), "sa_layer_norm": nn.LayerNorm(dim, eps=1e-12),
                "lin1": nn.Linear(dim, hidden), "lin2": nn.Linear(hidden, dim),
                "output_layer_norm": nn.LayerNorm(dim, eps=1e-12),
            }))

    def forward(self, input_ids, attention_mask):
        b, t = input_ids.shape
        positions = torch.arange(t, dtype=torch.long).unsqueeze(0).expand_as(input_ids)
        h = self.emb_norm(self.word(input_ids) + self.position(positions))
        for layer in self.layers:
            def shape(x):
                return x.view(b, -1, self.heads, self.head_size).transpose(1, 2)
            q = shape(layer["q_lin"](h)) / math.sqrt(self.head_size)
            k, v = shape(layer["k_lin"](h)), shape(layer["v_lin"](h))
            scores = torch.matmul(q, k.transpose(2, 3))
            mask = (attention_mask == 0).view(b, 1, 1, t).expand_as(scores)
            scores = scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))
            ctx = torch.matmul(nn.functional.softmax(scores, dim=-1), v)
            ctx = ctx.transpose(1, 2).contiguous().view(b, -1, self.heads * self.head_size)
            h = layer["sa_layer_norm"](layer["out_lin"](ctx) + h)
            h = layer["output_layer_norm"](layer["lin2"](F.gelu(layer["lin1"](h))) + h)
        return h


class TinyGPT2(nn.Module):
    """A GPT-2-style decoder as Hugging Face's GPT2Model computes, with its cache outputs: token + position
    embeddings (positions from arange), pre-norm blocks with Conv1D layers (addmm on [in, out] weights), the
    causal mask sliced from a `bias` buffer and applied with torch.where(mask, w, finfo.min), tanh-GELU MLP,
    final LayerNorm. Input: input_ids (int64 [batch, seq]); outputs: the last hidden state and each layer's
    present key/value, stacked [2, batch, heads, seq, head_size]."""

    def __init__(self, vocab=96, n_embd=32, n_head=2, n_layer=2, n_positions=32):
        super().__init__()
        self.n_head, self.head_size = n_head, n_embd // n_head
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        mask = torch.tril(torch.ones(n_positions, n_positions, dtype=torch.bool))
        self.register_buffer("bias", mask.view(1, 1, n_positions, n_positions), persistent=False)
        conv = lambda n_in, n_out: nn.ParameterDict({  # noqa: E731 (HF's Conv1D: weight [in, out])
            "weight": nn.Parameter(torch.randn(n_in, n_out) * 0.02), "bias": nn.Parameter(torch.randn(n_out) * 0.02)})
        self.h = nn.ModuleList()
        for _ in range(n_layer):
            self.h.append(nn.ModuleDict({
                "ln_1": nn.LayerNorm(n_embd), "c_attn": conv(n_embd, 3 * n_embd), "c_proj": conv(n_embd, n_embd),
                "ln_2": nn.LayerNorm(n_embd), "c_fc": conv(n_embd, 4 * n_embd), "mlp_proj": conv(4 * n_embd, n_embd),
            }))
        self.ln_f = nn.LayerNorm(n_embd)

    @staticmethod
    def conv1d(x, p):
        size_out = x.size()[:-1] + (p["weight"].size(-1),)
        return torch.addmm(p["bias"], x.view(-1, x.size(-1)), p["weight"]).view(size_out)

    def forward(self, input_ids):
        b, t = input_ids.shape
        positions = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        h = self.wte(input_ids) + self.wpe(positions)
        presents = []
        for block in self.h:
            q, k, v = self.conv1d(block["ln_1"](h), block["c_attn"]).split(self.n_head * self.head_size, dim=2)
            q, k, v = (x.view(b, t, self.n_head, self.head_size).permute(0, 2, 1, 3) for x in (q, k, v))
            presents.append(torch.stack((k, v)))
            w = torch.matmul(q, k.transpose(-1, -2)) / (float(self.head_size) ** 0.5)
            causal = self.bias[:, :, 0:t, :t]
            w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
            a = torch.matmul(nn.functional.softmax(w, dim=-1), v)
            a = a.permute(0, 2, 1, 3).contiguous().view(b, t, self.n_head * self.head_size)
            h = h + self.conv1d(a, block["c_proj"])
            m = F.gelu(self.conv1d(block["ln_2"](h), block["c_fc"]), approximate="tanh")
            h = h + self.conv1d(m, block["mlp_proj"])
        return (self.ln_f(h), *presents)


def randomize_norms(model: nn.Module) -> None:
    """Give norm layers non-default parameters/statistics (deterministic: seeded by caller)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)


def build(ctor):
    torch.manual_seed(SEED)
    model = ctor()
    randomize_norms(model)
    return model.eval()


def example(shape):
    g = torch.Generator().manual_seed(SEED + 1)
    return torch.randn(*shape, generator=g)


def metadata(shapes):
    inputs = [{"name": "x" if len(shapes) == 1 else f"x{i}", "shape": list(s), "dtype": "float32"}
              for i, s in enumerate(shapes)]
    return json.dumps({"inputs": inputs}, sort_keys=True)


def save(module, name, shapes, eager):
    """Save, load back, run once and compare against the eager model."""
    path = os.path.join(HERE, name)
    torch.jit.save(module, path, _extra_files={"thunderc.json": metadata(shapes)})
    loaded = torch.jit.load(path)
    with torch.no_grad():
        for shape in shapes_to_check(name, shapes):
            x = example(shape)
            want = eager(x) if len(shape) == len(shapes[0]) else eager(x.unsqueeze(0)).squeeze(0)
            got = loaded(x)
            if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
                sys.exit(f"make_samples.py: {name}: loaded module disagrees with eager for input {list(shape)}")
    # An example input and LibTorch's output for it, so `thunderc run --expect` can check a compiled model.
    stem = os.path.join(HERE, name[:-3])
    x = example(shapes[0])
    numpy.save(stem + ".input.npy", x.numpy())
    numpy.save(stem + ".expected.npy", loaded(x).numpy())
    print(f"{name:<24} {os.path.getsize(path):>8} bytes  inputs {[list(s) for s in shapes]}")
    return path


def save_with_inputs(module, name, inputs, eager):
    """save() for models whose inputs are not one float tensor: `inputs` is a list of (name, tensor); each is
    written as <stem>.<name>.npy and every output as <stem>.expected<i>.npy."""
    path = os.path.join(HERE, name)
    meta = [{"name": n, "shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")} for n, x in inputs]
    torch.jit.save(module, path, _extra_files={"thunderc.json": json.dumps({"inputs": meta}, sort_keys=True)})
    loaded = torch.jit.load(path)
    args = [x for _, x in inputs]
    with torch.no_grad():
        got, want = loaded(*args), eager(*args)
    if isinstance(got, torch.Tensor):
        got, want = (got,), (want,)
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or not torch.allclose(g, w, rtol=1e-5, atol=1e-5):
            sys.exit(f"make_samples.py: {name}: loaded module disagrees with eager on output {i}")
    stem = os.path.join(HERE, name[:-3])
    for n, x in inputs:
        numpy.save(f"{stem}.{n}.npy", x.numpy())
    for i, g in enumerate(got):
        numpy.save(f"{stem}.expected{i}.npy", g.numpy())
    print(f"{name:<24} {os.path.getsize(path):>8} bytes  inputs {[(n, list(x.shape), str(x.dtype)) for n, x in inputs]}")
    return path


def shapes_to_check(name, shapes):
    # The any-rank scripted block is also checked on an unbatched [T,C] input (the else branch).
    if name == "gpt_block_scripted.pt":
        return [shapes[0], shapes[0][1:]]
    return [shapes[0]]


def op_kinds(module):
    frozen = torch.jit.freeze(module.eval())
    kinds = set()

    def walk(block):
        for node in block.nodes():
            kinds.add(node.kind())
            for b in node.blocks():
                walk(b)

    walk(frozen.graph)
    return sorted(kinds)


# --------------------------------------------------------------------------- main

def main(argv):
    show_ops = "--ops" in argv
    torch.set_grad_enabled(False)
    saved = []

    mlp = build(MLP)
    x = example((1, 64))
    saved.append(save(torch.jit.trace(mlp, x), "mlp.pt", [(1, 64)], mlp))
    saved.append(save(torch.jit.script(build(MLP)), "mlp_scripted.pt", [(1, 64)], mlp))

    cnn = build(SmallCNN)
    saved.append(save(torch.jit.trace(cnn, example((1, 3, 32, 32))), "cnn.pt", [(1, 3, 32, 32)], cnn))

    gpt = build(GPTBlock)
    saved.append(save(torch.jit.trace(gpt, example((1, 16, 64))), "gpt_block.pt", [(1, 16, 64)], gpt))
    try:
        scripted = torch.jit.script(GPTBlockAnyRank(build(GPTBlock)))
    except Exception as e:  # keep the other samples if scripting ever breaks
        print(f"gpt_block_scripted.pt    skipped: torch.jit.script failed: {e}")
    else:
        saved.append(save(scripted, "gpt_block_scripted.pt", [(1, 16, 64)], gpt))

    enc = build(EncoderLayer)
    saved.append(save(torch.jit.trace(enc, example((2, 12, 32))), "encoder_layer.pt", [(2, 12, 32)], enc))

    bert = build(TinyBert)
    g = torch.Generator().manual_seed(SEED + 1)
    ids = torch.randint(1, 96, (2, 12), generator=g)
    attention = torch.ones(2, 12, dtype=torch.long)
    attention[1, 9:] = 0  # the second sequence is padded: its last 3 keys are masked out
    ids[1, 9:] = 0
    saved.append(save_with_inputs(torch.jit.trace(bert, (ids, attention)), "bert_tiny.pt",
                                  [("input_ids", ids), ("attention_mask", attention)], bert))
    distil = build(TinyDistilBert)
    saved.append(save_with_inputs(torch.jit.trace(distil, (ids, attention)), "distilbert_tiny.pt",
                                  [("input_ids", ids), ("attention_mask", attention)], distil))
    gpt2 = build(TinyGPT2)
    saved.append(save_with_inputs(torch.jit.trace(gpt2, (ids,)), "gpt2_tiny.pt", [("input_ids", ids)], gpt2))

    total = sum(os.path.getsize(p) for p in saved)
    print(f"{'total':<24} {total:>8} bytes")

    if show_ops:
        for p in saved:
            print(f"\n{os.path.basename(p)}: " + " ".join(op_kinds(torch.jit.load(p))))


if __name__ == "__main__":
    main(sys.argv[1:])
