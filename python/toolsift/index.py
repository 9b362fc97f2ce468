"""The index: ranked search and budgeted selection over a catalog, scored in the Rust core.

The core scores only the tools the caller may use (the permission mask is applied before BM25), so a
forbidden tool is never scored, returned, counted toward a budget or named anywhere.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import EllipsisType
from typing import Any, NamedTuple

import numpy as np

from . import _core
from ._core import DEFAULT_K1, DEFAULT_PREFIX_WEIGHT
from .assemble import Selection, default_token_count
from .dense import DenseIndex, Embedder, unit_rows
from .errors import (
    InvalidParameterError,
    InvalidToolError,
    PoisonedToolError,
    UnknownPermissionError,
    UnknownToolError,
)
from .fusion import DEFAULT_ALPHA, Reranker, fuse
from .intents import INTENT_EVIDENCE, INTENT_PROBE, clauses, interleave
from .plan import default_group, namespace
from .query import Query, check_text
from .registry import Catalog, Tool, name_arg
from .scan import Finding
from .scan import scan as scan_tools
from .text import dense_text, field_columns, field_params

Caller = Iterable[str] | str | None
"""Permissions a caller holds: an iterable of strings, one string, or ``None`` (public tools only).
A mapping is refused (:class:`~toolsift.errors.InvalidParameterError`): ``{"p": False}`` does not
say whether ``p`` is held."""

log = logging.getLogger("toolsift.index")

UNLIMITED = 2**64 - 1
_PUBLIC: tuple[str, ...] = ()
RESERVED = "toolsift:"
WITHHELD = RESERVED + "withheld"  # held by no caller: a tool that needs it is indexed, never emitted
#: Default bound of the per-caller indexes an index keeps (``statistics="caller"``), in bytes of
#: core index memory; the least recently used are dropped first (see ``tenant_cache_bytes``).
TENANT_CACHE_BYTES = 256 * 2**20


class Hit(NamedTuple):
    """One ranked search result."""

    tool: Tool
    position: int
    score: float


class _Scoring(NamedTuple):
    """What the core index was built with besides the tools: field weights and ``b``, ``k1`` and
    the prefix weight."""

    weights: list[float]
    bs: list[float]
    k1: float
    prefix_weight: float


_TenantEntry = tuple[Any, np.ndarray, Any]
"""A per-caller core index, the registry position of each of its tools, and its caller."""

Groups = str | Iterable[str] | None
"""The groups a search or selection is limited to: a group's name, several, or ``None`` (all)."""


class _GroupTable(NamedTuple):
    """Every tool's group: the group names (sorted), each tool's group id, each group's tools."""

    names: tuple[str, ...]
    of: np.ndarray  # group id per registry position
    ids: Mapping[str, int]
    members: tuple[np.ndarray, ...]  # registry positions per group id, ascending


class Perms(NamedTuple):
    """A caller's permissions after validation: plain strings, and the key its caches use."""

    names: tuple[str, ...]
    key: str | tuple[str, ...]


def _join(perms: Sequence[Any]) -> str | None:
    """The permissions joined by NUL, or None when one is not a string. Joining reads each
    string's own characters, so a ``str`` subclass cannot lie its way into another caller's cache
    entry through ``__eq__`` or ``__hash__``."""
    try:
        return "\0".join(perms)
    except TypeError:
        return None


def _caller(caller: Caller) -> Perms:
    # The very same tuple or frozenset seen before (only those are stored): same strings, so the
    # same answer. The entry holds the object, so its id cannot be reused by another while cached.
    seen = _BY_ID.get(id(caller))
    if seen is not None and seen[0] is caller:
        return seen[1]
    found = _validate(caller)
    if type(caller) in (tuple, frozenset):
        if len(_BY_ID) >= MAX_CALLERS:
            _BY_ID.clear()
        _BY_ID[id(caller)] = (caller, found)
    return found


def _validate(caller: Caller) -> Perms:
    perms: Sequence[Any]
    if caller is None:
        perms = ()
    elif isinstance(caller, str):
        perms = (caller,)
    elif type(caller) in (list, tuple):  # exact types: a subclass could lie in __len__
        perms = caller  # type: ignore[assignment]
    elif isinstance(caller, Mapping):  # {"billing.refund": False} would grant it: say so instead
        raise InvalidParameterError(
            "caller must be permission strings, not a mapping: pass the permissions held, e.g. "
            "[p for p, held in caller.items() if held]"
        )
    else:
        try:
            perms = list(caller)
        except TypeError:
            kind = type(caller).__name__
            raise InvalidParameterError(f"caller must be strings, a string or None, not {kind}") from None
    key = _join(perms)
    found = None if key is None else _VALID.get(key)
    # Validated before. Only callers whose strings hold no NUL are stored under their joined
    # key, so one with as many strings and the same joined text has the very same strings.
    if found is not None and len(found.names) == len(perms):
        return found
    for p in perms:
        if not isinstance(p, str):
            raise InvalidParameterError(f"caller permissions must be strings, found {type(p).__name__}")
    # plain strings only from here on: a str subclass could lie in __eq__, __hash__ or startswith
    names = tuple(str.__str__(p) for p in perms)
    for p in names:
        if p.startswith(RESERVED):
            raise InvalidParameterError(f"permissions starting with {RESERVED!r} are reserved, found {p!r}")
        check_text("a caller permission", p)
    # stored under the joined text only when it is unambiguous (no string holds a NUL)
    found = Perms(names, key if key is not None and key.count("\0") == len(names) - 1 else names)
    if len(_VALID) >= MAX_CALLERS:
        _VALID.clear()
    _VALID[found.key] = found
    return found


