"""The tier plan: which tools go out with full schemas, which are named inside ``tool_search``'s
description, and how the rest are summarised by group, so that the tools array fits its budget at
any catalog size.

A plan is made in four steps, each taken only while the tools array (core schemas plus the two
meta-tools) is over the budget, each moving tools in one fixed order:

1. core tools, least used first (ties: larger schema, then name), become *listed*
   (``- name — first line`` in the description); pinned tools never move;
2. listed tools, in the same order, become *deferred* (named only: ``Also available: a, b``);
3. groups of deferred tools, those with the most tools first (ties: name), are *summarised*: one
   line per group with its size and its most telling words (``- s3 (96 tools): bucket, object,
   multipart``) instead of every name; ``tool_search`` takes a ``group`` to search within one;
4. the group lines shrink to names and counts (``Groups: s3 (96), ec2 (500), and 12 more groups
   (2,000 tools)``), naming as many groups as fit.

When groups were summarised, the room their summaries freed lists deferred tools of the other
groups again, the most used first, as many as fit (step 2 deferred them before step 3 knew it).

Within a step the number of tools (or groups) to move is found by bisection, since moving one more
never makes the array larger under a counter that grows with the text; each test builds the
description once, so a plan costs O(n log n) for n tools. A counter that is not monotone gets
the first count that fits after the bisection, found one by one. Only the caller's own tools are
ever planned, named, counted or summarised.

With the default counter (``ceil(bytes / 4)`` of the compact JSON), a test does not build the
description at all: the JSON-escaped UTF-8 size of every line and name is measured once, each step
keeps running sums in its own order, and a test is arithmetic on those sums, so a plan costs
O(n log n) for the sort and O(n) for the rest. The description is built once, for the plan found,
and counted for real; should that count ever differ from the arithmetic, the plan is made again by
building and counting every test (the path a custom counter always takes).
"""

from __future__ import annotations

import enum
import functools
import heapq
import itertools
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .assemble import default_token_count
from .errors import InvalidToolError
from .registry import Tool

log = logging.getLogger("toolsift.plan")

SEARCH, CALL = "tool_search", "call_tool"
DEFAULT_LIMIT = 5
#: Words shown per summarised group.
GROUP_WORDS = 3
UNGROUPED = "other"
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")  # where str.splitlines() splits
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


class Tier(str, enum.Enum):
    """Where a tool sits in the plan."""

    CORE = "core"
    LISTED = "listed"
    DEFERRED = "deferred"


def group_name(group_by: Callable[[Tool], str], tool: Tool, source: str = "group_by") -> str:
    """The group the owner's ``group_by`` gives ``tool``; what it raises or a group that is not
    a string is an :class:`~toolsift.errors.InvalidToolError` naming the tool."""
    try:
        found = group_by(tool)
    except Exception as e:  # the owner's function: said as the tool it failed on
        raise InvalidToolError(f"{source} raised {type(e).__name__}: {e}", tool=tool.name, field="group") from e
    if not isinstance(found, str):
        raise InvalidToolError(f"{source} returned {type(found).__name__}, not a string", tool=tool.name, field="group")
    return str.__str__(found)


def default_group(tool: Tool) -> str:
    """The innermost namespace of a tool's name: ``s3`` for ``s3__PutObject``, ``files`` for the
    gateway's ``files__read_file`` or for ``files.read``, ``aws__s3`` for ``aws__s3__PutObject`` (a
    gateway in front of one large upstream); :data:`UNGROUPED` for a name without one."""
    return namespace(tool.name)


def namespace(name: str) -> str:
    """The innermost namespace of a tool name (see :func:`default_group`)."""
    for separator in ("__", "."):
        head, sep, tail = name.rpartition(separator)
        if sep and head and tail:
            return head
    return UNGROUPED


def first_line(text: str) -> str:
    """The first line of ``text`` stripped (``text.strip().splitlines()[0]``, without splitting a
    long text into all its lines)."""
    stripped = text.strip()
    end = _LINE_BREAK.search(stripped)
    return stripped if end is None else stripped[: end.start()]


@dataclass(frozen=True)
class Plan:
    """A frozen plan: each tool's tier and group, the groups summarised, the meta-tool definitions."""

    tiers: Mapping[str, Tier]
    groups: Mapping[str, str]
    summarised: frozenset[str]
    search: dict[str, Any]
    call: dict[str, Any]


