"""Tool tiers and the Toolbox: a small, stable tools array with on-demand search.

With tiers, the tools array sent to the model is the *core* tools (full schemas, sorted by name),
then two meta-tools: ``tool_search`` and ``call_tool``. Every other tool the caller may use is
*listed* (``- name — first line`` inside tool_search's description) or *deferred* (named only).
``tool_search`` returns full definitions as JSON in the tool result, so the tools array, and the
cached prompt prefix, never change mid-session. ``call_tool`` is unwrapped before hooks run, so
``before_tool`` hooks, permission checks and logs see the real tool (with ``via="call_tool"``).

The plan is built on first use and then frozen; :meth:`Toolbox.reset` rebuilds it (new usage
counts take effect only then). While core schemas plus the two meta-tools exceed the budget, the
least-used core tool moves to listed (ties: larger schema, then name), then the least-used listed
tool to deferred, then deferred tools are summarised by group (see :mod:`toolsift.plan`), so the
tools array fits its budget at any catalog size.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np

from .arguments import count, tool_names
from .assemble import AnthropicTool, OpenAITool, default_token_count, to_anthropic, to_mcp, to_openai, tool_references
from .callers import Caller, perms_of
from .errors import InvalidParameterError, InvalidToolError, MissingHandlerError, UnknownToolError
from .index import Index
from .learning import Learned
from .parts import counted_tokens
from .plan import CALL, DEFAULT_LIMIT, SEARCH, Plan, Planner, Tier
from .query import Query, check_text
from .registry import Catalog, Tool, name_arg
from .usage import Usage

log = logging.getLogger("toolsift.tiers")
_NONE = np.empty(0, dtype=np.uint32)  # the positions of a group no tool is in


@dataclass
class ToolTierOptions:
    """Tiering options (the ``tool_tiers`` design).

    Attributes:
        core: Tools sent with full schemas (demoted by usage when over budget).
        deferred: Tools named only; every other tool is listed.
        pinned: Tools pinned by hand: always core, never demoted.
        budget_tokens: Cap on what is sent up front; 0 means ``context_window // 20``.
        context_window: The model's context window, in tokens.
        usage_count: ``usage_count(name) -> int``, read when the plan is built.
        count_tokens: ``count_tokens(definition) -> int``; default: the index's own token costs
            (``ceil(bytes / 4)`` of each definition unless the index was built with a counter or a
            tool gives ``cost_tokens``), and ``ceil(bytes / 4)`` for the meta-tools.
        group: ``group(tool) -> str``, the group a deferred tool is summarised in when naming
            every tool would not fit, and that ``tool_search``'s ``group`` names; default the
            index's ``group_by`` (by default :func:`toolsift.plan.default_group`, the namespace of
            the name: the gateway's server, ``s3`` of ``s3__PutObject``).
    """

    core: Sequence[str] = ()
    deferred: Sequence[str] = ()
    pinned: Sequence[str] = ()
    budget_tokens: int = 0
    context_window: int = 128_000
    usage_count: Callable[[str], int] | None = None
    count_tokens: Callable[[dict[str, Any]], int] | None = None
    group: Callable[[Tool], str] | None = None

    def __post_init__(self) -> None:
        for what in ("core", "deferred", "pinned"):
            names = tool_names(f"ToolTierOptions.{what}", getattr(self, what))  # not a bare string
            if not isinstance(getattr(self, what), list | tuple):
                setattr(self, what, names)  # an iterator, read once
        count("ToolTierOptions.budget_tokens", self.budget_tokens)
        if count("ToolTierOptions.context_window", self.context_window) == 0:
            raise InvalidParameterError("ToolTierOptions.context_window must be >= 1, got 0")
        for what in ("usage_count", "count_tokens", "group"):
            value = getattr(self, what)
            if value is not None and not callable(value):
                kind = type(value).__name__
                raise InvalidParameterError(f"ToolTierOptions.{what} must be a function or None, not {kind}")

    def effective_budget_tokens(self) -> int:
        """The budget in force, in tokens: ``budget_tokens``, or ``context_window // 20`` for 0."""
        return self.budget_tokens or self.context_window // 20