#: Most distinct callers whose validation (and compiled mask, per index) is remembered.
MAX_CALLERS = 1024
_VALID: dict[str | tuple[str, ...], Perms] = {}
_BY_ID: dict[int, tuple[object, Perms]] = {}


def _count(name: str, value: object) -> int:
    if type(value) is int and 0 <= value <= UNLIMITED:  # the common case, checked first
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameterError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise InvalidParameterError(f"{name} must be >= 0, got {value}")
    return min(value, UNLIMITED)  # counts past 2**64 - 1 mean the same as it: no limit


class Index:
    """BM25 index over a catalog, with permission filtering and token budgets.

    Args:
        catalog: The tools, in registry order. The index keeps its own snapshot: tools appended
            to the catalog later need a new index.
        k1: BM25 term-frequency saturation; the default, ``_core.DEFAULT_K1`` (0.9, tuned on
            BFCL), is the core's own ``Bm25Params::default``.
        prefix_weight: Query weight of a word's prefix term relative to the word itself. A word
            of five letters or more is also indexed by its first four, so that derivations the
            stemmer does not join still meet (``multiplication`` and ``multiply``), at this
            weight (below 1, weaker than the word); 0 matches whole words only.
        b: BM25F length normalisation in [0, 1]: one value for every field, or a mapping that
            overrides :data:`toolsift.text.DEFAULT_FIELD_B` per field.
        field_weights: Overrides of :data:`toolsift.text.DEFAULT_FIELD_WEIGHTS`.
        count_tokens: Prompt cost of a definition (``{"name", "description", "parameters"}``);
            defaults to ``ceil(bytes / 4)`` of its compact JSON. A tool's explicit
            ``cost_tokens`` wins.
        embedder: Turns on the dense side (see :func:`toolsift.default_embedder`): each tool's
            :func:`~toolsift.text.dense_text` is embedded at build time, each query at query
            time, and the two rankings are fused (:func:`toolsift.fusion.fuse`).
        alpha: Weight of the lexical side in the fusion.
        rerank: ``rerank(query, hits) -> hits``, applied to the top ``depth`` hits of every
            search and selection; it may reorder or drop hits, never add tools.
        depth: Candidates taken from each side (and handed to ``rerank``) per query.
        dense_options: Options of :class:`~toolsift.dense.DenseIndex` (``M``, ``ef``...).
        statistics: ``"shared"`` (default): BM25 statistics (document frequencies, average
            lengths, collection size) cover the whole catalog. ``"caller"``: tenant isolation, they
            cover exactly the tools the caller may use, so a caller's scores and ranking equal those
            of an index built from its allowed tools only, and reveal nothing about the others.
            The per-caller index is built on first use and cached per distinct permission set.
        group_by: ``group_by(tool) -> str``, the group a tool belongs to, for searches and
            selections limited to groups (``group=`` and ``groups=`` of :meth:`search` and
            :meth:`select`) and :meth:`groups`; default :func:`toolsift.plan.default_group` (the
            namespace of the name: an MCP server's ``s3`` of ``s3__PutObject``).
        tenant_cache_bytes: Memory bound of that cache (``statistics="caller"``): the per-caller
            indexes kept, counted by the memory their core indexes hold (postings, dictionary,
            per-tool arrays; see ``_core.Index.memory_bytes``), at most this many bytes; the least
            recently used caller's is dropped first. The index just built is always kept, even
            alone past the bound (0 keeps only the latest). Defaults to
            :data:`TENANT_CACHE_BYTES` (256 MiB).
        min_evidence: The relevance gate (``None``, the default: off). When no ranked tool holds
            at least this much evidence for the query (the summed IDF of the distinct query
            words it contains, in units of the IDF of a word only one tool has; digits-only
            words count for nothing: see :meth:`evidence`), :meth:`search` returns nothing and
            :meth:`select` the core tools only, so a request that nothing in the catalog fits
            does not fill the budget. ``benches/relevance.py`` measures the trade-off on BFCL
            (0.5 refuses about a third more of the requests no tool fits, at half a point of
            recall@10); see the README.
        intents: Rank each intent of a compound request on its own too, and merge the rankings so
            that every intent gets tools (see :mod:`toolsift.intents`); a request of one intent
            is ranked as a whole either way. On by default.
        scan: Poisoned-definition policy (see :mod:`toolsift.scan`): ``"off"`` (default),
            ``"report"`` (findings in :attr:`findings`), ``"withhold"`` (flagged tools are indexed
            but never returned, selected or callable by anyone) or ``"refuse"`` (raise
            :class:`~toolsift.errors.PoisonedToolError`).

    The index is immutable and safe to share between threads; queries release the GIL.
    """

    def __init__(
        self,
        catalog: Catalog | Iterable[Tool],
        *,
        k1: float = DEFAULT_K1,
        prefix_weight: float = DEFAULT_PREFIX_WEIGHT,
        b: float | Mapping[str, float] | None = None,
        field_weights: Mapping[str, float] | None = None,
        count_tokens: Callable[[dict[str, Any]], int] | None = None,
        embedder: Embedder | None = None,
        alpha: float = DEFAULT_ALPHA,
        rerank: Reranker | None = None,
        depth: int = 100,
        dense_options: Mapping[str, Any] | None = None,
        statistics: str = "shared",
        scan: str = "off",
        tenant_cache_bytes: int = TENANT_CACHE_BYTES,
        group_by: Callable[[Tool], str] | None = None,
        min_evidence: float | None = None,
        intents: bool = True,
    ) -> None:
        started = time.perf_counter()
        self._group_by = _group_function(group_by)
        self._group_table: _GroupTable | None = None
        self._permission_counts: dict[str, int] | None = None
        given = catalog if isinstance(catalog, Catalog) else Catalog(catalog)
        self._tools: Sequence[Tool] = tuple(given)
        self.findings = self._scan(scan)
        # the catalog's own map of positions (copied: the caller's catalog could still grow)
        self._positions: Mapping[str, int] = (
            dict(given._positions) if type(given) is Catalog else {t.name: i for i, t in enumerate(self._tools)}
        )
        costs = _costs(self._tools, count_tokens or default_token_count)
        columns = field_columns(self._tools)
        weights, bs = field_params(field_weights, b)
        self._core = _core.Index(
            columns,
            weights,
            bs,
            [(*t.permissions, WITHHELD) if t.name in self._withheld else t.permissions for t in self._tools],
            costs,
            [t.core for t in self._tools],
            k1=_number("k1", k1),
            prefix_weight=_number("prefix_weight", prefix_weight),
            keep_terms=statistics == "caller",  # the per-caller indexes are cut from its term counts
        )
        self._set_statistics(statistics, _Scoring(weights, bs, float(k1), float(prefix_weight)), tenant_cache_bytes)
        self._set_ranking(embedder, alpha, rerank, depth, dense_options, None)
        self._min_evidence, self._intents = _gate(min_evidence), _flag("intents", intents)
        log.info("indexed %d tools in %.3f s (%r)", len(self._tools), time.perf_counter() - started, self)
        if self.findings:
            log.warning(
                "scan %r: %d findings in %d tools", scan, len(self.findings), len({f.tool for f in self.findings})
            )

    def _scan(self, policy: str) -> tuple[Finding, ...]:
        if policy not in ("off", "report", "withhold", "refuse"):
            raise InvalidParameterError(f"scan must be 'off', 'report', 'withhold' or 'refuse', not {policy!r}")
        findings = () if policy == "off" else tuple(scan_tools(self._tools))
        if policy == "refuse" and findings:
            raise PoisonedToolError(findings)
        self._withheld = {f.tool for f in findings} if policy == "withhold" else set()
        return findings

    def _set_statistics(self, statistics: str, build: _Scoring, cache_bytes: int) -> None:
        if statistics not in ("shared", "caller"):
            raise InvalidParameterError(f"statistics must be 'shared' or 'caller', not {statistics!r}")
        self._statistics, self._build = statistics, build
        # the core index whose term counts the per-caller indexes are cut from: the index's own
        # when built with statistics="caller", else (after load, or a mode overridden at load)
        # one built from the tools on first use
        self._terms: Any = self._core if self._core.keeps_terms else None
        # permission set -> (its index, position map and caller; the bytes they hold), least
        # recently used first; _tenant_bytes is the sum, _tenant_builds counts the indexes built
        self._tenants: OrderedDict[tuple[str, ...], tuple[_TenantEntry, int]] = OrderedDict()
        self._tenant_cache_bytes = _count("tenant_cache_bytes", cache_bytes)
        self._tenant_bytes = self._tenant_builds = 0
        self._tenant_lock = threading.Lock()
        self._masks: dict[str | tuple[str, ...], Any] = {}

    def _tenant(self, perms: Perms) -> _TenantEntry | None:
        """The caller's own core index (built from its allowed tools), its position map and the
        compiled caller of that index (which requires nothing)."""
        if self._statistics == "shared":
            return None
        key = tuple(sorted(set(perms.names)))
        with self._tenant_lock:
            found = self._tenants.get(key)
            if found is not None:
                self._tenants.move_to_end(key)
                return found[0]
        keep = np.flatnonzero(self._core.allowed_mask(self._mask(perms))).astype(np.uint32)
        # the index an index of the allowed tools alone would be, cut from the term counts
        sub = self._term_counts().subset(keep)
        entry = (sub, keep, sub.caller([]))
        # the caller's mask holds two bits per tool of its index (allowed, candidates)
        self._remember(key, entry, sub.memory_bytes() + keep.nbytes + (len(keep) + 63) // 64 * 16)
        return entry

    def _term_counts(self) -> Any:
        """A core index of every tool that keeps their term counts (see ``_set_statistics``)."""
        if self._terms is None:  # two threads may both build it: the same index either way
            core, build, n = self._core, self._build, len(self._tools)
            self._terms = _core.Index(
                field_columns(self._tools),
                build.weights,
                build.bs,
                [_PUBLIC] * n,
                [core.cost(i) for i in range(n)],
                [core.is_core(i) for i in range(n)],
                k1=build.k1,
                prefix_weight=build.prefix_weight,
                keep_terms=True,
            )
        return self._terms

    @property
    def group_by(self) -> Callable[[Tool], str]:
        """The function giving each tool's group (see ``group_by`` of :class:`Index`)."""
        return self._group_by

    def ready_for(self, caller: Caller) -> bool:
        """True when a query of ``caller`` does no build work first: always with shared
        statistics; with ``statistics="caller"``, once the caller's own index is built and
        cached (a server can then answer it on its event loop)."""
        if self._statistics == "shared":
            return True
        key = tuple(sorted(set(_caller(caller).names)))
        with self._tenant_lock:
            return key in self._tenants

    def _remember(self, key: tuple[str, ...], entry: _TenantEntry, size: int) -> None:
        """Caches ``entry`` as the most recently used, then drops the least recently used ones
        while the cache holds more than its bound (never ``entry`` itself)."""
        with self._tenant_lock:
            old = self._tenants.pop(key, None)  # another thread built it meanwhile
            self._tenant_bytes += size - (0 if old is None else old[1])
            self._tenants[key] = (entry, size)
            self._tenant_builds += 1
            while self._tenant_bytes > self._tenant_cache_bytes and len(self._tenants) > 1:
                _, (_, dropped) = self._tenants.popitem(last=False)
                self._tenant_bytes -= dropped

    def _mask(self, perms: Perms) -> Any:
        """``perms`` compiled for the core index, cached: a caller reused across queries is
        looked up once per query instead of validated and interned again."""
        found = self._masks.get(perms.key)
        if found is None:
            found = self._core.caller(perms.names)
            with self._tenant_lock:
                if len(self._masks) >= MAX_CALLERS:
                    self._masks.pop(next(iter(self._masks)))
                self._masks[perms.key] = found
        return found

    def _core_search(
        self, parts: str | list[tuple[str, float]], perms: Perms, k: int, scope: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The core's ``k`` best tools for the caller, among the registry positions of ``scope``
        (``None``: every tool)."""
        tenant = self._tenant(perms)
        if tenant is None:
            return self._core.search(parts, self._scoped(self._core, self._mask(perms), scope), k)
        sub, keep, everyone = tenant
        positions, scores = sub.search(parts, self._scoped(sub, everyone, _inside(keep, scope)), k)
        return keep[positions], scores

    def _core_select(
        self,
        parts: str | list[tuple[str, float]],
        perms: Perms,
        tokens: int,
        cap: int | None,
        scope: np.ndarray | None = None,
    ) -> Any:
        # no per-caller index (the default) is known without a call
        tenant = None if self._statistics == "shared" else self._tenant(perms)
        if tenant is None:
            return self._core.select(parts, self._scoped(self._core, self._mask(perms), scope, True), tokens, cap)
        sub, keep, everyone = tenant
        mask = self._scoped(sub, everyone, _inside(keep, scope), True)
        sel, num_core, used, dropped, over = sub.select(parts, mask, tokens, cap)
        return tuple(keep[list(sel)].tolist()), num_core, used, tuple(keep[list(dropped)].tolist()), over

    @staticmethod
    def _scoped(core: Any, mask: Any, scope: np.ndarray | None, keep_core: bool = False) -> Any:
        """``mask`` narrowed to the positions of ``scope`` of ``core`` (the core tools kept with
        ``keep_core``: a selection holds them whatever the query); ``None``: ``mask`` itself."""
        return mask if scope is None else core.within(mask, scope, keep_core)

    # -- groups ----------------------------------------------------------------------------
    def _groups(self) -> _GroupTable:
        """Every tool's group (see ``group_by``), computed on first use."""
        table = self._group_table
        if table is None:
            if self._group_by is default_group:  # the name is enough: a loaded index parses no tool
                found = [namespace(name) for name in self._positions]
            else:
                found = [_group_name(self._group_by, t) for t in self._tools]
            names = tuple(sorted(set(found)))
            ids = {g: i for i, g in enumerate(names)}
            of = np.fromiter((ids[g] for g in found), dtype=np.int64, count=len(found))
            order = np.argsort(of, kind="stable").astype(np.uint32)
            members = tuple(np.split(order, np.cumsum(np.bincount(of, minlength=len(names)))[:-1]))
            table = self._group_table = _GroupTable(names, of, ids, members)
        return table

    def groups(self, *, caller: Caller = None) -> dict[str, int]:
        """Each group holding a tool the caller may use, with how many of them, by name. A group
        whose tools the caller may not use is not named."""
        table = self._groups()
        allowed = self._core.allowed_mask(self._mask(_caller(caller)))
        counts = np.bincount(table.of[allowed], minlength=len(table.names)).tolist()
        return {g: c for g, c in zip(table.names, counts, strict=True) if c}

    def _members(self, group: Groups) -> np.ndarray | None:
        """The registry positions of the tools of ``group``, ascending (``None``: no limit). A
        group that does not exist holds no tool, like one whose tools the caller may not use."""
        if group is None:
            return None
        names = [group] if isinstance(group, str) else _group_names(group)
        table = self._groups()
        found = [table.members[table.ids[g]] for g in dict.fromkeys(names) if g in table.ids]
        return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.uint32)

    def _scope(self, query: str | Query, perms: Perms, group: Groups, groups: int | None) -> np.ndarray | None:
        """The positions a search or selection ranks among: the tools of ``group``, then, with
        ``groups``, only those of the ``groups`` groups whose best tool ranks highest for the
        query (the hierarchical step: the right groups first, then tools inside them)."""
        scope = self._members(group)
        if groups is None:
            return scope
        if self._dense is None and self._rerank is None:
            try:
                ranked, _ = self._core_search(_query(query), perms, self._depth, scope)
            except (TypeError, UnicodeEncodeError):
                _check_queries([query])
                raise
            order = ranked.tolist()
        else:
            order = [h.position for h in self._ranking(Query.of(query), perms, self._depth, scope)]
        table = self._groups()
        best = list(dict.fromkeys(int(table.of[i]) for i in order))[:groups]
        found = [table.members[g] for g in best]
        return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.uint32)

    def _set_ranking(
        self,
        embedder: Embedder | None,
        alpha: float,
        rerank: Reranker | None,
        depth: int,
        dense_options: Mapping[str, Any] | None,
        vectors: np.ndarray | None,
    ) -> None:
        if not 0.0 <= _number("alpha", alpha) <= 1.0:
            raise InvalidParameterError(f"alpha must be in [0, 1], not {alpha!r}")
        self._embedder, self._alpha, self._rerank, self._depth = embedder, alpha, rerank, _count("depth", depth)
        self._dense: DenseIndex | None = None
        if embedder is not None:
            if vectors is None:
                vectors = unit_rows(embedder.embed([dense_text(t) for t in self._tools]), "embedder output", self.names)
            self._dense = DenseIndex(vectors, **(dense_options or {}))

    def save(self, path: str | Path) -> None:
        """Writes the index (catalog, core index, tool vectors) to one file, atomically."""
        from .snapshot import save

        vectors = None if self._dense is None else self._dense.vectors
        build = self._build
        options: dict[str, Any] = {"alpha": self._alpha, "depth": self._depth, "statistics": self._statistics}
        options["min_evidence"], options["intents"] = self._min_evidence, self._intents
        # prefix_weight is not repeated here: the core's own bytes hold it
        options["scoring"] = {"weights": list(build.weights), "b": list(build.bs), "k1": build.k1}
        started = time.perf_counter()
        save(path, self._tools, self._core.to_bytes(), vectors, options)
        log.info("saved %d tools to %s in %.3f s", len(self._tools), path, time.perf_counter() - started)

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        embedder: Embedder | None = None,
        rerank: Reranker | None = None,
        dense_options: Mapping[str, Any] | None = None,
        statistics: str | None = None,
        tenant_cache_bytes: int = TENANT_CACHE_BYTES,
        group_by: Callable[[Tool], str] | None = None,
        min_evidence: float | EllipsisType | None = ...,
        intents: bool | EllipsisType = ...,
    ) -> Index:
        """An index saved by :meth:`save`. Give the ``embedder`` used to build it to keep the dense
        side (its stored tool vectors are reused); a file that is not a valid snapshot, or whose
        parts disagree, raises :class:`~toolsift.errors.SnapshotError` (see
        :func:`toolsift.snapshot.load` for what is checked at load and what when a tool is first
        used).

        ``statistics`` (``"shared"`` or ``"caller"``, see :class:`Index`) overrides the mode the file
        was saved with (``None``: the file's). A deployment that relies on tenant isolation should
        pass ``"caller"``: the file's mode is a header field that anyone who can write the file can
        change, checksums included. ``tenant_cache_bytes`` and ``group_by`` are as for
        :class:`Index` (a function is not saved: give it again); ``min_evidence`` and ``intents``
        override the file's relevance gate (``None``: off) and intent ranking (``...``: the
        file's).
        """
        from .snapshot import load

        started = time.perf_counter()
        positions, core, vectors, options = load(path, vectors=embedder is not None)
        index = cls.__new__(cls)
        index._group_by, index._group_table = _group_function(group_by), None
        index._permission_counts = None
        index._tools, index._positions, index._core = positions.tools, positions, core
        index.findings, index._withheld = (), set()
        mode = options["statistics"] if statistics is None else statistics
        scoring = options["scoring"]
        # the header's scoring equals the core's own parameters (checked by load)
        build = _Scoring(scoring["weights"], scoring["b"], float(scoring["k1"]), core.prefix_weight)
        index._set_statistics(mode, build, tenant_cache_bytes)
        index._set_ranking(embedder, options["alpha"], rerank, options["depth"], dense_options, vectors)
        index._min_evidence = _gate(options["min_evidence"] if min_evidence is ... else min_evidence)
        index._intents = _flag("intents", options["intents"] if intents is ... else intents)
        log.info("loaded %d tools from %s in %.3f s", len(index), path, time.perf_counter() - started)
        return index

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """Tool names in registry order."""
        return list(self._positions)

    def __repr__(self) -> str:
        return f"Index({len(self)} tools, {self._core.num_terms} terms, {self._core.num_postings} postings)"

    @property
    def stats(self) -> dict[str, int]:
        """Sizes of the core index: tools, terms, postings, distinct permissions."""
        c = self._core
        return {"tools": len(c), "terms": c.num_terms, "postings": c.num_postings, "permissions": c.num_permissions}

    def position(self, name: str) -> int:
        """The registry position of the tool called ``name`` (:class:`~toolsift.errors.UnknownToolError`
        if none)."""
        try:
            return self._positions[name_arg(name)]
        except KeyError:
            raise UnknownToolError(name) from None

    def permissions(self) -> dict[str, int]:
        """Every permission a tool requires, as the index enforces it, sorted, with how many tools
        require it (see :meth:`Catalog.permissions`)."""
        counts = self._permission_counts
        if counts is None:
            counts = {}
            for i in range(len(self._core)):
                for p in self._core.permissions(i):
                    if p != WITHHELD:
                        counts[p] = counts.get(p, 0) + 1
            counts = self._permission_counts = dict(sorted(counts.items()))
        return dict(counts)

    def check_caller(self, caller: Caller) -> None:
        """Raises :class:`~toolsift.errors.UnknownPermissionError` when the caller holds a
        permission no tool requires: the opt-in check for a misspelled or wrongly namespaced
        permission, which otherwise silently matches nothing. (A query never raises for it.)"""
        known = self.permissions()
        unknown = sorted({p for p in _caller(caller).names if p not in known})
        if unknown:
            raise UnknownPermissionError(unknown)

    def tool(self, position: int) -> Tool:
        """The tool at a registry position."""
        return self._tools[position]

    def name(self, position: int) -> str:
        """Name of the tool at a registry position."""
        return self._tools[position].name

    def cost(self, position: int) -> int:
        """Token cost of the tool at a registry position."""
        return int(self._core.cost(position))

    def allows(self, name: str, *, caller: Caller = None) -> bool:
        """True when a tool called ``name`` exists and the caller may use it."""
        i = self._positions.get(name_arg(name))
        return i is not None and self._core.allows(self._mask(_caller(caller)), i)

    def get(self, name: str, *, caller: Caller = None) -> Tool:
        """The tool called ``name`` if the caller may use it; unknown and forbidden look the same."""
        if not self.allows(name, caller=caller):
            raise UnknownToolError(name)
        return self._tools[self._positions[name]]

    def search(
        self,
        query: str | Query,
        *,
        k: int = 10,
        caller: Caller = None,
        group: Groups = None,
        groups: int | None = None,
    ) -> list[Hit]:
        """The ``k`` best-scoring tools the caller may use, best first (ties: registry order).

        ``query`` is a string or a :class:`~toolsift.Query` (for example built from the
        conversation with :meth:`Query.from_messages`). Returns fewer than ``k`` hits when fewer
        tools match; an empty query matches nothing. ``group`` limits the search to the tools of
        a group (or of several; see ``group_by`` and :meth:`groups`), ``groups`` to those of the
        ``groups`` groups whose best tool ranks highest for the query.
        """
        k, perms = _count("k", k), _caller(caller)
        scope = None if group is None and groups is None else self._scope(query, perms, group, _groups_arg(groups))
        if self._dense is None and self._rerank is None:
            try:
                positions, scores = self._core_search(_query(query), perms, k, scope)
            except (TypeError, UnicodeEncodeError):  # the core could not read the text: say why
                _check_queries([query])
                raise
            hits = [Hit(self._tools[i], i, s) for i, s in zip(positions.tolist(), scores.tolist(), strict=True)]
        else:
            hits = self._ranking(Query.of(query), perms, max(k, self._depth), scope)[:k]
        intents = self._intent_rankings(query, perms, k, scope)
        if intents:
            hits = self._merge(hits, intents, k)
        return [] if self._gate_closed(query, perms, [h.position for h in hits]) else hits

    def _intent_rankings(
        self, query: str | Query, perms: Perms, depth: int, scope: np.ndarray | None
    ) -> list[tuple[list[int], list[float]]]:
        """The lexical rankings (positions, scores) of the intents of a compound request, when
        it has two or more (see :mod:`toolsift.intents`); else none."""
        found = clauses(query) if self._intents else []
        if len(found) < 2:
            return []
        rankings = []
        for clause in found:
            positions, scores = self._core_search(clause, perms, depth, scope)
            probe = positions[:INTENT_PROBE].tolist()
            if probe and max(self._evidence(clause, perms, probe)) >= INTENT_EVIDENCE:
                rankings.append((positions.tolist(), scores.tolist()))
        return rankings if len(rankings) >= 2 else []

    def _merge(self, whole: list[Hit], intents: list[tuple[list[int], list[float]]], depth: int) -> list[Hit]:
        """``whole`` and the intents' rankings interleaved; a hit keeps the score of the first
        ranking it comes from (the whole request's, else its intent's)."""
        scores = {h.position: h.score for h in whole}
        for positions, values in intents:
            for p, s in zip(positions, values, strict=True):
                scores.setdefault(p, s)
        order = interleave([h.position for h in whole], [positions for positions, _ in intents], depth)
        return [Hit(self._tools[p], p, scores[p]) for p in order]

    def evidence(self, query: str | Query, names: Sequence[str], *, caller: Caller = None) -> list[float]:
        """The relevance gate's evidence of each named tool for ``query`` (see ``min_evidence``
        of :class:`Index`), with the caller's statistics in tenant mode. A tool the caller may
        not use raises :class:`~toolsift.errors.UnknownToolError`, like an unknown one."""
        perms = _caller(caller)
        positions = [self._positions[n] if self.allows(n, caller=perms.names) else None for n in map(name_arg, names)]
        for name, at in zip(names, positions, strict=True):
            if at is None:
                raise UnknownToolError(name)
        return self._evidence(_query(query), perms, [p for p in positions if p is not None])

    def _evidence(self, parts: str | list[tuple[str, float]], perms: Perms, positions: list[int]) -> list[float]:
        tenant = None if self._statistics == "shared" else self._tenant(perms)
        if tenant is None:
            return self._core.evidence(parts, positions)
        sub, keep, _ = tenant
        evidence: list[float] = sub.evidence(parts, np.searchsorted(keep, positions).tolist())
        return evidence

    def _gate_closed(self, query: str | Query, perms: Perms, positions: list[int]) -> bool:
        """True when the relevance gate is on and none of ``positions`` reaches its floor."""
        if self._min_evidence is None or not positions:
            return False
        return max(self._evidence(_query(query), perms, positions)) < self._min_evidence

    def _ranking(self, query: Query, perms: Perms, depth: int, scope: np.ndarray | None = None) -> list[Hit]:
        """Lexical, then dense, fused, then reranked: the top ``depth`` tools the caller may use
        (among the positions of ``scope``, when given)."""
        positions, scores = self._core_search(list(query.parts), perms, depth, scope)
        ranked = list(zip(positions.tolist(), scores.tolist(), strict=True))
        if self._dense is not None and self._embedder is not None and query.parts:
            texts, weights = zip(*query.parts, strict=True)
            vectors = unit_rows(self._embedder.embed(list(texts)), "embedder output")
            combined = (np.asarray(weights, dtype=np.float32)[:, None] * vectors).sum(axis=0)
            if np.any(combined):
                mask = self._scoped(self._core, self._mask(perms), scope)
                d_pos, d_scores = self._dense.search(combined, depth, self._core.allowed_mask(mask))
                ranked = fuse(ranked, list(zip(d_pos.tolist(), d_scores.tolist(), strict=True)), self._alpha)
        hits = [Hit(self._tools[i], i, s) for i, s in ranked[:depth]]
        if self._rerank is not None:
            offered = {h.position for h in hits}
            hits = [h for h in self._rerank(query, hits) if h.position in offered]
        return hits

    def select(
        self,
        query: str | Query,
        *,
        caller: Caller = None,
        budget_tokens: int | None = None,
        max_tools: int | None = None,
        group: Groups = None,
        groups: int | None = None,
    ) -> Selection:
        """Core tools, then the best-ranked matching tools that fit in ``budget_tokens``.

        Candidates are taken in rank order; one that does not fit is skipped (see
        :attr:`Selection.dropped`) and smaller ones are still tried. ``max_tools`` caps how many
        non-core tools are taken. ``budget_tokens=None`` means no token limit.

        ``group`` takes candidates from the tools of a group (or several) only; ``groups`` makes
        the selection hierarchical: first the ``groups`` groups whose best tool ranks highest for
        the query, then the best tools inside them. Core tools are selected either way.
        """
        tokens = UNLIMITED if budget_tokens is None else _count("budget_tokens", budget_tokens)
        cap = None if max_tools is None else _count("max_tools", max_tools)
        perms = _caller(caller)
        scope = None if group is None and groups is None else self._scope(query, perms, group, _groups_arg(groups))
        lexical = self._dense is None and self._rerank is None
        try:
            intents = self._intent_rankings(query, perms, self._depth, scope)
        except (TypeError, UnicodeEncodeError):
            _check_queries([query])
            raise
        if lexical and not intents:
            try:
                packed = self._core_select(_query(query), perms, tokens, cap, scope)
            except (TypeError, UnicodeEncodeError):
                _check_queries([query])
                raise
        else:
            if lexical:
                positions, scores = self._core_search(_query(query), perms, self._depth, scope)
                ranked = [Hit(self._tools[i], i, s) for i, s in zip(positions.tolist(), scores.tolist(), strict=True)]
            else:
                ranked = self._ranking(Query.of(query), perms, self._depth, scope)
            if intents:
                ranked = self._merge(ranked, intents, self._depth)
            order = np.array([h.position for h in ranked], dtype=np.uint32)
            mask = self._scoped(self._core, self._mask(perms), scope, True)
            packed = self._core.select_ranked(order, mask, tokens, cap)
        if self._gate_closed(query, perms, [p for p in packed[0] if not self._core.is_core(p)]):
            packed = self._core_select("", perms, tokens, cap, scope)  # the core tools only
        return Selection(self, packed, budget_tokens)

    def _batchable(self, queries: Sequence[str | Query]) -> bool:
        """True when one call into the core answers the batch as :meth:`search` and
        :meth:`select` would answer each query: lexical, shared statistics, no gate, and no query
        of several intents."""
        if self._dense is not None or self._rerank is not None or self._statistics == "caller":
            return False
        if self._min_evidence is not None:
            return False
        try:
            return not (self._intents and any(len(clauses(q)) >= 2 for q in queries))
        except (TypeError, ValueError):
            return True  # the batch path says what is wrong with the query

    def search_many(self, queries: Sequence[str | Query], *, k: int = 10, caller: Caller = None) -> list[list[Hit]]:
        """:meth:`search` for a batch of queries of one caller, in one call into the core."""
        k, perms = _count("k", k), _caller(caller)
        if not self._batchable(queries):
            return [self.search(q, k=k, caller=perms.names) for q in queries]
        try:
            batch = self._core.search_many([_query(q) for q in queries], self._mask(perms), k)
        except (TypeError, UnicodeEncodeError):
            _check_queries(queries)
            raise
        return [[Hit(self._tools[i], i, s) for i, s in zip(p.tolist(), sc.tolist(), strict=True)] for p, sc in batch]

    def select_many(
        self,
        queries: Sequence[str | Query],
        *,
        caller: Caller = None,
        budget_tokens: int | None = None,
        max_tools: int | None = None,
    ) -> list[Selection]:
        """:meth:`select` for a batch of queries of one caller, in one call into the core."""
        tokens = UNLIMITED if budget_tokens is None else _count("budget_tokens", budget_tokens)
        cap = None if max_tools is None else _count("max_tools", max_tools)
        perms = _caller(caller)
        if not self._batchable(queries):
            return [
                self.select(q, caller=perms.names, budget_tokens=budget_tokens, max_tools=max_tools) for q in queries
            ]
        try:
            batch = self._core.select_many([_query(q) for q in queries], self._mask(perms), tokens, cap)
        except (TypeError, UnicodeEncodeError):
            _check_queries(queries)
            raise
        return [Selection(self, packed, budget_tokens) for packed in batch]


