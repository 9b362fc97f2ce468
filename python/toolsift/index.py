"""The index: ranked search and budgeted selection over a catalog, scored in the Rust core.

The core scores only the tools the caller may use (the permission mask is applied before BM25), so a
forbidden tool is never scored, returned, counted toward a budget or named anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from . import _core
from .assemble import Selection, default_token_count
from .errors import InvalidParameterError, InvalidToolError, UnknownToolError
from .query import Query
from .registry import Catalog, Tool
from .text import field_params, tool_fields

Caller = Iterable[str] | str | None
"""Permissions a caller holds: an iterable of strings, one string, or ``None`` (public tools only)."""

UNLIMITED = 2**64 - 1


class Hit(NamedTuple):
    """One ranked search result."""

    tool: Tool
    position: int
    score: float


def _caller(caller: Caller) -> list[str]:
    if caller is None:
        return []
    perms = [caller] if isinstance(caller, str) else list(caller)
    for p in perms:
        if not isinstance(p, str):
            raise InvalidParameterError(f"caller permissions must be strings, found {type(p).__name__}")
    return perms


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameterError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise InvalidParameterError(f"{name} must be >= 0, got {value}")
    return value


class Index:
    """BM25 index over a catalog, with permission filtering and token budgets.

    Args:
        catalog: The tools, in registry order. The index keeps its own snapshot: tools appended
            to the catalog later need a new index.
        k1: BM25 term-frequency saturation.
        b: BM25F length normalisation in [0, 1]: one value for every field, or a mapping that
            overrides :data:`toolsift.text.DEFAULT_FIELD_B` per field.
        field_weights: Overrides of :data:`toolsift.text.DEFAULT_FIELD_WEIGHTS`.
        count_tokens: Prompt cost of a definition (``{"name", "description", "parameters"}``);
            defaults to ``ceil(bytes / 4)`` of its compact JSON. A tool's explicit
            ``cost_tokens`` wins.

    The index is immutable and safe to share between threads; queries release the GIL.
    """

    def __init__(
        self,
        catalog: Catalog | Iterable[Tool],
        *,
        k1: float = 0.9,
        b: float | Mapping[str, float] | None = None,
        field_weights: Mapping[str, float] | None = None,
        count_tokens: Callable[[dict[str, Any]], int] | None = None,
    ) -> None:
        self._tools: tuple[Tool, ...] = tuple(catalog if isinstance(catalog, Catalog) else Catalog(catalog))
        self._positions = {t.name: i for i, t in enumerate(self._tools)}
        counter = count_tokens or default_token_count
        costs = [t.cost_tokens if t.cost_tokens is not None else _cost(t, counter) for t in self._tools]
        columns = list(zip(*(tool_fields(t) for t in self._tools), strict=True)) or [() for _ in range(5)]
        weights, bs = field_params(field_weights, b)
        self._core = _core.Index(
            [list(c) for c in columns],
            weights,
            bs,
            [list(t.permissions) for t in self._tools],
            costs,
            [t.core for t in self._tools],
            k1=_number("k1", k1),
        )

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Index({len(self)} tools, {self._core.num_terms} terms, {self._core.num_postings} postings)"

    @property
    def stats(self) -> dict[str, int]:
        """Sizes of the core index: tools, terms, postings, distinct permissions."""
        c = self._core
        return {"tools": len(c), "terms": c.num_terms, "postings": c.num_postings, "permissions": c.num_permissions}

    def tool(self, position: int) -> Tool:
        """The tool at a registry position."""
        return self._tools[position]

    def name(self, position: int) -> str:
        """Name of the tool at a registry position."""
        return self._tools[position].name

    def cost(self, position: int) -> int:
        """Token cost of the tool at a registry position."""
        return int(self._core.cost(position))

    def allows(self, caller: Caller, name: str) -> bool:
        """True when a tool called ``name`` exists and the caller may use it."""
        i = self._positions.get(name)
        return i is not None and self._core.allows(_caller(caller), i)

    def get(self, name: str, caller: Caller = None) -> Tool:
        """The tool called ``name`` if the caller may use it; unknown and forbidden look the same."""
        if not self.allows(caller, name):
            raise UnknownToolError(name)
        return self._tools[self._positions[name]]

    def search(self, query: str | Query, k: int = 10, caller: Caller = None) -> list[Hit]:
        """The ``k`` best-scoring tools the caller may use, best first (ties: registry order).

        ``query`` is a string or a :class:`~toolsift.Query` (for example built from the
        conversation with :meth:`Query.from_messages`). Returns fewer than ``k`` hits when fewer
        tools match; an empty query matches nothing.
        """
        positions, scores = self._core.search(_query(query), _caller(caller), _count("k", k))
        return [Hit(self._tools[i], i, s) for i, s in zip(positions.tolist(), scores.tolist(), strict=True)]

    def select(
        self, query: str | Query, caller: Caller = None, budget: int | None = None, *, k: int | None = None
    ) -> Selection:
        """Core tools, then the best-ranked matching tools that fit in ``budget`` tokens.

        Candidates are taken in rank order; one that does not fit is skipped (see
        :attr:`Selection.dropped`) and smaller ones are still tried. ``k`` caps how many non-core
        tools are taken. ``budget=None`` means no token limit.
        """
        tokens = UNLIMITED if budget is None else _count("budget", budget)
        cap = None if k is None else _count("k", k)
        sel, num_core, used, dropped, over = self._core.select(_query(query), _caller(caller), tokens, cap)
        return Selection(self, sel, num_core, used, budget, dropped, over)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameterError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def _query(query: str | Query) -> list[tuple[str, float]]:
    return list(Query.of(query).parts)


def _cost(tool: Tool, counter: Callable[[dict[str, Any]], int]) -> int:
    value = counter(tool.definition())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise InvalidToolError(
            f"count_tokens returned {value!r}, not an int in [0, 2**32)", tool=tool.name, field="cost_tokens"
        )
    return value
