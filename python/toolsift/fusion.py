"""Fusion of the lexical and dense rankings, and the rerank hook.

:func:`fuse` is a convex combination of max-normalised scores: each side's scores are divided by
that side's best score (cosines below zero count as zero), a tool missing from one side scores 0
there, and ``alpha`` weighs the lexical side. On the BFCL dev set this is at least as good as the
better input on every category at ``alpha = 0.65`` (at 0.5 the dense side drags down the long,
multi-request queries of one category), where reciprocal rank fusion loses to BM25 on some (see
README, Evaluation). Ties break by registry position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .index import Hit
    from .query import Query

Ranking = Sequence[tuple[int, float]]
"""``(registry position, score)`` pairs, best first."""

Reranker = Callable[["Query", list["Hit"]], Sequence["Hit"]]
"""``rerank(query, hits) -> hits`` reorders (or drops) the top hits; it cannot add tools."""

DEFAULT_ALPHA = 0.65


def _normalised(ranking: Ranking) -> dict[int, float]:
    best = max((s for _, s in ranking), default=0.0)
    if best <= 0:
        return {}
    return {p: max(s, 0.0) / best for p, s in ranking}


def fuse(lexical: Ranking, dense: Ranking, alpha: float = DEFAULT_ALPHA) -> list[tuple[int, float]]:
    """One ranking from a lexical and a dense one: ``alpha · lexical + (1 - alpha) · dense``."""
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
