"""Static embeddings: one vector per token, a text's vector the mean of its tokens' vectors.

No network, no matrix product per token: a query costs a tokenization and a gather (tens of
microseconds), a catalog of 10,000 tools well under a second. Quality is below a sentence encoder
(see ``benches/RESULTS.md``); the weights are the user's choice: :meth:`StaticEmbedder.from_folder`
reads a model2vec-style folder (``model.safetensors`` with one ``embeddings`` matrix, and
``tokenizer.json``), :meth:`StaticEmbedder.from_wordllama` the table shipped in the ``wordllama``
wheel, whose licence for the weights themselves is not stated (read the note there before use).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .errors import MissingExtraError

Array = Any  # float32 numpy arrays

CHUNK = 256
"""Texts pooled per numpy call."""


class StaticEmbedder:
    """Mean-pooled token vectors, L2-normalised. A text with no token (empty, or spaces only) gets
    the direction of the whole table's mean, so that every row is a unit vector.

    Args:
        vectors: ``(vocabulary size, dim)`` token vectors, any float dtype (kept as float32).
        tokenizer: A ``tokenizers.Tokenizer`` whose ids index ``vectors``.
        name: A label for reports.
    """

    def __init__(self, vectors: Array, tokenizer: Any, *, name: str = "static") -> None:
        self.vectors = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        self.tokenizer = tokenizer
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.name = name
        mean = self.vectors.mean(axis=0)
        self.blank = mean / max(float(np.linalg.norm(mean)), 1e-12)

    @property
    def dim(self) -> int:
        """Embedding size."""
        return int(self.vectors.shape[1])

    def embed(self, texts: list[str]) -> Array:
        """One unit row per text, float32."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encoded = self.tokenizer.encode_batch(texts, add_special_tokens=False) if texts else []
        for start in range(0, len(texts), CHUNK):  # a gather of a few MB at a time, not the whole set's
            ids = [np.asarray(e.ids, dtype=np.int64) for e in encoded[start : start + CHUNK]]
            ids = [i[(i >= 0) & (i < len(self.vectors))] for i in ids]
            lengths = np.array([len(i) for i in ids])
            rows = np.flatnonzero(lengths)
            if len(rows):
                starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[rows]
                sums = np.add.reduceat(self.vectors[np.concatenate(ids)], starts, axis=0)
                out[start + rows] = sums / lengths[rows, None]
        norms = np.linalg.norm(out, axis=1)
        empty = norms <= 1e-12
        out[empty], norms[empty] = self.blank, 1.0
        return (out / norms[:, None]).astype(np.float32)

    @classmethod
    def from_folder(cls, folder: str | Path, *, key: str = "embeddings") -> StaticEmbedder:
        """A model2vec-style folder: ``model.safetensors`` (matrix ``key``) and ``tokenizer.json``."""
        safetensors, tokenizers = _imports()
        folder = Path(folder)
        table = safetensors.load_file(str(folder / "model.safetensors"))[key]
        return cls(table, tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")), name=folder.name)

    @classmethod
    def from_wordllama(cls) -> StaticEmbedder:
        """WordLlama's ``l2_supercat`` table (256 dimensions, 32k Llama-2 tokens) from its wheel.

        Licence: the ``wordllama`` package is MIT; its weights were trained from the token
        embeddings of Llama 2 70B and other models sharing its tokenizer, and the package says
        nothing of the Llama 2 Community License for them. toolsift therefore does not install
        it (no extra) nor choose it by default: install ``wordllama`` yourself if that suits you.
        """
        import importlib.util

        spec = importlib.util.find_spec("wordllama")  # its files only: the package is not imported
        if spec is None or spec.origin is None:
            raise MissingExtraError("StaticEmbedder.from_wordllama needs the wordllama package: pip install wordllama")
        root = Path(spec.origin).parent
        safetensors, tokenizers = _imports()
        table = safetensors.load_file(str(root / "weights" / "l2_supercat_256.safetensors"))["embedding.weight"]
        tokenizer = tokenizers.Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
        return cls(table, tokenizer, name="wordllama l2_supercat 256")


def _imports() -> tuple[Any, Any]:
    try:
        import safetensors.numpy
        import tokenizers
    except ImportError:
        raise MissingExtraError("a static embedder needs the dense extra: pip install 'toolsift[dense]'") from None
    return safetensors.numpy, tokenizers
