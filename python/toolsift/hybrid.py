"""The ranking beyond the lexical side: the dense side fused with it, and the rerank hook.

With neither an embedder nor a reranker an index ranks lexically only, in one call into the
core; :attr:`Hybrid.lexical_only` says so and the index takes that path.
"""

from __future__ import annotations

import inspect
import numbers
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from . import _core
from .arguments import count, number
from .callers import Perms
from .dense import DenseIndex, Embedder, embed_tools, query_embedding, unit_rows
from .errors import InvalidParameterError
from .fusion import Reranker, fuse_arrays
from .lexical import Lexical
from .progress import Progress
from .query import Query
from .registry import Tool
from .results import Hit
from .text import dense_text

DENSE_OPTIONS = frozenset(inspect.signature(DenseIndex).parameters) - {"vectors"}
"""The keyword arguments of :class:`~toolsift.dense.DenseIndex` that ``dense_options`` may give."""
#: ``exact_below`` of a dense index no graph is built for: above any catalog's size.
EXACT_ALWAYS = 2**62
QUERY_CACHE = 4096
"""Query texts whose vectors a hybrid index keeps, least recently used dropped first (384
dimensions: about 6 MB of vectors)."""
QUERY_CACHE_CHARS = 4_000_000
"""The cached query texts hold at most this many characters in all (long messages count)."""