def _group_function(group_by: Callable[[Tool], str] | None) -> Callable[[Tool], str]:
    if group_by is not None and not callable(group_by):
        raise InvalidParameterError(f"group_by must be a function of a tool, not {type(group_by).__name__}")
    return default_group if group_by is None else group_by


def _group_name(group_by: Callable[[Tool], str], tool: Tool) -> str:
    found = group_by(tool)
    if not isinstance(found, str):
        raise InvalidToolError(f"group_by returned {type(found).__name__}, not a string", tool=tool.name, field="group")
    return str.__str__(found)


def _group_names(group: object) -> list[str]:
    if isinstance(group, Mapping) or not isinstance(group, Iterable):
        raise InvalidParameterError(f"group must be a group's name or several, not {type(group).__name__}")
    names = list(group)
    for g in names:
        if not isinstance(g, str):
            raise InvalidParameterError(f"group names must be strings, found {type(g).__name__}")
    return [str.__str__(g) for g in names]


def _groups_arg(groups: int | None) -> int | None:
    if groups is None:
        return None
    if _count("groups", groups) < 1:
        raise InvalidParameterError("groups must be at least 1 (None: no limit)")
    return groups


def _inside(keep: np.ndarray, scope: np.ndarray | None) -> np.ndarray | None:
    """The positions within a per-caller index (whose tools are the registry positions ``keep``,
    ascending) of the registry positions of ``scope`` it holds."""
    if scope is None:
        return None
    at = np.searchsorted(keep, scope)
    held = at < len(keep)
    at = at[held]
    found: np.ndarray = at[keep[at] == scope[held]].astype(np.uint32)
    return found


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidParameterError(f"{name} must be True or False, not {value!r}")
    return value


