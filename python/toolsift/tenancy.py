"""Tenancy: per-caller statistics (``Index(statistics="caller")``).

A caller's own core index holds exactly the tools it may use, so its BM25 statistics (document
frequencies, average lengths, collection size) reveal nothing of the others. It is cut from a
core index that keeps every tool's term counts (``_core.Index.subset``) on the caller's first
query and cached per distinct permission set, within a byte bound, least recently used first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from . import _core
from .callers import PUBLIC, Masks, Perms
from .registry import Tool
from .text import field_columns

#: Default bound of the per-caller indexes an index keeps (``statistics="caller"``), in bytes of
#: core index memory; the least recently used are dropped first (see ``tenant_cache_bytes``).
TENANT_CACHE_BYTES = 256 * 2**20


class Scoring(NamedTuple):
    """What the core index was built with besides the tools: field weights and ``b``, ``k1`` and
    the prefix weight."""

    weights: list[float]
    bs: list[float]
    k1: float
    prefix_weight: float


class Tenant(NamedTuple):
    """A caller's own core index, the registry position of each of its tools (ascending), and
    the compiled caller of that index (which requires nothing)."""

    core: Any
    keep: np.ndarray
    everyone: Any


class Tenants:
    """The per-caller core indexes of one index, built on first use, cached within ``limit``
    bytes (the index just built is always kept, even alone past the bound)."""

    def __init__(
        self,
        core: Any,
        tools: Sequence[Tool],
        scoring: Scoring,
        masks: Masks,
        limit: int,
        learned: Mapping[str, str] | None = None,
    ) -> None:
        self._core, self._tools, self._scoring, self._masks = core, tools, scoring, masks
        self._learned = learned or {}
        self.limit = limit
        # the core index whose term counts the per-caller indexes are cut from: the index's own
        # when built with statistics="caller", else (after load, or a mode overridden at load)
        # one built from the tools on first use
        self._terms: Any = core if core.keeps_terms else None
        self.entries: OrderedDict[tuple[str, ...], tuple[Tenant, int]] = OrderedDict()
        """Permission set -> (its index, the bytes it holds), least recently used first."""
        self.bytes = 0
        """The sum of the cached entries' bytes."""
        self.builds = 0
        """How many per-caller indexes were built."""
        self._lock = threading.Lock()
        self._known: frozenset[str] | None = None  # see key

    def key(self, perms: Perms) -> tuple[str, ...]:
        """The cache key of a caller: the permissions it holds that some tool requires, sorted
        (one it holds that no tool requires changes no tool it may use, so callers that differ
        only in those, such as per-request claims, share one index)."""
        known = self._known
        if known is None:
            known = self._known = frozenset(self._core.permission_names())
        return tuple(sorted(known.intersection(perms.names)))

    def of(self, perms: Perms) -> Tenant:
        """The caller's own index, built now if it is not cached."""
        key = self.key(perms)
        with self._lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
                return found[0]
        keep = np.flatnonzero(self._core.allowed_mask(self._masks.of(perms))).astype(np.uint32)
        # the index an index of the allowed tools alone would be, cut from the term counts
        sub = self._term_counts().subset(keep)
        entry = Tenant(sub, keep, sub.caller([]))
        # the caller's mask holds two bits per tool of its index (allowed, candidates)
        self._remember(key, entry, sub.memory_bytes() + keep.nbytes + (len(keep) + 63) // 64 * 16)
        return entry

    def holds(self, perms: Perms) -> bool:
        """True when the caller's own index is built and cached."""
        key = self.key(perms)
        with self._lock:
            return key in self.entries

    def _term_counts(self) -> Any:
        """A core index of every tool that keeps their term counts."""
        if self._terms is None:  # two threads may both build it: the same index either way
            core, build, n = self._core, self._scoring, len(self._tools)
            self._terms = _core.Index(
                field_columns(self._tools, self._learned),
                build.weights,
                build.bs,
                [PUBLIC] * n,
                [core.cost(i) for i in range(n)],
                [core.is_core(i) for i in range(n)],
                k1=build.k1,
                prefix_weight=build.prefix_weight,
                keep_terms=True,
            )
        return self._terms

    def _remember(self, key: tuple[str, ...], entry: Tenant, size: int) -> None:
        """Caches ``entry`` as the most recently used, then drops the least recently used ones
        while the cache holds more than its bound (never ``entry`` itself)."""
        with self._lock:
            old = self.entries.pop(key, None)  # another thread built it meanwhile
            self.bytes += size - (0 if old is None else old[1])
            self.entries[key] = (entry, size)
            self.builds += 1
            while self.bytes > self.limit and len(self.entries) > 1:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.bytes -= dropped


def inside(keep: np.ndarray, scope: np.ndarray | None) -> np.ndarray | None:
    """The positions within a per-caller index (whose tools are the registry positions ``keep``,
    ascending) of the registry positions of ``scope`` it holds."""
    if scope is None:
        return None
    at = np.searchsorted(keep, scope)
    held = at < len(keep)
    at = at[held]
    found: np.ndarray = at[keep[at] == scope[held]].astype(np.uint32)
    return found
