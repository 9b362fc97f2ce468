"""Retrieval systems compared by the evaluation: toolsift and public baselines.

A system is built once per dataset and then maps a query to tool names, best first. Baselines see
the same text per tool as toolsift indexes (name, description, parameter text, examples, search
text) and use their libraries' own tokenizers and defaults; each is skipped when its package is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dense import DenseIndex, Embedder, default_embedder, embed_tools, query_embedding
from ..errors import InvalidParameterError, ToolsiftError
from ..index import Index
from ..text import dense_text, tool_fields
from .datasets import Dataset, LabelledQuery

Ranker = Callable[[LabelledQuery, int], list[str]]


@dataclass
class System:
    """A named ranker over one dataset's catalog."""

    name: str
    rank: Ranker
    index: Index | None = None
    """The toolsift index behind the system, when there is one (for budgeted selections)."""
    caller: list[str] | None = None
    """The permissions the index is asked with (``None``: an index of the dataset's
    unrestricted catalog, which needs none)."""


def _corpus(dataset: Dataset) -> list[str]:
    # every text toolsift indexes of a tool (name, description, parameter text, examples, search
    # text), learned text aside: one string for the baselines' own tokenizers
    return [" ".join(text for text in tool_fields(t)[:5] if text) for t in dataset.catalog]


def toolsift_system(dataset: Dataset, *, saved: Index | None = None, **index_options: Any) -> System:
    """toolsift's lexical index with default (or given) options; or ``saved``, an index saved
    from the dataset's tools (its options, learned text and gate as saved), asked as a caller
    holding every permission, so that every tool is ranked as in an unrestricted catalog."""
    if saved is not None and index_options:
        raise InvalidParameterError("give a saved index or index options, not both")
    index = Index(dataset.catalog, **index_options) if saved is None else saved
    caller = None if saved is None else list(saved.permissions())

    def rank(q: LabelledQuery, k: int) -> list[str]:
        return [h.tool.name for h in index.search(q.text, k=k, caller=caller)]

    return System("toolsift", rank, index, caller)


def bm25s_system(dataset: Dataset) -> System | None:
    """bm25s with English stop words (its documented default usage)."""
    try:
        import bm25s
    except ImportError:
        return None
    names = dataset.catalog.names
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(_corpus(dataset), stopwords="en", show_progress=False), show_progress=False)

    def rank(q: LabelledQuery, k: int) -> list[str]:
        tokens = bm25s.tokenize([q.text], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = retriever.retrieve(tokens, k=min(k, len(names)), show_progress=False)
        return [names[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return System("bm25s", rank)


def rank_bm25_system(dataset: Dataset) -> System | None:
    """rank_bm25's BM25Okapi over lower-cased whitespace tokens (its README usage)."""
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return None
    names = dataset.catalog.names
    bm25 = BM25Okapi([text.lower().split() for text in _corpus(dataset)])

    def rank(q: LabelledQuery, k: int) -> list[str]:
        scores = bm25.get_scores(q.text.lower().split())
        top = np.argsort(-scores, kind="stable")[:k]
        return [names[int(i)] for i in top if scores[i] > 0]

    return System("rank_bm25", rank)


class CachedEmbedder:
    """Remembers embeddings by text, so that several systems of one run embed each text once."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing), strict=True))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)


_EMBEDDER: list[CachedEmbedder] = []


def _shared_embedder() -> CachedEmbedder | None:
    if not _EMBEDDER:
        try:
            _EMBEDDER.append(CachedEmbedder(default_embedder()))
        except ToolsiftError:
            return None
    return _EMBEDDER[0]


def dense_system(dataset: Dataset) -> System | None:
    """The default embedder alone (exact cosine top-k), the dense baseline."""
    embedder = _shared_embedder()
    if embedder is None:
        return None
    names = dataset.catalog.names
    dense = DenseIndex(embed_tools(embedder, [dense_text(t) for t in dataset.catalog], names), exact_below=10**9)

    def rank(q: LabelledQuery, k: int) -> list[str]:
        positions, _ = dense.search(embedder.embed([q.text]), k)
        return [names[i] for i in positions.tolist()]

    return System("MiniLM dense", rank)


def hybrid_system(dataset: Dataset) -> System | None:
    """toolsift with the default embedder: lexical and dense, fused; the tool vectors from the
    shared cache, each query embedded by the index in the timed call (a text it saw before from
    its own query cache, as in use), so its latency holds the query's embedding whichever
    systems ran before it (the dense row's would otherwise be reused)."""
    embedder = _shared_embedder()
    if embedder is None:
        return None
    system = toolsift_system(dataset, embedder=_QueriesThrough(embedder, embedder.inner))
    system.name = "toolsift hybrid"
    return system


class _QueriesThrough:
    """Tool texts through ``tools`` (the shared float32 cache), query texts through ``queries``."""

    def __init__(self, tools: Embedder, queries: Embedder) -> None:
        self.embed, self.embed_query = tools.embed, query_embedding(queries)


def hybrid_int8_system(dataset: Dataset) -> System | None:
    """The hybrid with ``default_embedder("int8")``: the same float32 tool vectors, each query
    embedded through int8 weights by the index in the timed call (a text it saw before from its
    own query cache), so its latency holds the query's embedding."""
    tools = _shared_embedder()
    if tools is None:
        return None
    system = toolsift_system(dataset, embedder=_QueriesThrough(tools, default_embedder("int8")))
    system.name = "toolsift hybrid int8"
    return system


BASELINES: dict[str, Callable[[Dataset], System | None]] = {
    "bm25s": bm25s_system,
    "rank_bm25": rank_bm25_system,
    "dense": dense_system,
    "hybrid": hybrid_system,
    "hybrid-int8": hybrid_int8_system,
}