def _gate(min_evidence: object) -> float | None:
    if min_evidence is None:
        return None
    value = _number("min_evidence", min_evidence)
    if not value >= 0.0 or value == float("inf"):
        raise InvalidParameterError(f"min_evidence must be a finite number >= 0 or None, not {min_evidence!r}")
    return value


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameterError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def _query(query: str | Query) -> str | list[tuple[str, float]]:
    if type(query) is str:  # the common case: the core takes the text as it is
        return query
    return list(Query.of(query).parts)


def _check_queries(queries: Iterable[object]) -> None:
    """Raises :class:`InvalidParameterError` for the first query string that is not valid Unicode.

    Called only once the core has refused a query: a string query goes to the core as it is,
    and the core's own check of its text costs nothing more.
    """
    for query in queries:
        if isinstance(query, str):
            check_text("query", query)


def _costs(tools: Sequence[Tool], counter: Callable[[dict[str, Any]], int]) -> list[int]:
    """Each tool's token cost: its own ``cost_tokens``, else what ``counter`` says of its
    definition. The default counter's measure (the bytes of the compact JSON) is taken by the
    core from the definitions themselves, without a JSON text per tool; a definition holding
    something else than plain JSON types is measured by the counter itself."""
    if counter is not default_token_count:
        return [t.cost_tokens if t.cost_tokens is not None else _cost(t, counter) for t in tools]
    measured = [t for t in tools if t.cost_tokens is None]
    sizes = iter(
        _core.definition_bytes(
            [t.name for t in measured], [t.description for t in measured], [t.parameters for t in measured]
        )
    )
    costs = []
    for t in tools:
        if t.cost_tokens is not None:
            costs.append(t.cost_tokens)
            continue
        size = next(sizes)
        costs.append(_cost(t, counter) if size is None else _checked(t, (size + 3) // 4))
    return costs


def _cost(tool: Tool, counter: Callable[[dict[str, Any]], int]) -> int:
    return _checked(tool, counter(tool.definition()))


def _checked(tool: Tool, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise InvalidToolError(
            f"count_tokens returned {value!r}, not an int in [0, 2**32)", tool=tool.name, field="cost_tokens"
        )
    return value