@dataclass
class _State:
    tiers: dict[str, Tier]
    summarised: frozenset[str] = frozenset()
    compact: int | None = None  # groups named in the compact form (step 4), or None


@dataclass(frozen=True)
class _Sizes:
    """What the default counter needs of a state: the core schemas' tokens and, for each part of
    tool_search's description, how many items it has and their JSON-escaped UTF-8 bytes."""

    core: int
    listed: int = 0
    listed_bytes: int = 0
    named: int = 0
    named_bytes: int = 0
    groups: int = 0  # summarised groups (their lines, or the compact line when compact_bytes is set)
    group_bytes: int = 0
    compact_bytes: int | None = None


class Planner:
    """Makes the plan of one caller's tools (the tools it may use, in registry order).

    Args:
        tools: The caller's tools.
        tiers: Their starting tiers (core, listed or deferred, from the options).
        pinned: Tools that stay core.
        size: Each tool's schema cost in tokens.
        usage: ``usage(name) -> int``.
        count: ``count(definition) -> int``, the token counter.
        group: ``group(tool) -> str``.
    """

    def __init__(
        self,
        tools: Sequence[Tool],
        tiers: dict[str, Tier],
        pinned: set[str],
        size: Mapping[str, int],
        usage: Callable[[str], int],
        count: Callable[[dict[str, Any]], int],
        group: Callable[[Tool], str],
    ) -> None:
        self._tiers, self._pinned, self._size, self._usage, self._count = tiers, pinned, size, usage, count
        self._names = sorted(t.name for t in tools)
        self._line = {t.name: f"- {t.name} — {first_line(t.description)}" for t in tools}
        self._tools = tools
        self._group = {t.name: group_name(group, t, "ToolTierOptions.group") for t in tools}
        self._call = call_definition()
        self._call_cost = count(self._call)
        self._arithmetic = count is default_token_count

    def plan(self, budget: int) -> Plan:
        if self._arithmetic:
            state = self._steps(budget, self._measured(budget))
            search = self._search(state)
            if self._total(state, search) == self._tokens(self._sizes(state)):
                return Plan(state.tiers, self._group, state.summarised, search, self._call)
            log.warning("tool_search's measured size differs from its count; planning by counting")
        state = self._steps(budget, self._fits(budget))
        return Plan(state.tiers, self._group, state.summarised, self._search(state), self._call)

    def _steps(self, budget: int, test: _Test) -> _State:
        state = _State(dict(self._tiers))
        for step in (self._demote_core, self._defer_listed, self._summarise, self._compact):
            if test.fits(state):
                break
            state = step(state, test)
        if state.summarised and test.fits(state):  # summaries freed room deferring had to take
            state = self._relist(state, test)
        return state

    # -- the two ways of testing a state -------------------------------------------------------
    def _fits(self, budget: int) -> _Test:
        """Builds each state's description and counts it."""
        return _Test(lambda state: self._total(state) <= budget, None)

    def _measured(self, budget: int) -> _Test:
        """Adds up measured sizes: the default counter, without building a description."""
        return _Test(lambda state: self._tokens(self._sizes(state)) <= budget, lambda s: self._tokens(s) <= budget)

    def _total(self, state: _State, search: dict[str, Any] | None = None) -> int:
        core = sum(self._size[n] for n, tier in state.tiers.items() if tier is Tier.CORE)
        return core + self._count(search if search is not None else self._search(state)) + self._call_cost

    # -- the steps -----------------------------------------------------------------------------
    def _demote_core(self, state: _State, test: _Test) -> _State:
        """Moves the fewest core tools to listed, least used first, for the plan to fit."""
        order = self._order(state, Tier.CORE)

        def moved(j: int) -> _State:
            return self._moved(state, order, j, Tier.LISTED)

        check = test.sizes
        if check is None:
            return moved(_fewest(len(order), lambda j: test.fits(moved(j))))
        base, size, line = self._sizes(state), self._prefix(order, self._size), self._prefix(order, self._esc_line)

        def sizes(j: int) -> _Sizes:
            return replace(
                base, core=base.core - size[j], listed=base.listed + j, listed_bytes=base.listed_bytes + line[j]
            )

        return moved(_fewest(len(order), lambda j: check(sizes(j))))

    def _defer_listed(self, state: _State, test: _Test) -> _State:
        """Moves the fewest listed tools to deferred, least used first, for the plan to fit."""
        order = self._order(state, Tier.LISTED)

        def moved(j: int) -> _State:
            return self._moved(state, order, j, Tier.DEFERRED)

        check = test.sizes
        if check is None:
            return moved(_fewest(len(order), lambda j: test.fits(moved(j))))
        base, line, name = self._sizes(state), self._prefix(order, self._esc_line), self._prefix(order, self._esc_name)

        def sizes(j: int) -> _Sizes:
            listed = {"listed": base.listed - j, "listed_bytes": base.listed_bytes - line[j]}
            return replace(base, **listed, named=base.named + j, named_bytes=base.named_bytes + name[j])

        return moved(_fewest(len(order), lambda j: check(sizes(j))))

    def _relist(self, state: _State, test: _Test) -> _State:
        """Lists again the most deferred tools outside the summarised groups that fit, most used
        first (the reverse of the order they were deferred in): step 2 defers tools before
        step 3 knows how much its summaries free."""
        order = [n for n in reversed(self._order(state, Tier.DEFERRED)) if self._group[n] not in state.summarised]

        def moved(j: int) -> _State:
            tiers = dict(state.tiers)
            tiers.update(dict.fromkeys(order[:j], Tier.LISTED))
            return _State(tiers, state.summarised, state.compact)

        fits: Callable[[int], bool] = lambda j: test.fits(moved(j))  # noqa: E731
        check = test.sizes
        if check is not None:
            base, line, name = (
                self._sizes(state),
                self._prefix(order, self._esc_line),
                self._prefix(order, self._esc_name),
            )

            def sizes(j: int) -> _Sizes:
                listed = {"listed": base.listed + j, "listed_bytes": base.listed_bytes + line[j]}
                return replace(base, **listed, named=base.named - j, named_bytes=base.named_bytes - name[j])

            fits = lambda j: check(sizes(j))  # noqa: E731
        return moved(_most(len(order), fits))

    def _order(self, state: _State, tier: Tier) -> list[str]:
        return sorted(
            (n for n, t in state.tiers.items() if t is tier and n not in self._pinned),
            key=lambda n: (self._usage(n), -self._size[n], n),
        )

    @staticmethod
    def _moved(state: _State, order: list[str], j: int, to: Tier) -> _State:
        tiers = dict(state.tiers)
        tiers.update(dict.fromkeys(order[:j], to))
        return _State(tiers)

    def _summarise(self, state: _State, test: _Test) -> _State:
        """Summarises the fewest groups of deferred tools, the largest first, for the plan to fit."""
        counts = self._deferred_counts(state)
        order = sorted(counts, key=lambda g: (-counts[g], g))

        def summarised(j: int) -> _State:
            return _State(state.tiers, frozenset(order[:j]))

        check = test.sizes
        if check is None:
            return summarised(_fewest(len(order), lambda j: test.fits(summarised(j))))
        base = self._sizes(state)
        names: Counter[str] = Counter()
        for n, t in state.tiers.items():
            if t is Tier.DEFERRED:
                names[self._group[n]] += self._esc_name[n]
        tools = self._prefix(order, counts)
        named = self._prefix(order, names)
        lines = self._prefix(order, {g: _escaped(_group_line(g, counts[g], self._words.get(g, ()))) for g in order})

        def sizes(j: int) -> _Sizes:
            left = {"named": base.named - tools[j], "named_bytes": base.named_bytes - named[j]}
            return replace(base, **left, groups=j, group_bytes=lines[j])

        return summarised(_fewest(len(order), lambda j: check(sizes(j))))

    def _compact(self, state: _State, test: _Test) -> _State:
        """Names as many groups as fit, by name and count only."""
        groups = len(state.summarised)

        def shown(j: int) -> _State:
            return _State(state.tiers, state.summarised, groups - j)

        check = test.sizes
        if check is None or not groups:
            return shown(_fewest(groups, lambda j: test.fits(shown(j))))
        base = self._sizes(state)
        counts = self._deferred_counts(state)
        order = sorted(state.summarised, key=lambda g: (-counts[g], g))
        items = self._prefix(order, {g: _escaped(f"{g} ({counts[g]})") for g in order})
        tools = self._prefix(order, counts)

        def sizes(j: int) -> _Sizes:
            c = groups - j  # groups named
            line = _escaped(_GROUPS_HEAD) + 1 + items[c] + 2 * (c - 1 + (c < groups))
            if c < groups:
                line += _escaped(_more(groups - c, tools[groups] - tools[c]))
            return replace(base, groups=groups, compact_bytes=line)

        return shown(_fewest(groups, lambda j: check(sizes(j))))

    def _deferred_counts(self, state: _State) -> Counter[str]:
        return Counter(self._group[n] for n, t in state.tiers.items() if t is Tier.DEFERRED)

    @functools.cached_property
    def _words(self) -> dict[str, tuple[str, ...]]:  # needed only once groups are summarised
        return _group_words(self._tools, self._group)

    # -- sizes for the default counter ---------------------------------------------------------
    @functools.cached_property
    def _esc_line(self) -> dict[str, int]:
        return {n: _escaped(line) for n, line in self._line.items()}

    @functools.cached_property
    def _esc_name(self) -> dict[str, int]:
        return {n: _escaped(n) for n in self._line}

    @staticmethod
    def _prefix(order: Sequence[str], value: Mapping[str, int]) -> list[int]:
        """``out[j]``: the sum of ``value`` over ``order[:j]``."""
        out = [0]
        for key in order:
            out.append(out[-1] + value[key])
        return out

    def _sizes(self, state: _State) -> _Sizes:
        """The sizes of ``state``, measured tool by tool (O(n)); each step then keeps running sums."""
        core = listed = listed_bytes = named = named_bytes = 0
        for n, tier in state.tiers.items():
            if tier is Tier.CORE:
                core += self._size[n]
            elif tier is Tier.LISTED:
                listed, listed_bytes = listed + 1, listed_bytes + self._esc_line[n]
            elif self._group[n] not in state.summarised:
                named, named_bytes = named + 1, named_bytes + self._esc_name[n]
        sizes = _Sizes(core, listed, listed_bytes, named, named_bytes)
        if not state.summarised:
            return sizes
        counts = self._deferred_counts(state)
        order = sorted((g for g in counts if g in state.summarised), key=lambda g: (-counts[g], g))
        lines = self._groups_lines(state, order, counts)
        if state.compact is None:
            return replace(sizes, groups=len(order), group_bytes=sum(_escaped(x) for x in lines[1:]))
        return replace(sizes, groups=len(order), compact_bytes=_escaped(lines[0]))

    def _tokens(self, sizes: _Sizes) -> int:
        """The plan's total under the default counter: core schemas, tool_search and call_tool."""
        grouped = sizes.groups > 0
        text = _escaped(_HEADER)  # the description's lines, each after the first behind a "\n" (2 bytes)
        if sizes.listed:
            text += 2 + _escaped("Tools:") + 2 * sizes.listed + sizes.listed_bytes
        if sizes.named:
            text += 2 + _escaped(_ALSO) + sizes.named_bytes + 2 * (sizes.named - 1)
        if grouped and sizes.compact_bytes is None:
            text += 2 + _escaped(_GROUPS_HEAD) + 2 * sizes.groups + sizes.group_bytes
        elif grouped:
            text += 2 + (sizes.compact_bytes or 0)
        empty = _EMPTY_SEARCH_BYTES[grouped]
        return sizes.core + math.ceil((empty + text) / 4) + self._call_cost

    # -- the description -----------------------------------------------------------------------
    def _search(self, state: _State) -> dict[str, Any]:
        tiers, summarised = state.tiers, state.summarised
        listed = [self._line[n] for n in self._names if tiers.get(n) is Tier.LISTED]
        named = [n for n in self._names if tiers.get(n) is Tier.DEFERRED and self._group[n] not in summarised]
        lines = [_HEADER]
        if listed:
            lines += ["Tools:", *listed]
        if named:
            lines.append(_ALSO + ", ".join(named))
        if summarised:
            lines += self._groups(state)
        return search_definition("\n".join(lines), grouped=bool(summarised))

    def _groups(self, state: _State) -> list[str]:
        counts = Counter(
            self._group[n] for n, t in state.tiers.items() if t is Tier.DEFERRED and self._group[n] in state.summarised
        )
        order = sorted(counts, key=lambda g: (-counts[g], g))
        return self._groups_lines(state, order, counts)

    def _groups_lines(self, state: _State, order: list[str], counts: Mapping[str, int]) -> list[str]:
        if state.compact is None:
            return [_GROUPS_HEAD] + [_group_line(g, counts[g], self._words.get(g, ())) for g in order]
        shown, rest = order[: state.compact], order[state.compact :]
        items = [f"{g} ({counts[g]})" for g in shown]
        if rest:
            items.append(_more(len(rest), sum(counts[g] for g in rest)))
        return [_GROUPS_HEAD + " " + ", ".join(items)]


