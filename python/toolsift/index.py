"""The index: ranked search and budgeted selection over a catalog, scored in the Rust core.

The core scores only the tools the caller may use (the permission mask is applied before BM25), so a
forbidden tool is never scored, returned, counted toward a budget or named anywhere. :class:`Index`
is the facade: each query method reads as its steps (check the arguments, the caller, the group
scope, rank, merge the intents, the relevance gate, pack), each done by a module of its own:
:mod:`~toolsift.callers`, :mod:`~toolsift.groups`, :mod:`~toolsift.lexical` (with
:mod:`~toolsift.tenancy`), :mod:`~toolsift.hybrid`, :mod:`~toolsift.intents`,
:mod:`~toolsift.results`; :mod:`~toolsift.parts` makes what an index is opened on.
"""

from __future__ import annotations

import logging
import operator
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import EllipsisType
from typing import Any

import numpy as np

from ._core import DEFAULT_K1, DEFAULT_PREFIX_WEIGHT
from .arguments import (
    UNLIMITED,
    check_queries,
    count,
    evidence_floor,
    file_path,
    flag,
    limit,
    query_batch,
    query_parts,
    tool_names,
)
from .callers import WITHHELD, Caller, Masks, Perms, perms_of
from .dense import DenseIndex, Embedder, check_embedder
from .errors import InvalidParameterError, UnknownPermissionError, UnknownToolError
from .fusion import DEFAULT_ALPHA, Reranker
from .groups import Grouping, Groups, group_function, groups_arg
from .hybrid import Hybrid
from .intents import NO_INTENTS, IntentRanking, Intents, clauses, may_have_clauses, merge, rank_intents
from .lexical import Lexical
from .parts import Parts as IndexParts
from .parts import build, read, relearned
from .progress import Progress
from .query import Query
from .registry import Catalog, Tool, name_arg
from .results import Hit, Selection
from .scan import Finding
from .snapshot import save as save_file
from .tenancy import TENANT_CACHE_BYTES, Tenants
from .text import dense_text

__all__ = ["Caller", "Hit", "Index"]

GATE_PROBE = 10
"""Best-ranked non-core tools the relevance gate looks at for a request's evidence."""

