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

Within a step the number of tools (or groups) to move is found by bisection, since moving one more
never makes the array larger under a counter that grows with the text; each test builds the
description once, so a plan costs O(n log n) for n tools. A counter that is not monotone gets
the first count that fits after the bisection, found one by one. Only the caller's own tools are
ever planned, named, counted or summarised.
"""

from __future__ import annotations

import enum
import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .registry import Tool

SEARCH, CALL = "tool_search", "call_tool"
DEFAULT_LIMIT = 5
#: Words shown per summarised group.
GROUP_WORDS = 3
UNGROUPED = "other"
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


class Tier(str, enum.Enum):
    """Where a tool sits in the plan."""

    CORE = "core"
    LISTED = "listed"
    DEFERRED = "deferred"


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
    """The first non-empty line of ``text``, stripped."""
    return text.strip().splitlines()[0] if text.strip() else ""


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
        self._group = {t.name: str(group(t)) for t in tools}
        self._call = call_definition()
        self._call_cost = count(self._call)

    def plan(self, budget: int) -> Plan:
        state = _State(dict(self._tiers))
        fits = self._fits(budget)
        if not fits(state):
            state = self._move(state, Tier.CORE, Tier.LISTED, fits)
        if not fits(state):
            state = self._move(state, Tier.LISTED, Tier.DEFERRED, fits)
        if not fits(state):
            state = self._summarise(state, fits)
        if not fits(state):
            state = self._compact(state, fits)
        return Plan(state.tiers, self._group, state.summarised, self._search(state), self._call)

    # -- the steps -----------------------------------------------------------------------------
    def _fits(self, budget: int) -> Callable[[_State], bool]:
        return lambda state: self._total(state) <= budget

    def _total(self, state: _State) -> int:
        core = sum(self._size[n] for n, tier in state.tiers.items() if tier is Tier.CORE)
        return core + self._count(self._search(state)) + self._call_cost

    def _move(self, state: _State, tier: Tier, to: Tier, fits: Callable[[_State], bool]) -> _State:
        """Moves the fewest tools of ``tier`` to ``to``, least used first, for the plan to fit."""
        order = sorted(
            (n for n, t in state.tiers.items() if t is tier and n not in self._pinned),
            key=lambda n: (self._usage(n), -self._size[n], n),
        )

        def moved(j: int) -> _State:
            tiers = dict(state.tiers)
            tiers.update(dict.fromkeys(order[:j], to))
            return _State(tiers)

        return _fewest(len(order), moved, fits)

    def _summarise(self, state: _State, fits: Callable[[_State], bool]) -> _State:
        """Summarises the fewest groups of deferred tools, the largest first, for the plan to fit."""
        counts = Counter(self._group[n] for n, t in state.tiers.items() if t is Tier.DEFERRED)
        order = sorted(counts, key=lambda g: (-counts[g], g))
        return _fewest(len(order), lambda j: _State(state.tiers, frozenset(order[:j])), fits)

    def _compact(self, state: _State, fits: Callable[[_State], bool]) -> _State:
        """Names as many groups as fit, by name and count only."""
        groups = len(state.summarised)
        return _fewest(groups, lambda j: _State(state.tiers, state.summarised, groups - j), fits)

    @functools.cached_property
    def _words(self) -> dict[str, tuple[str, ...]]:  # needed only once groups are summarised
        return _group_words(self._tools, self._group)

    # -- the description -----------------------------------------------------------------------
    def _search(self, state: _State) -> dict[str, Any]:
        tiers, summarised = state.tiers, state.summarised
        listed = [self._line[n] for n in self._names if tiers.get(n) is Tier.LISTED]
        named = [n for n in self._names if tiers.get(n) is Tier.DEFERRED and self._group[n] not in summarised]
        lines = [
            "Search the other available tools by what they do, and load their full definitions (returned "
            f"as JSON). Query `select:name1,name2` loads tools by exact name. Call a loaded tool with {CALL}."
        ]
        if listed:
            lines += ["Tools:", *listed]
        if named:
            lines.append("Also available: " + ", ".join(named))
        if summarised:
            lines += self._groups(state)
        return search_definition("\n".join(lines), grouped=bool(summarised))

    def _groups(self, state: _State) -> list[str]:
        counts = Counter(
            self._group[n] for n, t in state.tiers.items() if t is Tier.DEFERRED and self._group[n] in state.summarised
        )
        order = sorted(counts, key=lambda g: (-counts[g], g))
        head = 'Groups of further tools (give "group" to search within one):'
        if state.compact is None:
            return [head] + [_group_line(g, counts[g], self._words.get(g, ())) for g in order]
        shown, rest = order[: state.compact], order[state.compact :]
        items = [f"{g} ({counts[g]})" for g in shown]
        if rest:
            items.append(f"and {len(rest)} more groups ({_tools(sum(counts[g] for g in rest))})")
        return [head + " " + ", ".join(items)]


def _fewest(most: int, state: Callable[[int], _State], fits: Callable[[_State], bool]) -> _State:
    """``state(j)`` for the smallest ``j`` in ``0..most`` that fits (``state(most)`` when none does),
    by bisection, then one by one should the counter not shrink as ``j`` grows."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(state(mid)):
            hi = mid
        else:
            lo = mid + 1
    found = state(lo)
    while not fits(found) and lo < most:
        lo += 1
        found = state(lo)
    return found


def _group_line(group: str, count: int, words: Sequence[str]) -> str:
    return f"- {group} ({_tools(count)})" + (": " + ", ".join(words) if words else "")


def _tools(n: int) -> str:
    return f"{n:,} tool" if n == 1 else f"{n:,} tools"


def _group_words(tools: Sequence[Tool], group: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Each group's most telling words: frequent in its tools' names and first lines, rare in the
    other groups' (share of the group's tools holding the word times its inverse document
    frequency over all the caller's tools; words within the group's own name left out; ties by
    the word)."""
    df: Counter[str] = Counter()
    in_group: dict[str, Counter[str]] = {}
    size: Counter[str] = Counter()
    own = {g: re.sub(r"[\W_]+", "", g.lower()) for g in set(group.values())}
    for tool in tools:
        g = group[tool.name]
        text = f"{tool.name} {first_line(tool.description)}"
        words = {w.lower() for w in _WORD.findall(text) if len(w) > 2 and w.lower() not in own[g]}
        df.update(words)
        in_group.setdefault(g, Counter()).update(words)
        size[g] += 1
    n = len(tools)
    out = {}
    for g, counts in in_group.items():
        scored = sorted(counts, key=lambda w: (-(counts[w] / size[g]) * math.log(n / df[w]), w))
        out[g] = tuple(scored[:GROUP_WORDS])
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
