"""PydanticAI adapter (``pip install 'toolsift[pydantic-ai]'``): glue, not a second engine.

- :class:`ToolsiftToolset` lists the tools the caller may use (never another) and runs each call
  through :meth:`Toolbox.acall`, which re-checks the permission and runs the hooks. With tiers,
  the toolbox's core tools are loaded and every other tool is ``defer_loading``: hidden until
  PydanticAI's ``ToolSearch`` capability discovers it.
- ``ToolsiftToolset(meta_tools=True)`` is for catalog scale: the toolbox's own tools array (core
  tools, ``tool_search``, ``call_tool``) plus the tools an earlier ``tool_search`` found (read from
  the messages), O(core + found) per step; PydanticAI's deferred-tool search walks every deferred
  tool each step (about 0.9 s at 18,000 tools).
- :func:`tool_search` is that capability with a strategy backed by the index
  (:func:`search_strategy`): BM25F over names, descriptions and parameter text, the caller's
  permissions applied before ranking.
- :func:`prepare_tools` is a ``prepare_tools`` function (``PrepareTools(prepare_tools())``) that
  loads, each step, the tools :meth:`Toolbox.select` picks from the conversation within a budget.

The caller is a :class:`~toolsift.Toolbox`: given to the toolset, strategy or prepare function, or
carried per run as the run's deps (``agent.run(prompt, deps=box)``, or deps with a ``toolbox``
attribute); never a global.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import ToolSearch, ToolSearchFunc
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition, ToolsPrepareFunc
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from ..errors import InvalidParameterError, InvalidToolError, UnknownToolError
from ..plan import SEARCH, Tier
from ..tiers import Toolbox

#: The name PydanticAI gives the tool of its ``ToolSearch`` capability (refused for a catalog tool).
SEARCH_TOOLS = "search_tools"

__all__ = ["ToolsiftToolset", "prepare_tools", "search_strategy", "to_messages", "tool_search", "toolbox_of"]

_ARGUMENTS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))
"""Arguments are any JSON object; the handler (or the upstream) owns the schema."""


def toolbox_of(ctx: RunContext[Any], toolbox: Toolbox | None = None) -> Toolbox:
    """``toolbox``, else the run's deps when they are a :class:`Toolbox` or carry one as ``toolbox``.

    Raises:
        InvalidParameterError: Neither is a :class:`Toolbox`.
    """
    if toolbox is not None:
        return toolbox
    deps = ctx.deps
    found = deps if isinstance(deps, Toolbox) else getattr(deps, "toolbox", None)
    if not isinstance(found, Toolbox):
        raise InvalidParameterError(
            f"no toolsift.Toolbox: pass one to the adapter, or as the run's deps, not {type(deps).__name__}"
        )
    return found


class ToolsiftToolset(AbstractToolset[Any]):
    """The tools the caller may use, as a PydanticAI toolset.

    Args:
        toolbox: The caller's toolbox; ``None``: the run's deps (see :func:`toolbox_of`).
        id: The toolset's id, unique among the agent's toolsets.
        max_retries: Retries the model gets after a refused call or bad arguments.
        meta_tools: List the toolbox's tools array (with tiers: core tools, ``tool_search``,
            ``call_tool``) and the tools earlier ``tool_search`` results in the conversation
            found, instead of every tool with the non-core ones deferred.
    """

    def __init__(
        self,
        toolbox: Toolbox | None = None,
        *,
        id: str | None = "toolsift",
        max_retries: int = 1,
        meta_tools: bool = False,
    ) -> None:
        if toolbox is not None and not isinstance(toolbox, Toolbox):
            raise InvalidParameterError(f"toolbox must be a toolsift.Toolbox or None, not {type(toolbox).__name__}")
        self.toolbox, self._id, self.max_retries, self.meta_tools = toolbox, id, max_retries, meta_tools
        self._memo: tuple[Toolbox, dict[tuple[str, bool], ToolsetTool[Any]]] | None = None

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """Every tool the caller may use, registry order, those outside the core tier deferred; with
        ``meta_tools``, the toolbox's tools array and the tools found so far."""
        box = toolbox_of(ctx, self.toolbox)
        if self.meta_tools:
            return self._meta(box, ctx.messages)
        memo = self._memo  # read once: a toolset shared by runs in several threads sees its own box's
        if memo is None or memo[0] is not box:
            memo = self._memo = (box, {})
        made = memo[1]
        tiers = box.plan()
        out: dict[str, ToolsetTool[Any]] = {}
        for name, tier in tiers.items():
            key = (name, box.tiers is not None and tier is not Tier.CORE)
            if key not in made:
                made[key] = self._tool(box, *key)
            out[name] = made[key]
        return out

    def _meta(self, box: Toolbox, messages: Sequence[ModelMessage]) -> dict[str, ToolsetTool[Any]]:
        """The toolbox's tools array, then the tools found by ``tool_search`` so far."""
        out = {}
        for entry in box.tools():
            f = entry["function"]
            out[f["name"]] = self._toolset_tool(f["name"], f.get("description", ""), f.get("parameters", {}))
        for name in _found(messages) if box.tiers is not None else ():
            if name not in out and box.index.allows(name, caller=box.perms):
                out[name] = self._tool(box, name, deferred=False)
        return out

    def _tool(self, box: Toolbox, name: str, deferred: bool) -> ToolsetTool[Any]:
        tool = box.index.get(name, caller=box.perms)
        return self._toolset_tool(tool.name, tool.description, tool.parameters, deferred, tool.strict)

    def _toolset_tool(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        deferred: bool = False,
        strict: bool | None = None,
    ) -> ToolsetTool[Any]:
        schema = copy.deepcopy(dict(parameters))  # the framework may rewrite it; the catalog's stays intact
        definition = ToolDefinition(
            name=name, parameters_json_schema=schema, description=description, defer_loading=deferred, strict=strict
        )
        return ToolsetTool(toolset=self, tool_def=definition, max_retries=self.max_retries, args_validator=_ARGUMENTS)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Runs the call through the toolbox: a tool the caller may not use is refused like an
        unknown one, and the model is asked to retry."""
        box = toolbox_of(ctx, self.toolbox)
        try:
            return await box.acall(name, tool_args)
        except (UnknownToolError, InvalidParameterError) as error:
            raise ModelRetry(str(error)) from error


def search_strategy(toolbox: Toolbox | None = None, *, depth: int = 50) -> ToolSearchFunc[Any]:
    """A ``ToolSearch`` strategy backed by the index: ``(ctx, queries, tools) -> names``.

    Ranks the caller's tools for the joined queries and returns those in PydanticAI's searchable
    corpus (``tools``), tools not yet discovered first; ``depth`` is how many hits are read at
    first (doubled until enough corpus tools are found or the hits run out).
    """

    def strategy(ctx: RunContext[Any], queries: Sequence[str], tools: Sequence[ToolDefinition]) -> list[str]:
        box = toolbox_of(ctx, toolbox)
        corpus = {t.name for t in tools}
        query, k = " ".join(queries), depth
        while True:
            hits = box.index.search(query, k=k, caller=box.perms)
            found = [h.tool.name for h in hits if h.tool.name in corpus]
            if len(found) >= depth or len(hits) < k:
                break
            k *= 2
        seen = ctx.discovered_tool_names
        return [n for n in found if n not in seen] + [n for n in found if n in seen]

    return strategy


def tool_search(toolbox: Toolbox | None = None, *, max_results: int = 10) -> ToolSearch[Any]:
    """PydanticAI's ``ToolSearch`` capability with :func:`search_strategy`: deferred tools are
    found by toolsift's ranking instead of keyword overlap.

    Raises:
        InvalidToolError: The caller of ``toolbox`` may use a catalog tool named
            ``search_tools``, the name PydanticAI reserves for this capability's tool (each run
            would fail with PydanticAI's ``UserError``).
    """
    if toolbox is not None and toolbox.index.allows(SEARCH_TOOLS, caller=toolbox.perms):
        raise InvalidToolError(
            "the name is reserved for PydanticAI's tool search: rename the tool", tool=SEARCH_TOOLS, field="name"
        )
    return ToolSearch(strategy=search_strategy(toolbox), max_results=max_results)


def prepare_tools(
    toolbox: Toolbox | None = None,
    *,
    budget_tokens: int | None = None,
    group: str | Sequence[str] | None = None,
    groups: int | None = None,
) -> ToolsPrepareFunc[Any]:
    """A ``prepare_tools`` function: each step, the tools :meth:`Toolbox.select` picks for the
    conversation (``ctx.messages``) within ``budget_tokens`` are loaded; the caller's other loaded
    tools are left out, deferred ones stay deferred (still discoverable), tools that are not the
    toolbox's pass unchanged. ``group`` and ``groups`` are those of :meth:`Toolbox.select`."""

    def prepare(ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        box = toolbox_of(ctx, toolbox)
        picked = box.select(to_messages(ctx.messages), budget_tokens=budget_tokens, group=group, groups=groups)
        chosen = {t["function"]["name"] for t in picked}
        out = []
        for d in tool_defs:
            if d.name in chosen:
                out.append(replace(d, defer_loading=False) if d.defer_loading else d)
            elif d.defer_loading or not box.index.allows(d.name, caller=box.perms):
                out.append(d)
        return out

    return prepare


def _found(messages: Sequence[ModelMessage]) -> list[str]:
    """Names in the results of the toolbox's ``tool_search`` calls, first found first."""
    found: dict[str, None] = {}
    for message in messages:
        for part in message.parts if isinstance(message, ModelRequest) else ():
            if isinstance(part, ToolReturnPart) and part.tool_name == SEARCH and isinstance(part.content, str):
                try:
                    definitions = json.loads(part.content)
                except ValueError:
                    continue
                if isinstance(definitions, list):
                    found.update(
                        (d["name"], None) for d in definitions if isinstance(d, dict) and isinstance(d.get("name"), str)
                    )
    return list(found)


def to_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """PydanticAI messages as chat / Responses dicts for :meth:`toolsift.Query.from_messages`:
    user prompts, the model's text and the names of the tools it called."""
    out: list[dict[str, Any]] = []
    for message in messages:
        for part in message.parts:
            if isinstance(message, ModelResponse) and isinstance(part, TextPart):
                out.append({"role": "assistant", "content": part.content})
            elif isinstance(part, ToolCallPart):
                out.append({"type": "function_call", "name": part.tool_name})
            elif isinstance(part, UserPromptPart):
                content = part.content
                text = content if isinstance(content, str) else "\n".join(c for c in content if isinstance(c, str))
                out.append({"role": "user", "content": text})
    return out
