"""The assembler: token costs of definitions, emitters for each API, and :class:`Selection`.

A selection lists core tools first, then the selected tools, each part in registry order, so the
tools block of a prompt changes only when the selection does and the cached prefix survives.
Search-only text and example queries are indexed but never emitted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast, overload

from .errors import InvalidToolError
from .registry import Tool

if TYPE_CHECKING:
    # The SDKs' own request types, so that ``tools=sel.to_openai()`` type-checks against the
    # installed SDK (without it, a type checker sees these as Any); plain dicts at run time.
    from anthropic.types import ToolParam
    from openai.types.chat import ChatCompletionFunctionToolParam

    from .index import Index

    OpenAITool = ChatCompletionFunctionToolParam
    AnthropicTool = ToolParam
else:
    OpenAITool = AnthropicTool = dict


def default_token_count(definition: Any) -> int:
    """``ceil(bytes / 4)`` of the compact UTF-8 JSON of ``definition``."""
    text = json.dumps(definition, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    return math.ceil(len(text.encode("utf-8")) / 4)


#: Tool names each API accepts: OpenAI function names and Anthropic tool names are ASCII letters,
#: digits, ``_`` and ``-`` (no ``.``, which MCP allows), 1 to 64 and 1 to 128 characters.
NAME_RULES = {
    "OpenAI": (re.compile(r"[A-Za-z0-9_-]{1,64}"), "1 to 64"),
    "Anthropic": (re.compile(r"[A-Za-z0-9_-]{1,128}"), "1 to 128"),
}


def _named_for(api: str, tool: Tool) -> str:
    """``tool.name``, or :class:`~toolsift.errors.InvalidToolError` naming the tool when ``api``
    would refuse it (an emitted array the API rejects fails the whole request, later and with less
    to go on)."""
    pattern, length = NAME_RULES[api]
    if pattern.fullmatch(tool.name) is None:
        raise InvalidToolError(
            f"the name is not a valid {api} tool name: only letters, digits, '_' and '-', {length} "
            "characters (rename the tool, e.g. dots to '_', or emit MCP)",
            tool=tool.name,
            field="name",
        )
    return tool.name


def to_openai(tools: Iterable[Tool]) -> list[OpenAITool]:
    """OpenAI Chat Completions ``tools`` entries (typed as the ``openai`` SDK's
    ``ChatCompletionFunctionToolParam``). A name OpenAI refuses (see :data:`NAME_RULES`) raises
    :class:`~toolsift.errors.InvalidToolError` naming the tool."""
    return [
        {
            "type": "function",
            "function": {
                "name": _named_for("OpenAI", t),
                "description": t.description,
                "parameters": cast(dict[str, object], t.parameters),
            },
        }
        for t in tools
    ]


def to_anthropic(tools: Iterable[Tool], *, defer: Iterable[str] = ()) -> list[AnthropicTool]:
    """Anthropic Messages ``tools`` entries; tools named in ``defer`` get ``defer_loading: true``
    (loaded by Anthropic's hosted tool search only when the model finds them). A name Anthropic
    refuses (see :data:`NAME_RULES`) raises :class:`~toolsift.errors.InvalidToolError`."""
    deferred = set(defer)
    out: list[AnthropicTool] = []
    for t in tools:
        schema = cast(dict[str, object], t.parameters)
        entry: AnthropicTool = {
            "name": _named_for("Anthropic", t),
            "description": t.description,
            "input_schema": schema,
        }
        if t.name in deferred:
            entry["defer_loading"] = True
        out.append(entry)
    return out


def tool_references(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """Anthropic ``tool_reference`` content blocks, the result of a client-side tool search."""
    return [{"type": "tool_reference", "tool_name": t.name} for t in tools]


def to_mcp(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """MCP ``tools/list`` entries (annotations included where the tool has them)."""
    out = []
    for t in tools:
        entry: dict[str, Any] = {"name": t.name, "description": t.description, "inputSchema": t.parameters}
        if t.annotations:
            entry["annotations"] = t.annotations
        out.append(entry)
    return out


class Dropped(NamedTuple):
    """A tool that matched the query but was left out of a selection."""

    tool: Tool
    position: int
    cost_tokens: int
    reason: str


Packed = tuple[tuple[int, ...], int, int, tuple[int, ...], bool]
"""A packing from the core: ``(positions, num_core, tokens, dropped, core_over_budget)``."""


class Selection(Sequence[int]):
    """Registry positions chosen for one request: core tools first, then the rest, in registry order.

    It is a sequence of ints (the seed API's ``select(...) -> list[int]``) and compares equal to any
    sequence of the same positions.
    """

    __slots__ = ("_index", "_packed", "budget_tokens")

    def __init__(self, index: Index, packed: Packed, budget_tokens: int | None) -> None:
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
        _, num_core, _, dropped, core_over = self._packed
        if core_over:
            return "the core tools alone exceed the budget; no other tool was added"
        if dropped and len(self) == num_core:
            return "no matching tool fits in the budget left after the core tools"
        return None

    def to_openai(self) -> list[OpenAITool]:
        """OpenAI ``tools`` array of the selection."""
        return to_openai(self.tools)

    def to_anthropic(self) -> list[AnthropicTool]:
        """Anthropic ``tools`` array of the selection."""
        return to_anthropic(self.tools)

    def to_mcp(self) -> list[dict[str, Any]]:
        """MCP ``tools/list`` entries of the selection."""
        return to_mcp(self.tools)
