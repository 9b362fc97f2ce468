"""What a query returns: ranked :class:`Hit` s, and a budgeted :class:`Selection`.

A selection lists core tools first, then the selected tools, each part in registry order, so the
tools block of a prompt changes only when the selection does and the cached prefix survives.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, Protocol, overload

from .assemble import AnthropicTool, OpenAITool, to_anthropic, to_mcp, to_openai
from .registry import Tool


class Hit(NamedTuple):
    """One ranked search result."""

    tool: Tool
    position: int
    score: float


class Registry(Protocol):
    """What a selection reads of its index: the tool and the token cost at a registry position."""

    def tool(self, position: int) -> Tool: ...
    def cost(self, position: int) -> int: ...


class Dropped(NamedTuple):
    """A tool that matched the query but was left out of a selection."""

    tool: Tool
    position: int
    cost_tokens: int
    reason: str


Packed = tuple[tuple[int, ...], int, int, tuple[int, ...], bool, int | None]
"""A packing from the core: ``(positions, num_core, tokens, dropped, core_over_budget,
cheapest)``, ``cheapest`` the cost of the caller's cheapest candidate (``None``: it has none)."""


class Selection(Sequence[int]):
    """Registry positions chosen for one request: core tools first, then the rest, in registry order.

    It is a sequence of ints (the seed API's ``select(...) -> list[int]``) and compares equal to any
    sequence of the same positions.
    """

    __slots__ = ("_index", "_packed", "budget_tokens")

    def __init__(self, index: Registry, packed: Packed, budget_tokens: int | None) -> None:
        self._index = index
        # the core's packing as it came: (positions, num_core, tokens, dropped, core_over_budget),
        # kept whole (one selection per request: unpacking it costs more than reading it)
        self._packed = packed
        self.budget_tokens: int | None = budget_tokens
        """The budget asked for, in tokens (``None``: unlimited)."""

    @property
    def tokens(self) -> int:
        """Tokens the selected definitions cost."""
        return self._packed[2]

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[int]: ...
    def __getitem__(self, i: int | slice) -> int | Sequence[int]:
        return self._packed[0][i]

    def __len__(self) -> int:
        return len(self._packed[0])

    def __iter__(self) -> Iterator[int]:
        return iter(self._packed[0])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Selection):
            return self._packed[0] == other._packed[0]
        if isinstance(other, Sequence) and not isinstance(other, str):
            return self._packed[0] == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Selection({list(self.names)}, tokens={self.tokens}, budget_tokens={self.budget_tokens})"

    @property
    def positions(self) -> tuple[int, ...]:
        """Registry positions, core tools first."""
        return self._packed[0]

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The selected tools, in output order."""
        return tuple(self._index.tool(i) for i in self._packed[0])

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the selected tools, in output order."""
        return tuple(t.name for t in self.tools)

    @property
    def core(self) -> tuple[str, ...]:
        """Names of the core tools in the selection."""
        return self.names[: self._packed[1]]

    @property
    def dropped(self) -> tuple[Dropped, ...]:
        """Best-ranked matching tools that were skipped because they did not fit the budget, in rank
        order. Only tools the packer examined are listed: the first batch of candidates (about
        what the budget can hold), then, while budget is left, only tools cheap enough to fit."""
        idx = self._index
        return tuple(Dropped(idx.tool(i), i, idx.cost(i), "over_budget") for i in self._packed[3])

    @property
    def note(self) -> str | None:
        """Why the selection is smaller than one might expect, if it is."""
        _, num_core, tokens, dropped, core_over, _ = self._packed
        if core_over:
            return "the core tools alone exceed the budget; no other tool was added"
        if len(self) == num_core and dropped:
            return "no matching tool fits in the budget left after the core tools"
        if len(self) == num_core and self._no_room_left(tokens):
            assert self.budget_tokens is not None
            return f"no other tool fits in the {self.budget_tokens - tokens} tokens left after the core tools"
        return None

    def _no_room_left(self, tokens: int) -> bool:
        """Whether what the core tools left of the budget is less than the caller's cheapest other
        tool costs (the packer then looks at no candidate, so none is in :attr:`dropped`)."""
        if self.budget_tokens is None:
            return False
        cheapest = self._packed[5]
        return cheapest is not None and self.budget_tokens - tokens < cheapest

    def to_openai(self) -> list[OpenAITool]:
        """OpenAI ``tools`` array of the selection."""
        return to_openai(self.tools)

    def to_anthropic(self) -> list[AnthropicTool]:
        """Anthropic ``tools`` array of the selection."""
        return to_anthropic(self.tools)

    def to_mcp(self) -> list[dict[str, Any]]:
        """MCP ``tools/list`` entries of the selection."""
        return to_mcp(self.tools)