@dataclass(frozen=True)
class ToolEvent:
    """What a hook sees: the real tool, its arguments, the caller and how it was reached."""

    name: str
    arguments: Mapping[str, Any]
    caller: tuple[str, ...]
    via: str | None = None


@dataclass
class Hooks:
    """Callbacks around tool execution. ``before_tool`` may raise to refuse a call."""

    before_tool: Callable[[ToolEvent], None] | None = None
    after_tool: Callable[[ToolEvent, Any], None] | None = None


def usage_key(caller: Caller) -> str:
    """The user a :class:`Toolbox` without an explicit ``user`` records its calls under.

    ``"caller:"`` followed by the SHA-256 (hex) of the JSON list of the caller's distinct
    permissions, sorted: the same in every process for the same permissions, different for
    different ones, so callers never move each other's pins unless they share a ``user``.
    """
    perms = sorted(set(perms_of(caller).names))
    return "caller:" + hashlib.sha256(json.dumps(perms).encode()).hexdigest()


def check_parts(
    owner: str,
    *,
    tiers: Any = None,
    handlers: Any = None,
    hooks: Any = None,
    learned: Any = None,
    usage: Any = None,
) -> None:
    """Refuses, when ``owner`` (a :class:`Toolbox`, or an adapter that makes toolboxes) is made,
    parts of the wrong kind, which would otherwise fail (or, for ``usage``, count nothing) only
    once a call has gone through ``before_tool``."""
    if tiers is not None and not isinstance(tiers, ToolTierOptions):
        raise InvalidParameterError(f"{owner} tiers must be ToolTierOptions or None, not {type(tiers).__name__}")
    if handlers is not None and not isinstance(handlers, Mapping):
        raise InvalidParameterError(f"{owner} handlers must map names to functions, not {type(handlers).__name__}")
    for name, handler in (handlers or {}).items():
        if not callable(handler):
            raise InvalidParameterError(f"{owner} handler of {name!r} is not a function: {type(handler).__name__}")
    if hooks is not None and not isinstance(hooks, Hooks):
        raise InvalidParameterError(f"{owner} hooks must be Hooks, not {type(hooks).__name__}")
    for hook in ("before_tool", "after_tool") if hooks is not None else ():
        if getattr(hooks, hook) is not None and not callable(getattr(hooks, hook)):
            raise InvalidParameterError(f"Hooks.{hook} must be a function or None")
    if learned is not None and not all(callable(getattr(learned, m, None)) for m in ("texts", "observe")):
        raise InvalidParameterError(f"{owner} learned must be a toolsift.Learned, not {type(learned).__name__}")
    if usage is not None and not all(callable(getattr(usage, m, None)) for m in ("record", "usage_count")):
        raise InvalidParameterError(
            f"{owner} usage must be a usage store (record and usage_count), not {type(usage).__name__}"
        )


