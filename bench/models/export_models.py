#!/usr/bin/python3
"""Exports the side-by-side models with random weights from a fixed seed.

For each model: DIR/<name>.onnx, DIR/<name>.input.npy (the feed) and
DIR/<name>.reference.npy (PyTorch's output on it, the accuracy reference).
    export_models.py DIR [NAME...]
Uses Debian's python3-torch 1.13 and python3-torchvision.
"""
import math
import os
import sys

import numpy as np
import torch
import torchvision

SEED = 20261123
OPSET = 14  # LayerNorm exports as ReduceMean/Sub/Pow/Sqrt/Div before 17.


class EncoderLayer(torch.nn.Module):
    """One BERT-style encoder layer written out (torch's fused
    TransformerEncoderLayer does not export): self-attention with a padding
    mask, residual + LayerNorm, Erf-GELU feed-forward, residual + LayerNorm."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.out = torch.nn.Linear(hidden, hidden)
        self.norm1 = torch.nn.LayerNorm(hidden)
        self.ffn_in = torch.nn.Linear(hidden, ffn)
        self.ffn_out = torch.nn.Linear(ffn, hidden)
        self.norm2 = torch.nn.LayerNorm(hidden)

    def forward(self, x, mask_bias):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=-1)
        def heads(t):
            return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        attn = torch.softmax(scores + mask_bias, dim=-1)
        ctx = (attn @ v).transpose(1, 2).reshape(b, s, h)
        x = self.norm1(x + self.out(ctx))
        y = self.ffn_out(torch.nn.functional.gelu(self.ffn_in(x)))
        return self.norm2(x + y)


class Encoder(torch.nn.Module):
    """A BERT-style encoder: token + position embeddings (Gather), LayerNorm,
    `layers` encoder layers; input token ids and an attention mask."""

    def __init__(self, vocab=8000, hidden=256, heads=4, ffn=1024, layers=4,
                 max_len=512):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, hidden)
        self.positions = torch.nn.Embedding(max_len, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.layers = torch.nn.ModuleList(
            [EncoderLayer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tokens(input_ids) + self.positions(positions))
        mask_bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x


class TwoTowers(torch.nn.Module):
    """Two independent towers of `depth` Linear + GELU layers over one input,
    added at the end: independent branches, where inter-op parallelism is
    the difference."""

    def __init__(self, width=512, depth=6):
        super().__init__()
        def tower():
            layers = []
            for _ in range(depth):
                layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
            return torch.nn.Sequential(*layers)
        self.left, self.right = tower(), tower()

    def forward(self, x):
        return self.left(x) + self.right(x)


def export(model, name, feeds, out_dir, dynamic):
    model.eval()
    names = list(feeds)
    with torch.no_grad():
        reference = model(*feeds.values())
        torch.onnx.export(model, tuple(feeds.values()),
                          os.path.join(out_dir, name + ".onnx"),
                          opset_version=OPSET, input_names=names,
                          output_names=["output"], dynamic_axes=dynamic)
    for feed_name, value in feeds.items():
        np.save(os.path.join(out_dir, f"{name}.{feed_name}.npy"),
                value.numpy())
    np.save(os.path.join(out_dir, name + ".reference.npy"), reference.numpy())
    print("exported", name, file=sys.stderr)


MODELS = ["resnet18", "resnet18_b8", "mobilenet_v2", "squeezenet1_1",
          "bert_encoder", "two_towers"]


def build(name):
    """The model `name` with its seeded weights, its feeds and the dynamic
    axes of its export (the same every call)."""
    torch.manual_seed(SEED)
    if name == "bert_encoder":
        model = Encoder().eval()
        ids = torch.randint(0, 8000, (1, 128))
        mask = torch.ones(1, 128, dtype=torch.int64)
        mask[0, 100:] = 0  # The last 28 tokens are padding.
        return model, {"input_ids": ids, "attention_mask": mask}, {
            "input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
            "output": {0: "batch", 1: "sequence"}}
    if name == "two_towers":
        model = TwoTowers().eval()
        return model, {"input": torch.randn(64, 512)}, {
            "input": {0: "batch"}, "output": {0: "batch"}}
    # "resnet18_b8": ResNet-18's weights (the same seed) on a batch of 8.
    base, _, batch = name.partition("_b")
    model = getattr(torchvision.models, base)(weights=None).eval()
    image = torch.randn(int(batch or 1), 3, 224, 224)
    return model, {"input": image}, {"input": {0: "batch"},
                                     "output": {0: "batch"}}


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        model, feeds, dynamic = build(name)
        export(model, name, feeds, out_dir, dynamic)


if __name__ == "__main__":
    main()
