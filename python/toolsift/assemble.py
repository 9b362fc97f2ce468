"""The assembler: token costs of definitions and the emitters for each API.

A selection lists core tools first, then the selected tools, each part in registry order, so the
tools block of a prompt changes only when the selection does and the cached prefix survives.
Search-only text and example queries are indexed but never emitted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from .arguments import tool_names
from .errors import InvalidParameterError, InvalidToolError
from .registry import Tool, json_copy

if TYPE_CHECKING:
    # The SDKs' own request types, so that ``tools=sel.to_openai()`` type-checks against the
    # installed SDK (without it, a type checker sees these as Any); plain dicts at run time.
    from anthropic.types import ToolParam
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.shared_params import FunctionDefinition

    OpenAITool = ChatCompletionFunctionToolParam
    AnthropicTool = ToolParam
else:
    OpenAITool = AnthropicTool = FunctionDefinition = dict


def default_token_count(definition: Any) -> int:
    """``ceil(bytes / 4)`` of the compact UTF-8 JSON of ``definition``."""
    text = json.dumps(definition, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    return math.ceil(len(text.encode("utf-8")) / 4)


def _tools(tools: Iterable[Tool]) -> list[Tool]:
    """``tools`` as a list, refused unless it is an iterable of :class:`Tool` (a dict of a
    definition, say, is not one: emit what a catalog made of it)."""
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
        raise InvalidParameterError(f"tools must be an iterable of toolsift.Tool, not {type(tools).__name__}")
    out = list(tools)
    for i, t in enumerate(out):
        if not isinstance(t, Tool):
            raise InvalidParameterError(f"tools[{i}] is a {type(t).__name__}, not a toolsift.Tool")
    return out


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
    out: list[OpenAITool] = []
    for t in _tools(tools):
        function: FunctionDefinition = {
            "name": _named_for("OpenAI", t),
            "description": t.description,
            "parameters": cast(dict[str, object], json_copy(t.parameters, t.name)),
        }
        if t.strict is not None:
            function["strict"] = t.strict
        out.append({"type": "function", "function": function})
    return out


def to_anthropic(tools: Iterable[Tool], *, defer: Iterable[str] = ()) -> list[AnthropicTool]:
    """Anthropic Messages ``tools`` entries; tools named in ``defer`` get ``defer_loading: true``
    (loaded by Anthropic's hosted tool search only when the model finds them). A name Anthropic
    refuses (see :data:`NAME_RULES`) raises :class:`~toolsift.errors.InvalidToolError`."""
    deferred = set(tool_names("defer", defer))  # not a bare string, read letter by letter
    out: list[AnthropicTool] = []
    for t in _tools(tools):
        schema = cast(dict[str, object], json_copy(t.parameters, t.name))
        entry: AnthropicTool = {
            "name": _named_for("Anthropic", t),
            "description": t.description,
            "input_schema": schema,
        }
        if t.strict is not None:
            entry["strict"] = t.strict
        if t.name in deferred:
            entry["defer_loading"] = True
        out.append(entry)
    return out


def tool_references(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """Anthropic ``tool_reference`` content blocks, the result of a client-side tool search."""
    return [{"type": "tool_reference", "tool_name": t.name} for t in _tools(tools)]


def to_mcp(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """MCP ``tools/list`` entries (``title``, ``outputSchema`` and annotations included where the
    tool has them)."""
    out = []
    for t in _tools(tools):
        entry: dict[str, Any] = {"name": t.name}
        if t.title is not None:
            entry["title"] = t.title
        entry["description"] = t.description
        entry["inputSchema"] = json_copy(t.parameters, t.name)
        if t.output_schema is not None:
            entry["outputSchema"] = json_copy(t.output_schema, t.name)
        if t.annotations:
            entry["annotations"] = json_copy(t.annotations, t.name)
        out.append(entry)
    return out