@dataclass(frozen=True)
class _Test:
    """How a plan's steps test a state: ``fits(state)``; and, with the default counter,
    ``sizes(sizes)`` on running sums, so that a step need not make the states it tests."""

    fits: Callable[[_State], bool]
    sizes: Callable[[_Sizes], bool] | None


_HEADER = (
    "Search the other available tools by what they do, and load their full definitions (returned "
    f"as JSON). Query `select:name1,name2` loads tools by exact name. Call a loaded tool with {CALL}."
)
_ALSO = "Also available: "
_GROUPS_HEAD = 'Groups of further tools (give "group" to search within one):'
#: Compact-JSON bytes of tool_search's definition with an empty description, without and with
#: ``group``: the part of its size that does not depend on the plan.
_EMPTY_SEARCH_BYTES: dict[bool, int] = {}
_PLAIN = re.compile(r'[\x00-\x1f"\\]')


def _escaped(text: str) -> int:
    """UTF-8 bytes of ``text`` inside compact JSON (``ensure_ascii=False``), quotes not counted."""
    if text.isascii() and not _PLAIN.search(text):
        return len(text)
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2


def _more(groups: int, tools: int) -> str:
    return f"and {groups} more groups ({_tools(tools)})"


def _fewest(most: int, fits: Callable[[int], bool]) -> int:
    """The smallest ``j`` in ``0..most`` for which ``fits(j)`` (``most`` when none does), by
    bisection, then one by one should the counter not shrink as ``j`` grows."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    while not fits(lo) and lo < most:
        lo += 1
    return lo


def _most(most: int, fits: Callable[[int], bool]) -> int:
    """The largest ``j`` in ``0..most`` up to which ``fits`` holds (``fits(0)`` does), by
    bisection, then one by one down should the counter not grow as ``j`` grows."""
    j = _fewest(most, lambda i: i == most or not fits(i + 1))
    while j and not fits(j):
        j -= 1
    return j


def _group_line(group: str, count: int, words: Sequence[str]) -> str:
    return f"- {group} ({_tools(count)})" + (": " + ", ".join(words) if words else "")


def _tools(n: int) -> str:
    return f"{n:,} tool" if n == 1 else f"{n:,} tools"


def _group_words(tools: Sequence[Tool], group: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Each group's most telling words: frequent in its tools' names and first lines, rare in the
    other groups' (share of the group's tools holding the word times its inverse document
    frequency over all the caller's tools; words within the group's own name left out; ties by
    the word)."""
    held: dict[str, list[str]] = {}  # per group, each of its tools' distinct words
    size: Counter[str] = Counter()
    own = {g: re.sub(r"[\W_]+", "", g.lower()) for g in set(group.values())}
    for tool in tools:
        g = group[tool.name]
        found = _WORD.findall(f"{tool.name} {first_line(tool.description)}")
        words = set(" ".join(found).lower().split())  # one lower() per tool; the words are ASCII letters
        mine = own[g]
        held.setdefault(g, []).extend(w for w in words if len(w) > 2 and w not in mine)
        size[g] += 1
    df = Counter(itertools.chain.from_iterable(held.values()))
    n = len(tools)
    out = {}
    for g, kept in held.items():
        counts = Counter(kept)
        best = heapq.nsmallest(GROUP_WORDS, counts, key=lambda w: (-(counts[w] / size[g]) * math.log(n / df[w]), w))
        out[g] = tuple(best)
    return out


def search_definition(description: str, *, grouped: bool = False) -> dict[str, Any]:
    """``tool_search``'s definition; ``group`` is offered when the description summarises groups."""
    properties: dict[str, Any] = {
        "query": {"type": "string", "description": "What the tool should do, or select:name1,name2"},
        "limit": {"type": "integer", "description": f"Most tools to return (default {DEFAULT_LIMIT})"},
    }
    if grouped:
        properties["group"] = {"type": "string", "description": "Search only the tools of this group"}
    return {
        "name": SEARCH,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": ["query"]},
    }


_EMPTY_SEARCH_BYTES.update(
    {
        grouped: len(
            json.dumps(search_definition("", grouped=grouped), ensure_ascii=False, separators=(",", ":")).encode()
        )
        for grouped in (False, True)
    }
)


def call_definition() -> dict[str, Any]:
    """``call_tool``'s definition."""
    return {
        "name": CALL,
        "description": f"Call a tool loaded with {SEARCH}, by name, with its arguments.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"],
        },
    }
