"""The lexical side: the Rust core's BM25F ranking and packing, asked for one caller.

With shared statistics a query runs on the index of every tool under the caller's mask; with
per-caller statistics (:mod:`toolsift.tenancy`) on the caller's own index, whose positions are
mapped back to registry positions. Either way only the caller's tools are ever scored. A
``scope`` (registry positions, ascending) narrows the tools ranked to those of some groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from .callers import Masks, Perms
from .results import Packed
from .tenancy import Tenants, inside

Parts = str | list[tuple[str, float]]
"""A query as the core takes it (see :func:`toolsift.arguments.query_parts`)."""
Ranking = tuple[np.ndarray, np.ndarray]
"""Registry positions (``uint32``) and their scores (``float32``), best first."""


class Lexical:
    """The core index answering for one caller at a time."""

    def __init__(self, core: _core.Index, masks: Masks, tenants: Tenants | None) -> None:
        self.core, self.masks, self.tenants = core, masks, tenants

    def search(self, parts: Parts, perms: Perms, k: int, scope: np.ndarray | None = None) -> Ranking:
        """The core's ``k`` best tools for the caller, among the registry positions of ``scope``
        (``None``: every tool)."""
        if self.tenants is None:
            found: Ranking = self.core.search(parts, self.scoped(perms, scope), k)
            return found
        sub, keep, everyone = self.tenants.of(perms)
        positions, scores = sub.search(parts, _within(sub, everyone, inside(keep, scope)), k)
        return keep[positions], scores

    def select(self, parts: Parts, perms: Perms, tokens: int, cap: int | None, scope: np.ndarray | None) -> Packed:
        """The core's packing of the caller's best tools (core tools first) within ``tokens``."""
        if self.tenants is None:
            packed: Packed = self.core.select(parts, self.scoped(perms, scope, True), tokens, cap)
            return packed
        sub, keep, everyone = self.tenants.of(perms)
        mask = _within(sub, everyone, inside(keep, scope), True)
        sel, num_core, used, dropped, over, cheapest = sub.select(parts, mask, tokens, cap)
        return tuple(keep[list(sel)].tolist()), num_core, used, tuple(keep[list(dropped)].tolist()), over, cheapest

    def pack(self, order: np.ndarray, perms: Perms, tokens: int, cap: int | None, scope: np.ndarray | None) -> Packed:
        """The core's packing of a ranking made here (``order``: registry positions, best first);
        the core checks each position against the caller again."""
        packed: Packed = self.core.select_ranked(order, self.scoped(perms, scope, True), tokens, cap)
        return packed

    def search_many(self, parts: Sequence[Parts], perms: Perms, k: int) -> list[Ranking]:
        """:meth:`search` of each query in one call into the core (shared statistics only)."""
        batch: list[Ranking] = self.core.search_many(list(parts), self.masks.of(perms), k)
        return batch

    def select_many(self, parts: Sequence[Parts], perms: Perms, tokens: int, cap: int | None) -> list[Packed]:
        """:meth:`select` of each query in one call into the core (shared statistics only)."""
        batch: list[Packed] = self.core.select_many(list(parts), self.masks.of(perms), tokens, cap)
        return batch

    def evidence(self, parts: Parts, perms: Perms, positions: list[int]) -> list[float]:
        """The relevance gate's evidence of the tools at ``positions``, with the caller's own
        statistics in tenant mode."""
        if self.tenants is None:
            found: list[float] = self.core.evidence(parts, positions)
            return found
        sub, keep, _ = self.tenants.of(perms)
        found = sub.evidence(parts, np.searchsorted(keep, positions).tolist())
        return found

    def allowed(self, perms: Perms) -> np.ndarray:
        """One bool per registry position: may the caller use that tool."""
        mask: np.ndarray = self.core.allowed_mask(self.masks.of(perms))
        return mask

    def allows(self, perms: Perms, position: int) -> bool:
        """True when the caller may use the tool at ``position``."""
        return bool(self.core.allows(self.masks.of(perms), position))

    def scoped(self, perms: Perms, scope: np.ndarray | None, keep_core: bool = False) -> Any:
        """The caller's mask of the shared index narrowed to ``scope`` (see :func:`_within`)."""
        return _within(self.core, self.masks.of(perms), scope, keep_core)


def _within(core: Any, mask: Any, scope: np.ndarray | None, keep_core: bool = False) -> Any:
    """``mask`` narrowed to the positions of ``scope`` of ``core`` (the core tools kept with
    ``keep_core``: a selection holds them whatever the query); ``None``: ``mask`` itself."""
    return mask if scope is None else core.within(mask, scope, keep_core)