@dataclass
class Toolbox:
    """Framework-neutral tool handling for one caller: tiers, meta-tools, hooks and execution.

    Args:
        catalog: The tools, as a :class:`Catalog` (indexed here) or a built :class:`Index`.
        tiers: Tier options; ``None`` sends every tool the caller may use. With tiers, a tool the
            caller may use must not be called ``tool_search`` or ``call_tool`` (the meta-tools'
            names): the toolbox refuses it with :class:`~toolsift.errors.InvalidToolError`.
        caller: Permissions of the caller; only tools it may use are ever named or run. They
            are read once, when the toolbox is made (:attr:`perms`): to revoke one, make a new
            toolbox.
        handlers: ``{name: fn(arguments) -> result}``.
        hooks: Callbacks around every real tool call.
        usage: A usage store (:class:`~toolsift.UsageStore`, :class:`~toolsift.RedisUsageStore`)
            that records every real call for ``user`` (feed ``usage.usage_count(box.user)`` to
            ``ToolTierOptions.usage_count`` to pin by use).
        user: Who the calls are recorded for. ``None`` (the default) keys usage by caller:
            :func:`usage_key` of ``caller``, so toolboxes of different callers never pool their
            usage; give several toolboxes the same ``user`` to pool theirs on purpose. After
            construction :attr:`user` holds the key in use.
        learned: Learn from use (see :mod:`toolsift.learning`): each ``tool_search`` query, or
            each conversation given to :meth:`select`, and the real tools called successfully
            after it (until the next one) are an event of ``scope``; :meth:`reset` rebuilds the
            index with the scope's learned texts when they changed, a cache-safe boundary. A
            toolbox built with a store that already holds texts for its scope starts with them.
        scope: Whose words the toolbox learns from and ranks with, required with ``learned``
            (or ``user``, which it then defaults to): a tenant's or user's id, so that one's
            requests never change another's ranking, or one name (``"shared"``) to pool several
            on purpose. Callers with the same permissions are not told apart otherwise.
    """

    catalog: Catalog | Index
    tiers: ToolTierOptions | None = None
    caller: Caller = None
    handlers: Mapping[str, Callable[[Mapping[str, Any]], Any]] = field(default_factory=dict)
    hooks: Hooks = field(default_factory=Hooks)
    usage: Usage | None = None
    user: str | None = None
    learned: Learned | None = None
    scope: str | None = None

    def __post_init__(self) -> None:
        self._check_parts()
        self.index = self.catalog if isinstance(self.catalog, Index) else Index(self.catalog)
        self._base = self.index  # what learned texts are added to (self.index: with them)
        self._perms = perms_of(self.caller).names
        if self.user is not None:
            check_text("user", self.user)  # refused now, not by the usage store after a call ran
        self._user_given = self.user
        self.user = self._user = usage_key(self._perms) if self.user is None else self.user
        for reserved in (SEARCH, CALL) if self.tiers is not None else ():
            if self.index.allows(reserved, caller=self._perms):  # one the caller may not use is never named
                raise InvalidToolError(
                    "the name is reserved for the meta-tool of a toolbox with tiers", tool=reserved, field="name"
                )
        # the plan and its core tools sorted by name, made together (one attribute, so a thread
        # never pairs one plan's tools with another plan's tool_search)
        self._planned: tuple[Plan, tuple[Tool, ...]] | None = None
        self._grouped: tuple[Plan, Mapping[str, np.ndarray]] | None = None  # see _members
        self.used: dict[str, int] = {}
        """Calls per tool in this session."""
        self._session = threading.Lock()  # guards used and the pending request's calls
        if self.scope is not None and not isinstance(self.scope, str):
            raise InvalidParameterError(f"scope must be a string or None, not {type(self.scope).__name__}")
        if self.learned is not None and self.scope is None and self._user_given is None:
            # by default, every caller with these permissions (every tenant alike) would share them
            raise InvalidParameterError(
                "Toolbox learned= needs scope= (whose words it learns from and ranks with: a tenant's or "
                "user's id, or one name to pool several on purpose) or user="
            )
        self.scope = self.user if self.scope is None else self.scope
        # the request being answered and the tools called since (an event once the next comes)
        self._request: str | Query | None = None
        self._called: list[str] = []
        if self.learned is not None:
            self._relearn()

    def _check_parts(self) -> None:
        for part, value in (("handlers", self.handlers), ("hooks", self.hooks)):
            if value is None:  # no default here: a toolbox always has both
                raise InvalidParameterError(f"Toolbox {part} must not be None")
        check_parts(
            "Toolbox",
            tiers=self.tiers,
            handlers=self.handlers,
            hooks=self.hooks,
            learned=self.learned,
            usage=self.usage,
        )

    # -- the plan ---------------------------------------------------------------------------

    def _allowed_positions(self) -> list[int]:
        positions: list[int] = self.index.allowed_positions(caller=self._perms).tolist()
        return positions

    def allowed_tools(self) -> list[Tool]:
        """Every tool the caller may use, in registry order."""
        return [self.index.tool(i) for i in self._allowed_positions()]

    @property
    def perms(self) -> tuple[str, ...]:
        """The caller's permissions as read when the toolbox was made: what every listing,
        search and call of it checks."""
        return self._perms

    def plan(self) -> dict[str, Tier]:
        """``{name: tier}`` for every tool the caller may use; built on first use, then frozen."""
        return dict(self._frozen().tiers)

    def _frozen(self) -> Plan:
        return self._plan_and_core()[0]

    def _plan_and_core(self) -> tuple[Plan, tuple[Tool, ...]]:
        planned = self._planned
        if planned is None:
            plan = self._build_plan()
            names = sorted(n for n, t in plan.tiers.items() if t is Tier.CORE)
            planned = self._planned = (plan, tuple(self.index.get(n, caller=self._perms) for n in names))
        return planned

    def reset(self) -> None:
        """Forgets the plan (and the session's usage) so the next use rebuilds it; with a
        ``learned`` store, the pending request is learned from and the index rebuilt with the
        scope's learned texts if they changed (by this box's events, another process's sharing
        the store, or ageing)."""
        self._planned = None
        with self._session:
            self.used.clear()
        if self.learned is not None:
            self._learn(None)
            self._relearn()

    def _relearn(self) -> None:
        assert self.learned is not None and self.scope is not None
        try:
            texts = self.learned.texts(self.scope, self.index)
        except Exception:  # the store failed: the index in use stays, the next reset tries again
            log.warning("learned texts of scope %r not read", self.scope, exc_info=True)
            return
        # only the tools this caller may use: another's learned words (what its users ask for)
        # must not reach this caller's index, its statistics or Index.learned
        texts = {n: t for n, t in texts.items() if self._base.allows(n, caller=self._perms)}
        if texts != self.index.learned:  # rebuilt from the index given, so sessions share copies
            base = self._base
            self.index = base if texts == base.learned else base.with_learned(texts)

    def _learn(self, request: str | Query | None) -> None:
        """Learns from the pending request and the calls after it, then waits on ``request``."""
        if self.learned is None:
            return
        with self._session:
            pending, called = self._request, self._called
            self._request, self._called = request, []
        if pending is not None and called:
            assert self.scope is not None
            try:
                self.learned.observe(self.index, pending, called, scope=self.scope, caller=self._perms)
            except Exception:  # the store failed (locked, full): this event is lost, not the request
                log.warning("learning from a request of scope %r not recorded", self.scope, exc_info=True)

    def _build_plan(self) -> Plan:
        positions = self._allowed_positions()
        tools = [self.index.tool(i) for i in positions]
        opts = self.tiers
        if opts is None:  # every tool the caller may use goes out in full
            return Plan(dict.fromkeys((t.name for t in tools), Tier.CORE), {}, frozenset(), {}, {})
        tiers = {t.name: Tier.LISTED for t in tools}
        for name in opts.deferred:
            if name in tiers:
                tiers[name] = Tier.DEFERRED
        marked = [t.name for t in tools if t.core]  # "always selected": sent in full, never demoted
        for name in (*opts.core, *opts.pinned, *marked):
            if name in tiers:
                tiers[name] = Tier.CORE
        counter = default_token_count if opts.count_tokens is None else _checked_counter(opts.count_tokens)
        if opts.count_tokens is None:  # the index's own costs: counted once, when it was built
            size = {t.name: self.index.cost(i) for t, i in zip(tools, positions, strict=True)}
        else:
            size = {t.name: counter(t.definition()) for t in tools}
        usage = _no_usage if opts.usage_count is None else _checked_usage(opts.usage_count)
        pinned = {*opts.pinned, *marked}
        planner = Planner(tools, tiers, pinned, size, usage, counter, opts.group or self.index.group_by)
        return planner.plan(opts.effective_budget_tokens())

    @overload
    def tools(self, format: Literal["openai"] = "openai") -> list[OpenAITool]: ...
    @overload
    def tools(self, format: Literal["anthropic"]) -> list[AnthropicTool]: ...
    @overload
    def tools(self, format: str) -> list[Any]: ...
    def tools(self, format: str = "openai") -> list[Any]:
        """The tools array: core tools sorted by name, then ``tool_search`` and ``call_tool``
        (typed as the ``openai`` / ``anthropic`` SDKs' own tool params for those formats)."""
        plan, found = self._plan_and_core()
        core = list(found)  # found when the plan was made: a turn does not scan the plan
        if self.tiers is None:
            return _emit(core, format)
        meta = [Tool(d["name"], d["description"], d["parameters"]) for d in (plan.search, plan.call)]
        return _emit([*core, *meta], format)

    def hosted_search_tools(self) -> list[AnthropicTool]:
        """Anthropic ``tools`` for its hosted tool search: every tool the caller may use, the core
        ones loaded, all others with ``defer_loading: true`` (add Anthropic's search tool to it)."""
        plan = self.plan()
        tools = self.allowed_tools()
        return to_anthropic(tools, defer=[t.name for t in tools if plan[t.name] is not Tier.CORE])

    def search_references(self, query: str, *, k: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
        """A client-side tool search for Anthropic: ``tool_reference`` blocks of the ``k`` best tools."""
        return tool_references(h.tool for h in self.index.search(query, k=k, caller=self._perms))

    # -- execution -----------------------------------------------------------------------------
    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Runs a tool call from the model: ``tool_search``, ``call_tool`` or a tool by name.

        Handlers and hooks must be plain functions here; a handler or hook that returns an
        awaitable (``async def``) is refused with :class:`~toolsift.errors.InvalidParameterError`
        before anything is recorded: use :meth:`acall`."""
        prepared = self._prepare(name, arguments)
        if isinstance(prepared, str):
            return prepared
        event, handler = prepared
        if self.hooks.before_tool:
            _not_awaitable(self.hooks.before_tool(event), "before_tool hook")
        result = _not_awaitable(_handler(handler, event)(event.arguments), f"handler of {event.name!r}")
        self._record(event.name)
        if self.hooks.after_tool:
            _not_awaitable(self.hooks.after_tool(event, result), "after_tool hook")
        return result

    async def acall(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """:meth:`call` for async code: a handler or hook may be ``async def`` (or return any
        awaitable), and is awaited. Permissions are checked and ``before_tool`` runs before the
        handler; usage is recorded and ``after_tool`` runs only once the handler has finished
        without raising. ``tool_search`` itself is synchronous work of microseconds (the index
        releases the GIL), so it is answered without a thread hop."""
        prepared = self._prepare(name, arguments)
        if isinstance(prepared, str):
            return prepared
        event, handler = prepared
        if self.hooks.before_tool:
            await _settled(self.hooks.before_tool(event))
        result = await _settled(_handler(handler, event)(event.arguments))
        self._record(event.name)
        if self.hooks.after_tool:
            await _settled(self.hooks.after_tool(event, result))
        return result

    def _prepare(
        self, name: str, arguments: Mapping[str, Any] | None
    ) -> str | tuple[ToolEvent, Callable[[Mapping[str, Any]], Any] | None]:
        """A ``tool_search`` answer, or the real tool's event (``call_tool`` unwrapped) and its
        handler (``None``: none registered), once the caller's permission to use it is checked."""
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, Mapping):
            kind = type(arguments).__name__
            raise InvalidParameterError(f"the arguments of a tool call must be an object, not {kind}")
        arguments = dict(arguments)
        if self.tiers is not None and name == SEARCH:
            return self._search(arguments)
        via = None
        if self.tiers is not None and name == CALL:
            target, inner = arguments.get("name"), arguments.get("arguments", {})
            if not isinstance(target, str) or not isinstance(inner, Mapping):
                raise InvalidParameterError("call_tool needs a string 'name' and an object 'arguments'")
            name, arguments, via = target, dict(inner), CALL
        name = name_arg(name)  # the checked name is the one looked up (a str subclass could lie)
        if not self.index.allows(name, caller=self._perms):
            raise UnknownToolError(name)  # forbidden and unknown look the same
        return ToolEvent(name, arguments, self._perms, via), self.handlers.get(name)

    def _record(self, name: str) -> None:
        with self._session:
            self.used[name] = self.used.get(name, 0) + 1
            if self._request is not None:
                self._called.append(name)
        if self.usage is not None:
            try:
                self.usage.record(self._user, name)
            except Exception:  # the call ran: its result is returned, only the count is lost
                log.warning("usage of %r not recorded", name, exc_info=True)

    def _search(self, arguments: Mapping[str, Any]) -> str:
        return json.dumps([t.definition() for t in self.search_tools(arguments)], ensure_ascii=False)

    def search_tools(self, arguments: Mapping[str, Any]) -> list[Tool]:
        """The tools ``tool_search`` called with ``arguments`` returns (the caller's tools only)."""
        query, limit = arguments.get("query", ""), arguments.get("limit", DEFAULT_LIMIT)
        group = arguments.get("group")
        if not isinstance(query, str) or isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidParameterError("tool_search needs a string 'query' and a non-negative integer 'limit'")
        if group is None and query.startswith("group:"):
            group, _, query = query[len("group:") :].partition(" ")
        if group is not None and not isinstance(group, str):
            raise InvalidParameterError("tool_search's 'group' must be a string")
        if query.startswith("select:"):
            wanted = dict.fromkeys(n.strip() for n in query[len("select:") :].split(",") if n.strip())
            allowed = [n for n in wanted if self.index.allows(n, caller=self._perms)]
            if "limit" in arguments:  # names asked for are all given unless a limit is
                allowed = allowed[:limit]
            found = [self.index.get(n, caller=self._perms) for n in allowed]
            self._learn(None)  # the calls after it answer no ranked request: none is taught
        elif group is not None:
            found = self._in_group(group, query, limit)
            self._learn(None)
        else:
            found = [h.tool for h in self.index.search(query, k=limit, caller=self._perms)]
            if query.strip():
                self._learn(query)
        return found

    def _in_group(self, group: str, query: str, limit: int) -> list[Tool]:
        """The best ``limit`` tools of ``group`` for ``query`` (the caller's tools only); without a
        query, the group's first tools in registry order: the hierarchical step, a group first."""
        if self.tiers is None or self.tiers.group is None:  # the index groups tools alike
            if not query.strip():
                positions = self.index.allowed_positions(caller=self._perms, group=group)[:limit]
                return [self.index.tool(int(i)) for i in positions]
            return [h.tool for h in self.index.search(query, k=limit, caller=self._perms, group=group)]
        members = self._members().get(group, _NONE)  # by the tiers' own group function
        if not query.strip():
            return [self.index.tool(int(i)) for i in members[:limit]]
        return [h.tool for h in self.index._search_in(query, count("limit", limit), perms_of(self._perms), members)]

    def _members(self) -> Mapping[str, np.ndarray]:
        """The registry positions of each group of the plan's tools (by the tiers' own group
        function), ascending; made once per plan."""
        plan = self._frozen()
        grouped = self._grouped
        if grouped is None or grouped[0] is not plan:
            found: dict[str, list[int]] = {}
            for name, g in plan.groups.items():
                found.setdefault(g, []).append(self.index.position(name))
            members = {g: np.array(sorted(p), dtype=np.uint32) for g, p in found.items()}
            grouped = self._grouped = (plan, members)
        return grouped[1]

    def select(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        budget_tokens: int | None = None,
        format: str = "openai",
        group: str | Sequence[str] | None = None,
        groups: int | None = None,
    ) -> list[dict[str, Any]]:
        """Selection mode: the tools for this turn, chosen from the conversation within
        ``budget_tokens`` (``None``: no limit). Tools already used in the session stay loaded and
        are charged to the budget first (so the turn's tools fit it, unless the used tools alone
        do not). ``group`` and ``groups`` limit the choice to groups of tools, as for
        :meth:`Index.select` (``groups``: the hierarchical variant, the best groups for the
        conversation first, then tools inside them)."""
        query = Query.from_messages(messages)
        self._learn(query)
        with self._session:
            used = list(self.used)
        kept = {self.index.position(n) for n in used if self.index.allows(n, caller=self._perms)}

        def chosen(tokens: int | None) -> set[int]:
            sel = self.index.select(query, caller=self._perms, budget_tokens=tokens, group=group, groups=groups)
            return set(sel.positions)

        if budget_tokens is None or not kept:
            picked = chosen(budget_tokens)
        else:
            total = count("budget_tokens", budget_tokens)
            left = max(total - sum(self.index.cost(i) for i in kept), 0)
            picked = chosen(left)
            # a used tool the selection took again was charged twice: once more with that room,
            # kept if the whole still fits (it may take other tools, so it is checked)
            again = picked & kept
            if again and left:
                more = chosen(left + sum(self.index.cost(i) for i in again))
                if sum(self.index.cost(i) for i in more | kept) <= total:
                    picked = more
        order = [self.index.tool(i) for i in sorted(kept | picked)]
        return _emit(sorted(order, key=lambda t: not t.core), format)


