"""Fusion of the lexical and dense rankings, and the rerank hook.

:func:`fuse` is a convex combination of standardised scores: each side's scores over its top
``depth`` become z-scores (minus that side's mean, over its standard deviation), a tool missing
from one side's top counts as that side's lowest z-score (it ranked no better than the last one
shown, not infinitely worse), and ``alpha`` weighs the lexical side. Standardising makes the rule
blind to each side's scale and offset: a BM25 score of 12 and a cosine of 0.4 enter on the
spread of their own side. The earlier rule (:func:`fuse_max`: divide by the best score, a
missing tool scores 0) pulled a tool found by one side only far down. Ties break by registry
position. ``python benches/fusion.py`` compares the rules on BFCL on identical inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from .arguments import number
from .errors import InvalidParameterError
from .query import Query
from .results import Hit

Ranking = Sequence[tuple[int, float]]
"""``(registry position, score)`` pairs, best first."""

Reranker = Callable[["Query", list["Hit"]], Sequence["Hit"]]
"""``rerank(query, hits) -> hits`` reorders (or drops) the top hits; it cannot add tools."""

DEFAULT_ALPHA = 0.7


def _positions(values: ArrayLike, side: str) -> np.ndarray:
    """Registry positions as the core takes them (uint32), refusing any that would not fit."""
    wrong = InvalidParameterError(f"{side} positions must be integers from 0 to 2**32 - 1")
    try:
        array = np.asarray(values)
    except (OverflowError, ValueError, TypeError):
        raise wrong from None
    if array.ndim != 1:
        raise InvalidParameterError(f"{side} positions must be one list, not an array of {array.ndim} dimensions")
    if array.dtype == np.uint32:
        return np.ascontiguousarray(array)
    if array.size and (array.dtype.kind not in "iu" or array.min() < 0 or array.max() > np.iinfo(np.uint32).max):
        raise wrong
    return array.astype(np.uint32)


def _scores(values: ArrayLike, side: str, n: int) -> np.ndarray:
    """One side's scores as float64, one per position (numbers, not ``None`` or text)."""
    wrong = InvalidParameterError(f"{side} scores must be numbers")
    try:
        array = np.asarray(values)
    except (OverflowError, ValueError, TypeError):
        raise wrong from None
    if array.dtype.kind not in "biuf":
        raise wrong
    array = np.ascontiguousarray(array, np.float64)
    if array.shape != (n,):
        raise InvalidParameterError(f"{side} scores must be {n} numbers, one per position, not shape {array.shape}")
    return array


def fuse_arrays(
    lexical: tuple[ArrayLike, ArrayLike], dense: tuple[ArrayLike, ArrayLike], alpha: float = DEFAULT_ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fuse` on ``(positions, scores)`` arrays, each side's positions distinct: the fused
    positions (uint32) and scores (float64), best first. The per-request path of a hybrid index,
    computed by the core (``rust/fusion.rs``)."""
    if not 0.0 <= number("alpha", alpha) <= 1.0:
        raise InvalidParameterError(f"alpha must be in [0, 1], not {alpha!r}")
    sides = []
    for (p, s), name in ((lexical, "lexical"), (dense, "dense")):
        at = _positions(p, name)
        sides.append((at, _scores(s, name, len(at))))
    positions, scores = _core.fuse(sides[0], sides[1], float(alpha))
    return positions, scores


def fuse_numpy(
    lexical: tuple[np.ndarray, np.ndarray], dense: tuple[np.ndarray, np.ndarray], alpha: float = DEFAULT_ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fuse_arrays` in numpy, as hybrid indexes ran it before the core did: the reference
    the core's fusion is tested against (the same scores bit for bit for finite scores, but a
    flat side's zeros, which numpy may sign; a side with a non-finite score is flat in the core,
    NaN here) and timed against (``benches/dense_exact.py --compare steps``)."""

    def standardised(scores: np.ndarray) -> tuple[np.ndarray, float]:
        if not len(scores):
            return scores, 0.0
        spread = float(scores.std())
        z = (scores - scores.mean()) / spread if spread > 1e-12 * max(1.0, float(np.abs(scores).max())) else scores * 0
        return z, float(z.min())

    def aligned(positions: np.ndarray, z: np.ndarray, low: float, union: np.ndarray) -> np.ndarray:
        out = np.full(len(union), low)
        out[np.searchsorted(union, positions)] = z
        return out

    (pa, sa), (pb, sb) = ((np.asarray(p, np.int64), np.asarray(s, np.float64)) for p, s in (lexical, dense))
    (za, a_low), (zb, b_low) = standardised(sa), standardised(sb)
    union = np.union1d(pa, pb)
    scores = alpha * aligned(pa, za, a_low, union) + (1 - alpha) * aligned(pb, zb, b_low, union)
    order = np.lexsort((union, -scores))  # score descending, then registry position
    return union[order], scores[order]


def fuse(lexical: Ranking, dense: Ranking, alpha: float = DEFAULT_ALPHA) -> list[tuple[int, float]]:
    """One ranking from a lexical and a dense one: ``alpha · z_lexical + (1 - alpha) · z_dense``,
    a tool missing from a side at that side's lowest z-score. Each side lists a tool once."""
    sides = [([p for p, _ in r], [s for _, s in r]) for r in (lexical, dense)]
    positions, scores = fuse_arrays(sides[0], sides[1], alpha)
    return list(zip(positions.tolist(), scores.tolist(), strict=True))


def _normalised(ranking: Ranking) -> dict[int, float]:
    best = max((s for _, s in ranking), default=0.0)
    if best <= 0:
        return {}
    return {p: max(s, 0.0) / best for p, s in ranking}


def fuse_max(lexical: Ranking, dense: Ranking, alpha: float = DEFAULT_ALPHA) -> list[tuple[int, float]]:
    """The earlier rule, for comparison: ``alpha · lexical / best + (1 - alpha) · dense / best``,
    a tool missing from a side scoring 0 there (cosines below zero count as zero)."""
    a, b = _normalised(lexical), _normalised(dense)
    scores = {p: alpha * a.get(p, 0.0) + (1 - alpha) * b.get(p, 0.0) for p in a.keys() | b.keys()}
    return sorted(scores.items(), key=lambda ps: (-ps[1], ps[0]))


def rrf(lexical: Ranking, dense: Ranking, k: int = 60) -> list[tuple[int, float]]:
    """Reciprocal rank fusion (Cormack et al., 2009), for comparison."""
    scores: dict[int, float] = {}
    for ranking in (lexical, dense):
        for rank, (p, _) in enumerate(ranking):
            scores[p] = scores.get(p, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores.items(), key=lambda ps: (-ps[1], ps[0]))
