"""OpenAI Agents SDK adapter (``pip install 'toolsift[openai-agents]'``): glue, not a second engine.

- :func:`function_tool` / :func:`function_tools` turn toolsift tools into the SDK's
  ``FunctionTool``; every invocation goes through :meth:`Toolbox.acall`, which re-checks the
  caller's permission, unwraps ``call_tool`` and runs the hooks. The schema is passed as is
  (``strict_json_schema=False``): the SDK's strict mode would make every optional argument of a
  real-world schema required. A tool declared ``strict=True`` (OpenAI's ``strict``) gets the
  SDK's strict mode, and its schema must already be a strict one (every property required,
  every object closed): one the SDK would rewrite is refused with ``SchemaError``.
- :class:`ToolsiftAgent` is an ``Agent`` whose tools are computed once per model call by the hook
  the runner calls every turn, ``Agent.get_all_tools``: the toolbox's tools array (core tools,
  then ``tool_search`` and ``call_tool``) followed by the tools ``tool_search`` has loaded in this
  session, in the order they were first found. One list per turn, no ``is_enabled`` callback per
  tool; tools the caller may not use are never converted.
- :func:`hosted_search_tools` is OpenAI's hosted tool search: the core tools loaded, every other
  tool the caller may use as a deferred ``FunctionTool`` (``defer_loading=True``), and the SDK's
  ``ToolSearchTool``; the Responses API searches the deferred definitions server-side, and a
  call of one still runs through :meth:`Toolbox.acall`.
- :func:`select_tools` is selection mode: the tools for a conversation (OpenAI Responses /
  Agents SDK input items, such as ``result.to_input_list()``), for ``agent.clone(tools=...)``.

The caller is carried by the :class:`~toolsift.Toolbox` the tools are bound to (one per caller
or session; ``agent.clone(toolbox=other)`` for another caller), never by a global.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper, ToolSearchTool
from agents.strict_schema import ensure_strict_json_schema
from agents.tool import Tool as AgentTool
from agents.tool import ToolErrorFunction
from agents.tool_context import ToolContext

from ..errors import InvalidParameterError, InvalidToolError, MissingHandlerError, SchemaError, UnknownToolError
from ..plan import CALL, SEARCH, Tier
from ..registry import Tool
from ..tiers import Toolbox

__all__ = [
    "ToolsiftAgent",
    "function_tool",
    "function_tools",
    "hosted_search_tools",
    "select_tools",
    "tool_error_message",
]

_UNSET: Any = object()
log = logging.getLogger(__name__)

# what the model may read of a failed call: toolsift's own messages, which say the same for a
# forbidden tool as for a missing one and name only the tool and the argument at fault
_MODEL_READABLE = (UnknownToolError, InvalidParameterError, MissingHandlerError)
_FAILED = "An error occurred while running the tool. Please try again."


def tool_error_message(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """The text the model sees for a failed call: toolsift's message for an unknown or refused
    tool, bad arguments or a tool without a handler (so the model does not retry a call that
    cannot succeed), and a fixed message for anything else, such as a handler's own exception,
    whose text may hold what the model must not see (what openai-agents' own default says from
    0.24 on; earlier versions appended the exception's text). A handler or hook that raises one
    of toolsift's three types itself has its message shown too."""
    if isinstance(error, _MODEL_READABLE):
        return f"Error: {error}"
    return _FAILED


def function_tool(
    toolbox: Toolbox,
    tool: str | Tool | Mapping[str, Any],
    *,
    failure_error_function: ToolErrorFunction | None = _UNSET,
    on_result: Callable[[str, Any], None] | None = None,
    defer_loading: bool = False,
    strict: bool | None = None,
) -> FunctionTool:
    """A ``FunctionTool`` that runs ``tool`` through ``toolbox.acall``.

    Args:
        toolbox: The caller's toolbox; it checks the permission again on every call.
        tool: A tool name the caller may use, a :class:`~toolsift.Tool`, or an OpenAI ``tools``
            entry (such as ``toolbox.tools()`` items, the meta-tools among them).
        failure_error_function: Turns an error (a refused or unknown tool, bad arguments, a
            handler that raised) into the text the model sees, as for the SDK's
            ``@function_tool``; default :func:`tool_error_message`; ``None`` raises.
        on_result: Called with the tool's name and result after each successful call.
        defer_loading: Hide the definition from the model until OpenAI's hosted tool search
            loads it (see :func:`hosted_search_tools`).
        strict: The SDK's strict mode: ``None`` (default) as the tool's own ``strict`` says,
            ``False`` never.

    Raises:
        UnknownToolError: ``tool`` is a name the caller may not use, or no tool's name.
        InvalidToolError: A malformed definition (a subclass, with ``.tool`` and ``.field``),
            such as a ``strict`` tool whose schema is not a strict one.
        InvalidParameterError: ``tool`` is neither a name, a :class:`~toolsift.Tool` nor a mapping.
    """
    found = _definition(toolbox, tool)
    name = found.name
    on_error = tool_error_message if failure_error_function is _UNSET else failure_error_function

    async def invoke(ctx: ToolContext[Any], arguments: str) -> Any:
        try:
            result = await toolbox.acall(name, _arguments(name, arguments))
        except Exception as error:
            if on_error is None:
                raise
            message = on_error(ctx, error)
            return await message if inspect.isawaitable(message) else message
        if on_result is not None:
            on_result(name, result)
        return result

    schema, sdk_strict = copy.deepcopy(dict(found.parameters)), found.strict is True and strict is not False
    if sdk_strict:
        _check_strict(name, schema)
    made = FunctionTool(
        name, found.description, schema, invoke, strict_json_schema=sdk_strict, defer_loading=defer_loading
    )
    _options = {
        "failure_error_function": failure_error_function,
        "on_result": on_result,
        "defer_loading": defer_loading,
        "strict": strict,
    }
    # which caller's toolbox it runs through, and how it was made: a ToolsiftAgent cloned for
    # another caller makes its own tools again for that caller (see ToolsiftAgent.get_all_tools)
    made._toolsift_made = (toolbox, name, tool, _options)  # type: ignore[attr-defined]
    return made


def _check_strict(name: str, schema: dict[str, Any]) -> None:
    """Refuses a ``strict`` tool's schema that is not already a strict one: the SDK's strict
    mode would otherwise rewrite it (every property required, objects closed), so the model
    would have to send what the tool's author made optional."""
    try:
        rewritten = ensure_strict_json_schema(copy.deepcopy(schema))
    except Exception as e:  # UserError, and KeyError / ValueError / AssertionError for bad $refs
        raise SchemaError(f"strict is set but the SDK refuses the schema: {e}", tool=name, field="strict") from None
    if _as_strict(rewritten) != _as_strict(schema):
        raise SchemaError(
            "strict is set but the schema is not a strict one (every property required, every object "
            "closed by additionalProperties: false)",
            tool=name,
            field="strict",
        )


def function_tools(
    toolbox: Toolbox, tools: Iterable[str | Tool | Mapping[str, Any]] | None = None
) -> list[FunctionTool]:
    """:func:`function_tool` for each of ``tools``; by default the toolbox's tools array
    (``toolbox.tools()``: core tools, then ``tool_search`` and ``call_tool`` with tiers; every tool
    the caller may use without)."""
    return [function_tool(toolbox, t) for t in (toolbox.tools() if tools is None else tools)]


def hosted_search_tools(toolbox: Toolbox, *, description: str | None = None) -> list[AgentTool]:
    """OpenAI's hosted tool search over the caller's tools: the toolbox plan's core tools (sorted
    by name), every other tool the caller may use deferred (``defer_loading=True``, in registry
    order), then ``ToolSearchTool`` (``description``: what the model is told it searches). The
    model finds deferred tools through the Responses API's own search; toolsift still decides
    what the caller may see, and re-checks the permission on every call."""
    plan = toolbox.plan()
    core = sorted(name for name, tier in plan.items() if tier is Tier.CORE)
    deferred = [t for t in toolbox.allowed_tools() if plan[t.name] is not Tier.CORE]
    tools: list[AgentTool] = [function_tool(toolbox, name) for name in core]
    tools += [function_tool(toolbox, t, defer_loading=True) for t in deferred]
    tools.append(ToolSearchTool(description=description))
    return tools


def select_tools(
    toolbox: Toolbox,
    items: Sequence[Mapping[str, Any]],
    *,
    budget_tokens: int | None = None,
    group: str | Sequence[str] | None = None,
    groups: int | None = None,
) -> list[FunctionTool]:
    """Selection mode: the tools for a conversation, as ``FunctionTool``.

    ``items`` are Responses input items (``result.to_input_list()`` plus the new user message) or
    chat messages; ``budget_tokens``, ``group`` and ``groups`` are those of
    :meth:`Toolbox.select`. Tools already called in the session stay in. Use it per user turn::

        turn = agent.clone(tools=select_tools(box, history, budget_tokens=4000))
        result = await Runner.run(turn, history)
    """
    return function_tools(toolbox, toolbox.select(items, budget_tokens=budget_tokens, group=group, groups=groups))


@dataclass
class ToolsiftAgent(Agent[Any]):
    """An ``Agent`` whose toolsift tools are chosen per turn, and grow as ``tool_search`` loads tools.

    Each model call sees the agent's own ``tools``, then the toolbox's tools array, then every tool
    ``tool_search`` found in this session (first found first, so earlier turns' prefix holds), as
    real function tools the model can call by name. ``load_found=False`` keeps the array fixed
    (the model then runs found tools through ``call_tool``). State is per agent: clone it for
    another session or caller (``agent.clone(toolbox=box)`` starts with nothing loaded, and makes
    its own ``tools`` made by :func:`function_tool` for the first toolbox again for ``box``,
    leaving out those its caller may not use).

    Attributes:
        toolbox: The caller's :class:`~toolsift.Toolbox` (required).
        load_found: Whether tools found by ``tool_search`` join the next turns' tools.
    """

    toolbox: Toolbox | None = None
    load_found: bool = True
    loaded: list[str] = field(default_factory=list, init=False, repr=False)
    """Names of the tools ``tool_search`` has loaded, first found first."""
    # name -> (the toolbox and definition it was made from, the tool): a tool is made again when
    # the toolbox is replaced or its tools array changes (a reset moved pins), never reused for
    # another caller's toolbox
    _converted: dict[str, tuple[Toolbox, Mapping[str, Any] | None, FunctionTool]] = field(
        default_factory=dict, init=False, repr=False
    )
    # id(own tool) -> (that tool, the toolbox, the tool made again for it, or None if refused)
    _rebuilt: dict[int, tuple[AgentTool, Toolbox, FunctionTool | None]] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        super().__post_init__()  # type: ignore[no-untyped-call]  # the SDK's own checks
        if not isinstance(self.toolbox, Toolbox):
            kind = type(self.toolbox).__name__
            raise InvalidParameterError(f"ToolsiftAgent needs toolbox=toolsift.Toolbox(...), not {kind}")

    async def get_all_tools(self, run_context: RunContextWrapper[Any]) -> list[AgentTool]:
        """The agent's own tools, then the toolbox's tools array, then the loaded tools, each name
        once (an own tool first: the SDK drops one of two tools of a name). An own tool made by
        :func:`function_tool` for another toolbox (an agent cloned for another caller) is made
        again for this one, or left out if this caller may not use it."""
        box = self._box()
        own = [t for t in (self._rebound(t, box) for t in await super().get_all_tools(run_context)) if t is not None]
        taken = {name for t in own if isinstance(name := getattr(t, "name", None), str)}
        definitions = [d for d in box.tools() if d["function"]["name"] not in taken]
        taken |= {d["function"]["name"] for d in definitions}
        extra = [n for n in self.loaded if n not in taken and box.index.allows(n, caller=box.perms)]
        return [*own, *(self._tool(d["function"]["name"], d) for d in definitions), *map(self._tool, extra)]

    def _rebound(self, tool: AgentTool, box: Toolbox) -> AgentTool | None:
        made = getattr(tool, "_toolsift_made", None)
        if made is None or made[0] is box:
            return tool
        held = self._rebuilt.get(id(tool))
        if held is None or held[0] is not tool or held[1] is not box:
            _, name, source, options = made
            again: FunctionTool | None = None
            if name not in (SEARCH, CALL):  # the toolbox's own meta-tools come with its tools array
                try:  # a catalog tool by its name (its definition as this caller's index holds it)
                    again = function_tool(box, name if name in box.index else source, **options)
                except UnknownToolError:  # a tool this caller may not use: never shown, never run
                    again = None
            held = self._rebuilt[id(tool)] = (tool, box, again)
        return held[2]

    def _box(self) -> Toolbox:
        assert isinstance(self.toolbox, Toolbox)  # checked in __post_init__
        return self.toolbox

    def _tool(self, name: str, definition: Mapping[str, Any] | None = None) -> FunctionTool:
        box = self._box()
        held = self._converted.get(name)
        if held is None or held[0] is not box or held[1] != definition:
            on_result = self._load if name == SEARCH and box.tiers is not None else None
            try:
                made = function_tool(box, definition or name, on_result=on_result)
            except SchemaError as e:  # one tool's strict schema must not cost the agent every tool
                if e.field != "strict":
                    raise
                log.warning("toolsift agent: %s; sent without the SDK's strict mode", e)
                made = function_tool(box, definition or name, on_result=on_result, strict=False)
            held = self._converted[name] = (box, definition, made)
        return held[2]

    def _load(self, _name: str, result: Any) -> None:
        if not self.load_found:
            return
        for definition in json.loads(result):
            if definition["name"] not in self.loaded:
                self.loaded.append(definition["name"])


def _as_strict(schema: Any) -> Any:
    """``schema`` as the SDK's strict mode compares: ``required`` in any order, and no
    ``"default": null`` (which the SDK drops from a schema it leaves otherwise as it is)."""
    if isinstance(schema, dict):
        return {
            k: sorted(map(str, v)) if k == "required" and isinstance(v, list) else _as_strict(v)
            for k, v in schema.items()
            if not (k == "default" and v is None)
        }
    if isinstance(schema, list):
        return [_as_strict(v) for v in schema]
    return schema


def _definition(toolbox: Toolbox, tool: str | Tool | Mapping[str, Any]) -> Tool:
    """The :class:`Tool` of a tool name, :class:`Tool` or OpenAI ``tools`` entry."""
    if isinstance(tool, Mapping):  # checked as a catalog tool is: typed errors naming the tool and field
        fn = tool.get("function", tool)
        fn = fn if isinstance(fn, Mapping) else {}
        if "parameters" not in fn and ("input_schema" in fn or "inputSchema" in fn):  # not OpenAI's shape
            raise InvalidToolError(
                "an Anthropic or MCP definition: give an OpenAI tools entry, a Tool or a name",
                tool=str(fn.get("name", "")),
                field="parameters",
            )
        given = Tool(
            fn.get("name", ""),
            fn.get("description", ""),
            fn.get("parameters", {"type": "object"}),
            strict=fn.get("strict"),
        )
        if _meta(toolbox, given.name):  # the toolbox's own tool_search or call_tool, which run as such
            return given
        if given.name in toolbox.index and not toolbox.index.allows(given.name, caller=toolbox.perms):
            raise UnknownToolError(given.name)  # a catalog tool the caller may not use, however given
        return given
    if isinstance(tool, Tool):
        tool = tool.name
    if not isinstance(tool, str):
        raise InvalidParameterError(f"a tool must be a name, a toolsift.Tool or a mapping, not {type(tool).__name__}")
    if _meta(toolbox, tool):
        return _definition(toolbox, next(d for d in toolbox.tools() if d["function"]["name"] == tool))
    return toolbox.index.get(tool, caller=toolbox.perms)  # UnknownToolError for a tool the caller may not use


def _meta(toolbox: Toolbox, name: str) -> bool:
    """Whether ``name`` is one of the meta-tools of ``toolbox`` (with tiers, ``tool_search`` and
    ``call_tool``): a catalog tool of that name the caller may not use (a toolbox refuses one
    it may) is not it, and must not make the meta-tool unknown."""
    return toolbox.tiers is not None and name in (SEARCH, CALL)


def _arguments(name: str, arguments: str) -> dict[str, Any]:
    """The model's JSON arguments as an object (empty text: no arguments)."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as e:
        raise InvalidParameterError(f"the arguments of {name!r} are not JSON: {e}") from None
    if not isinstance(value, dict):
        raise InvalidParameterError(f"the arguments of {name!r} must be a JSON object, not {type(value).__name__}")
    return value