class Hybrid:
    """The dense index of the tools (with an embedder), the fusion weight ``alpha``, the rerank
    hook and the ``depth`` of candidates taken from each side. Without ``vectors`` the tools are
    embedded, reporting to ``progress`` (see :func:`~toolsift.dense.embed_tools`); with ``dense``
    (an index built with the same options on these vectors) that one is used; without ``graph``
    (per-caller statistics) none is built, so every dense search is exact.

    The vectors of the last :data:`QUERY_CACHE` query texts are kept: a conversation's query
    holds every earlier user message (:meth:`~toolsift.query.Query.from_messages`), so without
    them each turn would embed the whole history again. Each text is embedded on its own, so
    its vector is the same whether it was cached or not, and whatever else the query holds. The
    cache is kept per caller (permission set): how fast a query is answered never tells one
    caller what another has asked."""

    def __init__(
        self,
        tools: Sequence[Tool],
        names: list[str],
        embedder: Embedder | None,
        alpha: float,
        rerank: Reranker | None,
        depth: int,
        dense_options: Mapping[str, Any] | None,
        vectors: np.ndarray | None,
        progress: Progress | None = None,
        dense: DenseIndex | None = None,
        graph: bool = True,
    ) -> None:
        if not 0.0 <= number("alpha", alpha) <= 1.0:
            raise InvalidParameterError(f"alpha must be in [0, 1], not {alpha!r}")
        if rerank is not None and not callable(rerank):
            raise InvalidParameterError(
                f"rerank must be a function of (query, hits) or None, not {type(rerank).__name__}"
            )
        if embedder is not None and not callable(getattr(embedder, "embed", None)):
            raise InvalidParameterError(
                f"embedder must have an embed(texts) method (see toolsift.Embedder), not {type(embedder).__name__}"
            )
        self.embedder, self.alpha, self.rerank, self.depth = embedder, alpha, rerank, count("depth", depth)
        self.dense: DenseIndex | None = None
        unknown = sorted(set(dense_options or {}) - DENSE_OPTIONS)
        if unknown:
            raise InvalidParameterError(f"unknown dense_options {unknown}; they are {sorted(DENSE_OPTIONS)}")
        if embedder is not None and dense is not None:  # another index's, on the same vectors
            self.dense = dense
        elif embedder is not None:
            if vectors is None:
                vectors = embed_tools(embedder, [dense_text(t) for t in tools], names, progress)
            options = dict(dense_options or {})
            if not graph:  # tenant isolation: an approximate search of a graph holding the tools a
                # caller may not use depends on them; an exact one equals that of its tools alone
                options["exact_below"] = EXACT_ALWAYS
            self.dense = DenseIndex(vectors, **options)
        self._queries: OrderedDict[tuple[object, str], np.ndarray] = OrderedDict()
        self._cached_chars = 0
        self._lock = threading.Lock()

    def query_vector(self, text: str, caller: object = None) -> np.ndarray:
        """The unit vector of one query text, embedded alone, from ``caller``'s cache (a
        :class:`~toolsift.callers.Perms` key) when there."""
        key = (caller, text)
        with self._lock:
            found = self._queries.get(key)
            if found is not None:
                self._queries.move_to_end(key)
                return found
        if self.embedder is None:
            raise InvalidParameterError("this index has no embedder")
        rows = unit_rows(query_embedding(self.embedder)([text]), "embedder output")
        if rows.shape[0] != 1:
            raise InvalidParameterError(f"embedder output: {rows.shape[0]} rows for one query text")
        vector: np.ndarray = rows[0]
        vector.flags.writeable = False  # shared by every later query of the same text
        with self._lock:
            if key not in self._queries:
                self._cached_chars += len(text)
            self._queries[key] = vector
            while self._queries and (len(self._queries) > QUERY_CACHE or self._cached_chars > QUERY_CACHE_CHARS):
                (_, dropped), _ = self._queries.popitem(last=False)
                self._cached_chars -= len(dropped)
        return vector

    @property
    def lexical_only(self) -> bool:
        """True without a dense side and a reranker."""
        return self.dense is None and self.rerank is None

    def rank(
        self, lexical: Lexical, tools: Sequence[Tool], query: Query, perms: Perms, depth: int, scope: np.ndarray | None
    ) -> list[Hit]:
        """Lexical, then dense, fused, then reranked: the top ``depth`` tools the caller may use
        (among the positions of ``scope``, when given)."""
        positions, scores = lexical.search(list(query.parts), perms, depth, scope)
        # the pieces with words: a query of none matches nothing on either side
        worded = [(t, w) for t, w in query.parts if w > 0 and _core.tokenize(t)]
        if self.dense is not None and self.embedder is not None and worded:
            texts, weights = zip(*worded, strict=True)
            vectors = np.stack([self.query_vector(t, perms.key) for t in texts])
            combined = (np.asarray(weights, dtype=np.float32)[:, None] * vectors).sum(axis=0)
            if np.any(combined):
                allowed = lexical.core.allowed_mask(lexical.scoped(perms, scope))
                dense = self.dense.search(combined, depth, allowed)
                positions, scores = fuse_arrays((positions, scores), dense, self.alpha)
        ranked = zip(positions[:depth].tolist(), scores[:depth].tolist(), strict=True)
        hits = [Hit(tools[i], i, s) for i, s in ranked]
        if self.rerank is not None:
            hits = _reranked(self.rerank(query, hits), tools, {h.position for h in hits})
        return hits


def _reranked(result: object, tools: Sequence[Tool], offered: set[int]) -> list[Hit]:
    """A rerank hook's ``result`` as hits: in its order, each of ``offered`` once, each hit
    rebuilt from its position (a hook can reorder and drop, never add, repeat or swap in
    another tool), and refused with :class:`~toolsift.errors.InvalidParameterError` unless it
    is a sequence of :class:`~toolsift.Hit`."""
    if isinstance(result, (str, bytes)) or not isinstance(result, Iterable):
        raise InvalidParameterError(f"rerank must return a list of Hits, not {type(result).__name__}")
    out: list[Hit] = []
    for h in result:
        if not isinstance(h, Hit) or type(h.position) is not int:
            raise InvalidParameterError(f"rerank must return a list of Hits, not one holding {type(h).__name__}")
        if isinstance(h.score, bool) or not isinstance(h.score, numbers.Real):
            raise InvalidParameterError(f"rerank gave position {h.position} a score of type {type(h.score).__name__}")
        if h.position in offered:
            offered.discard(h.position)
            out.append(Hit(tools[h.position], h.position, float(h.score)))
    return out
