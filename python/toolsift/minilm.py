"""A BERT sentence encoder (all-MiniLM-L6-v2 and its kin) run with numpy alone.

The weights come from a sentence-transformers model folder (``config.json``, ``model.safetensors``,
``tokenizer.json``); tokenization uses the ``tokenizers`` library and the forward pass is plain
numpy in float32: embeddings, ``num_hidden_layers`` transformer blocks, mean pooling over the
attention mask and L2 normalisation, as sentence-transformers does for this model family.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

Array = Any  # float32 numpy arrays; numpy arithmetic is untyped


def _erf(x: Array) -> Array:
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26); numpy has none built in."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


def _gelu(x: Array) -> Array:
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(np.float32)


def _layer_norm(x: Array, w: Array, b: Array, eps: float) -> Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + eps) * w + b).astype(np.float32)


class MiniLM:
    """Sentence embeddings from a BERT-style sentence-transformers folder.

    Args:
        folder: Path holding ``config.json``, ``model.safetensors`` and ``tokenizer.json``.
        max_tokens: Inputs are truncated to this many word pieces.
        batch_size: Texts encoded per forward pass.
    """

    def __init__(self, folder: str | Path, *, max_tokens: int = 256, batch_size: int = 32) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.config = json.loads((folder / "config.json").read_text())
        raw = load_file(str(folder / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.enable_padding()
        self.batch_size = batch_size
        self.name = folder.name

    @property
    def dim(self) -> int:
        """Embedding size."""
        return int(self.config["hidden_size"])

    def embed(self, texts: list[str]) -> Array:
        """Unit-length embeddings, one row per text, float32."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._encode([texts[i] for i in batch])
        return out

    def _encode(self, texts: list[str]) -> Array:
        enc = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        w, eps = self.w, float(self.config.get("layer_norm_eps", 1e-12))
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: ids.shape[1]]
        x = x + w["embeddings.token_type_embeddings.weight"][types]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        for layer in range(int(self.config["num_hidden_layers"])):
            x = self._block(x, bias, f"encoder.layer.{layer}.", eps)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _dense(self, x: Array, name: str) -> Array:
        return (x @ self.w[name + ".weight"].T + self.w[name + ".bias"]).astype(np.float32)

    def _block(self, x: Array, bias: Array, p: str, eps: float) -> Array:
        batch, length, hidden = x.shape
        heads = int(self.config["num_attention_heads"])
        size = hidden // heads

        def split(t: Array) -> Array:
            return t.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

        q = split(self._dense(x, p + "attention.self.query"))
        k = split(self._dense(x, p + "attention.self.key"))
        v = split(self._dense(x, p + "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        attn = self._dense(ctx, p + "attention.output.dense")
        x = _layer_norm(
            x + attn,
            self.w[p + "attention.output.LayerNorm.weight"],
            self.w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        h = _gelu(self._dense(x, p + "intermediate.dense"))
        out = self._dense(h, p + "output.dense")
        return _layer_norm(x + out, self.w[p + "output.LayerNorm.weight"], self.w[p + "output.LayerNorm.bias"], eps)