def _checked_counter(count_tokens: Callable[[dict[str, Any]], int]) -> Callable[[dict[str, Any]], int]:
    """``count_tokens``, whose every answer must be an int in [0, 2**32) (a typed error naming
    the tool otherwise, not a crash or a plan over its budget)."""

    def counted(definition: dict[str, Any]) -> int:
        name = str(definition.get("name"))
        return counted_tokens(count_tokens, definition, name, "count_tokens", "ToolTierOptions.count_tokens")

    return counted


def _checked_usage(usage_count: Callable[[str], int]) -> Callable[[str], int]:
    """``usage_count``, whose every answer must be an int (a typed error naming the tool)."""

    def used(name: str) -> int:
        value = usage_count(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidToolError(
                f"ToolTierOptions.usage_count returned {value!r}, not an int", tool=name, field="usage_count"
            )
        return value

    return used


def _no_usage(name: str) -> int:
    return 0


def _handler(
    handler: Callable[[Mapping[str, Any]], Any] | None, event: ToolEvent
) -> Callable[[Mapping[str, Any]], Any]:
    """The handler, once ``before_tool`` has seen the call (it may refuse, and log, a call that
    has no handler too)."""
    if handler is None:
        raise MissingHandlerError(f"no handler is registered for tool {event.name!r}", tool=event.name)
    return handler


def _not_awaitable(value: Any, what: str) -> Any:
    """``value``, refused when it is an awaitable: a synchronous call would otherwise hand an
    un-run coroutine on as the result (and count the call before its work ran)."""
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never run: no "coroutine was never awaited" warning later
        raise InvalidParameterError(f"the {what} is asynchronous: run the call with Toolbox.acall")
    return value


async def _settled(value: Any) -> Any:
    """``value``, awaited when it is an awaitable."""
    return await value if inspect.isawaitable(value) else value


def _emit(tools: Iterable[Tool], format: str) -> list[Any]:
    emitters: dict[str, Callable[[Iterable[Tool]], list[Any]]] = {
        "openai": to_openai,
        "anthropic": to_anthropic,
        "mcp": to_mcp,
    }
    if format not in emitters:
        raise InvalidParameterError(f"format must be one of {sorted(emitters)}, not {format!r}")
    return emitters[format](tools)