log = logging.getLogger("toolsift.index")


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
            of an index built from its allowed tools only, and reveal nothing about the others
            (a dense side is then searched exactly: an approximate graph's answers depend on
            every tool it holds).
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
            :data:`toolsift.tenancy.TENANT_CACHE_BYTES` (256 MiB).
        min_evidence: The relevance gate (``None``, the default: off). When none of the
            caller's :data:`GATE_PROBE` best-ranked non-core tools for the request (lexically,
            whatever ``k``, budget, intents or dense side) holds at least this much evidence for
            it (the summed IDF of the distinct query words it contains, in units of the IDF of a
            word only one tool has; digits-only words count for nothing: see :meth:`evidence`),
            :meth:`search` returns nothing and :meth:`select` the core tools only, so a request
            that nothing in the catalog fits does not fill the budget. ``benches/relevance.py``
            measures the trade-off on BFCL (0.5 refuses about a third more of the requests no
            tool fits, at half a point of recall@10); see the README.
        intents: Rank each intent of a compound request on its own too, and merge the rankings so
            that every intent gets tools (see :mod:`toolsift.intents`); a request of one intent
            is ranked as a whole either way. On by default.
        learned: ``{tool name: text}``, the ``learned`` field of the named tools: words that
            requests which led to calls of the tool added (see :mod:`toolsift.learning`, whose
            :meth:`~toolsift.learning.Learned.texts` gives them; :meth:`with_learned` swaps them
            in a copy of a built index). Weighted below the authored fields.
        progress: ``progress(done, total, tool name)``, called as the catalog is embedded (with
            an ``embedder``) after each :data:`~toolsift.dense.EMBED_BATCH` tools; the
            ``toolsift.dense`` logger reports the count at INFO too (see :mod:`toolsift.progress`).
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
        learned: Mapping[str, str] | None = None,
        progress: Progress | None = None,
    ) -> None:
        started = time.perf_counter()
        grouping = group_function(group_by)
        keep_terms = statistics == "caller"  # the per-caller indexes are cut from its term counts
        parts = build(
            catalog,
            k1=k1,
            prefix_weight=prefix_weight,
            b=b,
            field_weights=field_weights,
            count_tokens=count_tokens,
            scan=scan,
            keep_terms=keep_terms,
            learned=learned,
        )
        self._open(
            parts,
            statistics=statistics,
            tenant_cache_bytes=tenant_cache_bytes,
            group_by=grouping,
            embedder=embedder,
            alpha=alpha,
            rerank=rerank,
            depth=depth,
            dense_options=dense_options,
            min_evidence=min_evidence,
            intents=intents,
            progress=progress,
        )
        log.info("indexed %d tools in %.3f s (%r)", len(self._tools), time.perf_counter() - started, self)
        if self.findings:
            log.warning(
                "scan %r: %d findings in %d tools", scan, len(self.findings), len({f.tool for f in self.findings})
            )

    def _open(
        self,
        parts: IndexParts,
        *,
        statistics: str,
        tenant_cache_bytes: int,
        group_by: Callable[[Tool], str],
        embedder: Embedder | None,
        alpha: float,
        rerank: Reranker | None,
        depth: int,
        dense_options: Mapping[str, Any] | None,
        min_evidence: float | None,
        intents: bool,
        progress: Progress | None = None,
        dense: DenseIndex | None = None,
    ) -> None:
        """The one place an index's state is set, on :class:`~toolsift.parts.Parts` built from a
        catalog (:meth:`__init__`), read from a file (:meth:`load`) or rebuilt with other learned
        texts (:meth:`with_learned`, which opens them with the same options and hands over its
        ``dense`` index: the same vectors, so the same graph, which takes long to build)."""
        if statistics not in ("shared", "caller"):
            raise InvalidParameterError(f"statistics must be 'shared' or 'caller', not {statistics!r}")
        self._parts = parts
        self._options: dict[str, Any] = {
            "statistics": statistics,
            "tenant_cache_bytes": tenant_cache_bytes,
            "group_by": group_by,
            "embedder": embedder,
            "alpha": alpha,
            "rerank": rerank,
            "depth": depth,
            "dense_options": dense_options,
            "min_evidence": min_evidence,
            "intents": intents,
        }
        self._tools: Sequence[Tool] = parts.tools
        self._positions: Mapping[str, int] = parts.positions
        self._core: Any = parts.core
        self._core_count: int = parts.core.num_core()
        self._core_positions: np.ndarray | None = None  # made on first use (see _usable_cores)
        self._scoring, self._statistics = parts.scoring, statistics
        self.findings: tuple[Finding, ...] = parts.findings
        """The scanner's findings (``scan="report"`` or ``"withhold"``), in registry order. An index
        file keeps which tools are withheld, not the findings: a loaded index has none here, and
        :func:`toolsift.scan.scan` (or ``toolsift doctor``, which shows withheld tools to the
        owner) gives them again."""
        self._groups = Grouping(group_by, parts.tools, parts.positions)
        self._permission_counts: dict[str, int] | None = None
        masks = Masks(parts.core)
        cache_bytes = count("tenant_cache_bytes", tenant_cache_bytes)
        self._tenants = Tenants(parts.core, parts.tools, parts.scoring, masks, cache_bytes, parts.learned)
        self._lexical = Lexical(parts.core, masks, None if statistics == "shared" else self._tenants)
        names = self.names
        self._hybrid = Hybrid(
            parts.tools,
            names,
            embedder,
            alpha,
            rerank,
            depth,
            dense_options,
            parts.vectors,
            progress,
            dense,
            graph=statistics == "shared",
        )
        self._min_evidence, self._intents = evidence_floor(min_evidence), flag("intents", intents)
        # the copies with_learned made, by their texts, while something holds them: sessions of one
        # learning scope share one rebuilt index instead of each rebuilding its own
        self._relearned: weakref.WeakValueDictionary[tuple[tuple[str, str], ...], Index] = weakref.WeakValueDictionary()

    @property
    def group_by(self) -> Callable[[Tool], str]:
        """The function giving each tool's group (see ``group_by`` of :class:`Index`)."""
        return self._groups.group_by

    def ready_for(self, caller: Caller) -> bool:
        """True when a query of ``caller`` does no build work first: always with shared
        statistics; with ``statistics="caller"``, once the caller's own index is built and
        cached (a server can then answer it on its event loop)."""
        return self._statistics == "shared" or self._tenants.holds(perms_of(caller))

    def save(self, path: str | Path) -> None:
        """Writes the index (catalog, core index, tool vectors) to one file, atomically."""
        dense = self._hybrid.dense
        build = self._scoring
        options: dict[str, Any] = {"alpha": self._hybrid.alpha, "depth": self._hybrid.depth}
        options["statistics"] = self._statistics
        options["min_evidence"], options["intents"] = self._min_evidence, self._intents
        options["learned"] = dict(self._parts.learned)
        # prefix_weight is not repeated here: the core's own bytes hold it
        options["scoring"] = {"weights": list(build.weights), "b": list(build.bs), "k1": build.k1}
        started, path = time.perf_counter(), file_path(path)
        save_file(path, self._tools, self._core.to_bytes(), None if dense is None else dense.vectors, options)
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
        progress: Progress | None = None,
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
        file's). ``progress`` is as for :class:`Index`: a file saved without vectors is embedded
        when an ``embedder`` is given. An ``embedder`` that does not give the stored vectors (its
        vector of the first tool, embedded again: one embedding) raises
        :class:`~toolsift.errors.InvalidParameterError`.
        """
        started, path = time.perf_counter(), file_path(path)
        parts, options = read(path, vectors=embedder is not None)
        if embedder is not None and parts.vectors is not None and len(parts.vectors):
            first = parts.tools[0]  # one embedding: the cost of knowing the vectors fit
            check_embedder(embedder, dense_text(first), first.name, parts.vectors[0])
        index = cls.__new__(cls)  # opened on what the file holds, as __init__ opens a catalog's
        index._open(
            parts,
            statistics=options["statistics"] if statistics is None else statistics,
            tenant_cache_bytes=tenant_cache_bytes,
            group_by=group_function(group_by),
            embedder=embedder,
            alpha=options["alpha"],
            rerank=rerank,
            depth=options["depth"],
            dense_options=dense_options,
            min_evidence=options["min_evidence"] if min_evidence is ... else min_evidence,
            intents=options["intents"] if intents is ... else intents,
            progress=progress,
        )
        log.info("loaded %d tools from %s in %.3f s", len(index), path, time.perf_counter() - started)
        return index

    @property
    def learned(self) -> dict[str, str]:
        """The learned text of each tool that has one (see ``learned`` of :class:`Index`)."""
        return dict(self._parts.learned)

    def with_learned(self, learned: Mapping[str, str] | None) -> Index:
        """A copy of this index whose tools' learned texts are ``learned`` (the authored fields,
        options, permissions, costs and tool vectors stay, the dense index is shared): the core
        index is rebuilt (about as long as building this one's took), this index is left as it
        is, so a server swaps the copy in whole when it is ready. Per-caller statistics are cut
        afresh from the copy."""
        key = _learned_key(learned)
        shared = None if key is None else self._relearned.get(key)
        if shared is not None:  # the same texts as a copy still in use (another session's)
            return shared
        dense = self._hybrid.dense
        parts = relearned(self._parts, learned, None if dense is None else dense.vectors)
        index = type(self).__new__(type(self))
        index._open(parts, **self._options, dense=dense)
        if key is not None:
            self._relearned[key] = index
        log.info("rebuilt %d tools with %d learned texts", len(self._tools), len(parts.learned))
        return index

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        """True when the index holds a tool of that name (whoever may use it: see :meth:`allows`)."""
        return type(name) is str and name in self._positions

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
        unknown = sorted({p for p in perms_of(caller).names if p not in known})
        if unknown:
            raise UnknownPermissionError(unknown)

    def tool(self, position: int) -> Tool:
        """The tool at a registry position (an int in ``[0, len(index))``)."""
        return self._tools[self._position(position)]

    def name(self, position: int) -> str:
        """Name of the tool at a registry position."""
        return self._tools[self._position(position)].name

    def cost(self, position: int) -> int:
        """Token cost of the tool at a registry position."""
        return int(self._core.cost(self._position(position)))

    def _position(self, position: object) -> int:
        if isinstance(position, int) and not isinstance(position, bool) and 0 <= position < len(self._tools):
            return position
        try:
            found = operator.index(position)  # type: ignore[arg-type]  # a numpy integer, say
        except TypeError:
            raise InvalidParameterError(f"a position must be an int, not {type(position).__name__}") from None
        if isinstance(position, bool) or not 0 <= found < len(self._tools):
            raise InvalidParameterError(f"no tool at position {position!r} (the index holds {len(self._tools)})")
        return found

    def allows(self, name: str, *, caller: Caller = None) -> bool:
        """True when a tool called ``name`` exists and the caller may use it."""
        i = self._positions.get(name_arg(name))
        return i is not None and self._lexical.allows(perms_of(caller), i)

    def get(self, name: str, *, caller: Caller = None) -> Tool:
        """The tool called ``name`` if the caller may use it; unknown and forbidden look the same."""
        name = name_arg(name)  # the checked name is the one looked up (a str subclass could lie)
        if not self.allows(name, caller=caller):
            raise UnknownToolError(name)
        return self._tools[self._positions[name]]

    def allowed_positions(self, *, caller: Caller = None, group: Groups = None) -> np.ndarray:
        """The registry positions of the tools the caller may use, ascending; with ``group``,
        of that group's (or groups') tools only. One call, whatever the catalog's size."""
        allowed = self._lexical.allowed(perms_of(caller))
        members = self._groups.members(group)
        found: np.ndarray = np.flatnonzero(allowed) if members is None else members[allowed[members]]
        return found

    def groups(self, *, caller: Caller = None) -> dict[str, int]:
        """Each group holding a tool the caller may use, with how many of them, by name. A group
        whose tools the caller may not use is not named."""
        return self._groups.counts(self._lexical.allowed(perms_of(caller)))

    # -- queries -------------------------------------------------------------------------------
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
        ``groups`` groups whose best tool ranks highest for the query. With a dense side, the
        two rankings are fused over each side's first ``max(k, depth)`` tools, so a ``k`` above
        ``depth`` standardises over more scores and may order the first tools differently.
        """
        k, perms = count("k", k), perms_of(caller)
        return self._search_in(query, k, perms, self._scope(query, perms, group, groups))

    def _search_in(self, query: str | Query, k: int, perms: Perms, scope: np.ndarray | None) -> list[Hit]:
        """:meth:`search` among the positions of ``scope`` (ascending; ``None``: every tool): for
        a grouping other than the index's own, such as a toolbox's tiers'."""
        if self._gate_closed(query, perms, scope):
            return []
        if self._hybrid.lexical_only:
            ranked = hits = self._hits(self._search(query, perms, k, scope))
        else:
            ranked = self._hybrid.rank(
                self._lexical, self._tools, Query.of(query), perms, max(k, self._hybrid.depth), scope
            )
            hits = ranked[:k]
        intents = (
            self._intent_rankings(query, perms, k, scope) if self._intents and may_have_clauses(query) else NO_INTENTS
        )
        if intents:
            hits = merge(self._tools, hits, self._reranked(intents, ranked), k)
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

        A ranking made here rather than in the core (a dense side or rerank hook, or a request
        of two intents or more, weak ones counted) offers the first ``depth`` tools as
        candidates: a budget that would hold more of them holds those; for a lexical index's
        compound request, the whole request's ranking goes on past them.
        """
        tokens, cap = (
            limit("budget_tokens", budget_tokens),
            None if max_tools is None else count("max_tools", max_tools),
        )
        perms = perms_of(caller)
        scope = self._scope(query, perms, group, groups, candidates=True)
        if self._gate_closed(query, perms, scope):
            return Selection(self, self._lexical.select("", perms, tokens, cap, scope), budget_tokens)  # core only
        # core tools are packed whatever the ranking: a ranking made here fetches as many more
        # as the caller may use, so that ``depth`` candidates remain once they are left out
        depth = min(self._hybrid.depth + self._usable_cores(perms, scope), UNLIMITED)
        intents = (
            self._checked([query], lambda: self._intent_rankings(query, perms, depth, scope))
            if self._intents and may_have_clauses(query)
            else NO_INTENTS
        )
        if self._hybrid.lexical_only and not intents:
            packed = self._checked([query], lambda: self._lexical.select(query_parts(query), perms, tokens, cap, scope))
        else:
            order = [h.position for h in self._ranked(query, perms, scope, intents, depth, candidates=True)]
            if self._hybrid.lexical_only and self._room_beyond(order, depth, tokens, cap):
                # the intents rank the head; the core's own ranking goes on past it, as it would
                # for a request of one intent (a full stop must not shrink a large selection)
                rest = self._checked([query], lambda: self._search(query, perms, UNLIMITED, scope))[0].tolist()
                seen = set(order)
                order += [p for p in rest if p not in seen]
            packed = self._lexical.pack(np.array(order, dtype=np.uint32), perms, tokens, cap, scope)
        return Selection(self, packed, budget_tokens)

    def _room_beyond(self, order: list[int], depth: int, tokens: int, cap: int | None) -> bool:
        """True when the budget and cap could take more than the ``depth`` candidates of
        ``order`` (a ranking cut at ``depth``)."""
        if len(order) < depth:
            return False  # nothing more matches
        if cap is not None and cap <= sum(1 for p in order if not self._core.is_core(p)):
            return False
        return tokens == UNLIMITED or sum(self._core.cost(p) for p in order) < tokens

    def search_many(self, queries: Sequence[str | Query], *, k: int = 10, caller: Caller = None) -> list[list[Hit]]:
        """:meth:`search` for a batch of queries of one caller, in one call into the core."""
        k, perms, queries = count("k", k), perms_of(caller), query_batch(queries)
        if not self._batchable(queries):
            return [self.search(q, k=k, caller=perms.names) for q in queries]
        batch = self._checked(queries, lambda: self._lexical.search_many([query_parts(q) for q in queries], perms, k))
        return [self._hits(ranking) for ranking in batch]

    def select_many(
        self,
        queries: Sequence[str | Query],
        *,
        caller: Caller = None,
        budget_tokens: int | None = None,
        max_tools: int | None = None,
    ) -> list[Selection]:
        """:meth:`select` for a batch of queries of one caller, in one call into the core."""
        tokens, cap = (
            limit("budget_tokens", budget_tokens),
            None if max_tools is None else count("max_tools", max_tools),
        )
        perms, queries = perms_of(caller), query_batch(queries)
        if not self._batchable(queries):
            return [
                self.select(q, caller=perms.names, budget_tokens=budget_tokens, max_tools=max_tools) for q in queries
            ]
        batch = self._checked(
            queries, lambda: self._lexical.select_many([query_parts(q) for q in queries], perms, tokens, cap)
        )
        return [Selection(self, packed, budget_tokens) for packed in batch]

    def evidence(self, query: str | Query, names: Sequence[str], *, caller: Caller = None) -> list[float]:
        """The relevance gate's evidence of each named tool for ``query`` (see ``min_evidence``
        of :class:`Index`), with the caller's statistics in tenant mode. A tool the caller may
        not use raises :class:`~toolsift.errors.UnknownToolError`, like an unknown one."""
        perms, names = perms_of(caller), tool_names("names", names)
        positions = [self._positions[n] if self.allows(n, caller=perms.names) else None for n in names]
        for name, at in zip(names, positions, strict=True):
            if at is None:
                raise UnknownToolError(name)
        found = [p for p in positions if p is not None]
        evidence: list[float] = self._checked([query], lambda: self._lexical.evidence(query_parts(query), perms, found))
        return evidence

    # -- the steps of a query ------------------------------------------------------------------
    def _scope(
        self, query: str | Query, perms: Perms, group: Groups, groups: int | None, candidates: bool = False
    ) -> np.ndarray | None:
        """The positions a search or selection ranks among (``None``: every tool): the tools of
        ``group``, then, with ``groups``, only those of the ``groups`` groups whose best tool ranks
        highest for the query (the hierarchical step: the right groups first, then tools inside).
        A compound request's intents are ranked in as :meth:`search` merges them, so each intent's
        best group is among the first. With ``candidates`` (a selection, which takes core tools
        whatever the query), core tools do not choose groups: one ranking first would take a
        group's place and bring nothing."""
        if group is None and groups is None:
            return None
        wanted = groups_arg(groups)
        scope = self._groups.members(group)
        if wanted is None:
            return scope
        depth = min(self._hybrid.depth + (self._usable_cores(perms, scope) if candidates else 0), UNLIMITED)
        intents = (
            self._checked([query], lambda: self._intent_rankings(query, perms, depth, scope))
            if self._intents and may_have_clauses(query)
            else NO_INTENTS
        )
        ranked = self._checked([query], lambda: self._ranked(query, perms, scope, intents, depth, candidates))
        order = [h.position for h in ranked]
        if candidates and self._core_count:
            order = [p for p in order if not self._core.is_core(p)]
        return self._groups.best(order, wanted)

    def _usable_cores(self, perms: Perms, scope: np.ndarray | None) -> int:
        """The core tools the caller may use among ``scope``: what a ranking that drops core
        tools fetches beyond its depth. Never the catalog's count, which would let core tools the
        caller may not use (or withheld ones) change what it gets, and so tell it they exist."""
        if not self._core_count:
            return 0
        if self._core_positions is None:
            self._core_positions = np.array(
                [i for i in range(len(self._core)) if self._core.is_core(i)], dtype=np.int64
            )
        allowed = self._core.allowed_mask(self._lexical.scoped(perms, scope))
        return int(np.count_nonzero(allowed[self._core_positions]))

    def _search(
        self, query: str | Query, perms: Perms, k: int, scope: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The lexical side's ``k`` best tools for the caller (the query's text checked when the
        core refuses it)."""
        found: tuple[np.ndarray, np.ndarray] = self._checked(
            [query], lambda: self._lexical.search(query_parts(query), perms, k, scope)
        )
        return found

    def _ranked(
        self,
        query: str | Query,
        perms: Perms,
        scope: np.ndarray | None,
        intents: Intents,
        depth: int,
        candidates: bool = False,
    ) -> list[Hit]:
        """The top ``depth`` tools ranked here rather than inside the core's packing: fused or
        reranked, or merged with the intents' rankings. With ``candidates`` (a selection, which
        takes core tools whatever the ranking) core tools are left out of the intents' rankings,
        so that none takes the place of an intent's best tool; the whole request's keeps them,
        as ``depth`` counts them (it is fetched past the usable core tools)."""
        if self._hybrid.lexical_only:
            ranked = self._hits(self._lexical.search(query_parts(query), perms, depth, scope))
        else:
            ranked = self._hybrid.rank(self._lexical, self._tools, Query.of(query), perms, depth, scope)
        if not intents:
            return ranked
        intents = self._reranked(intents, ranked)
        if candidates and self._core_count:
            intents = _without(intents, lambda p: not self._core.is_core(p))
        return merge(self._tools, ranked, intents, depth)

    def _reranked(self, intents: Intents, ranked: list[Hit]) -> Intents:
        """The intents' rankings, cut to the tools of ``ranked`` when a rerank hook made it: the
        hook may drop a tool, and no intent brings it back."""
        if self._hybrid.rerank is None:
            return intents
        kept = {h.position for h in ranked}
        return _without(intents, kept.__contains__)

    def _intent_rankings(self, query: str | Query, perms: Perms, depth: int, scope: np.ndarray | None) -> Intents:
        """The intents' own rankings when ``intents`` is on and the request has two or more."""
        if not self._intents:
            return NO_INTENTS
        return rank_intents(self._lexical, query, perms, depth, scope, self._usable_cores(perms, scope))

    def _gate_closed(self, query: str | Query, perms: Perms, scope: np.ndarray | None) -> bool:
        """True when the relevance gate is on and none of the caller's :data:`GATE_PROBE` best
        lexically ranked non-core tools (in ``scope``) reaches its floor: one verdict per request,
        the same for a search of any ``k`` and a selection of any budget. Core tools, sent
        anyway, are no evidence. Off, a request pays nothing for it."""
        if self._min_evidence is None:
            return False
        cores = self._core_count
        positions = self._search(query, perms, GATE_PROBE + cores, scope)[0].tolist()
        probe = [p for p in positions if not self._core.is_core(p)][:GATE_PROBE] if cores else positions
        return bool(probe) and max(self._lexical.evidence(query_parts(query), perms, probe)) < self._min_evidence

    def _batchable(self, queries: Sequence[str | Query]) -> bool:
        """True when one call into the core answers the batch as :meth:`search` and
        :meth:`select` would answer each query: lexical, shared statistics, no gate, and no query
        of several intents."""
        if not self._hybrid.lexical_only or self._statistics == "caller" or self._min_evidence is not None:
            return False
        try:
            return not (self._intents and any(len(clauses(q)) >= 2 for q in queries))
        except (TypeError, ValueError):
            return True  # the batch path says what is wrong with the query

    def _hits(self, ranking: tuple[np.ndarray, np.ndarray]) -> list[Hit]:
        positions, scores = ranking
        return [Hit(self._tools[i], i, s) for i, s in zip(positions.tolist(), scores.tolist(), strict=True)]

    @staticmethod
    def _checked(queries: Iterable[object], work: Callable[[], Any]) -> Any:
        """``work()``; when the core could not read a query's text, says why
        (:func:`~toolsift.arguments.check_queries`) before passing the error on."""
        try:
            return work()
        except (TypeError, UnicodeEncodeError):
            check_queries(queries)
            raise


def _learned_key(learned: Mapping[str, str] | None) -> tuple[tuple[str, str], ...] | None:
    """Learned texts as a key (``None`` when they are not all strings: :func:`relearned` then
    refuses them with a typed error)."""
    if learned is None:
        return ()
    if not isinstance(learned, Mapping):
        return None
    pairs = tuple(learned.items())
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs):
        return None
    return tuple(sorted(pairs))


def _without(intents: Intents, keep: Callable[[int], bool]) -> Intents:
    """``intents`` with only the positions ``keep`` is true of, each ranking in its order."""

    def cut(rankings: Sequence[IntentRanking]) -> list[IntentRanking]:
        return [
            ([p for p in positions if keep(p)], [s for p, s in zip(positions, scores, strict=True) if keep(p)])
            for positions, scores in rankings
        ]

    return Intents(cut(intents.rankings), cut(intents.weak))
