"""toolsift in front of an MCP server's own tools, in process (the official SDK, ``mcp>=2.3``).

:func:`front` wraps the ``tools/list`` and ``tools/call`` handlers of a low-level
``mcp.server.Server`` or of an ``mcp.server.mcpserver.MCPServer``: each request's caller (see
``caller``) then lists only the pinned tools it may use plus ``tool_search`` and ``call_tool``
(the tools array of a :class:`~toolsift.Toolbox` with tiers). ``tool_search`` answers with
``structuredContent`` ``{"tools": [...]}`` that matches its declared ``outputSchema``: each found
tool as the server itself lists it (``name``, ``title``, ``description``, ``inputSchema``,
``outputSchema``, ``annotations``). ``call_tool`` and a call by name re-check the caller's
permission and then run the server's own handler; a tool the caller may not use gives exactly
the error a missing one does (``Unknown tool: name``) and never runs.

The server's listing is read through its own handler on every request (all pages), and so are
the tools' ``permissions``; the index is rebuilt, off the event loop, only when a tool's
definition (by the gateway's digest) or its permissions changed, so tools the server adds or
removes, and permissions withdrawn, apply at once. A definition toolsift cannot
index (a schema that is not an object, a name listed twice or taken by a meta-tool) is left out
and logged, as the gateway does: it costs that tool, not the listing. Other methods pass through.

Needs ``pip install 'toolsift[mcp]'``.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidParameterError, InvalidToolError, MissingExtraError, ToolsiftError, UnknownToolError

try:
    import anyio
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
except ImportError as e:  # pragma: no cover - without the extra
    raise MissingExtraError(f"{__name__} needs the MCP SDK: pip install 'toolsift[mcp]' ({e})") from e

from ..arguments import folded_name, matching_names, name_forms, tool_names
from ..callers import Caller, perms_of
from ..gateway.versions import digest
from ..index import Index
from ..loaders import load_mcp
from ..plan import CALL, SEARCH
from ..registry import Catalog, Tool
from ..tiers import Hooks, Toolbox, ToolTierOptions, check_parts

log = logging.getLogger("toolsift.integrations.mcp")

Context = ServerRequestContext[Any, Any]
CallerOf = Callable[[Context], Caller | Awaitable[Caller]]
#: What ``tool_search`` answers, as its ``outputSchema``.
SEARCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tools": {
            "type": "array",
            "description": "The tools found, as the server lists them; run one with call_tool.",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                    "inputSchema": {"type": "object"},
                    "outputSchema": {"type": "object"},
                    "annotations": {"type": "object"},
                },
                "required": ["name", "inputSchema"],
            },
        }
    },
    "required": ["tools"],
}
_DEFINITION = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
#: Most pages of the server's own ``tools/list`` read per request (a cursor that never ends stops here).
MAX_PAGES = 1000


@dataclass(frozen=True)
class _Unreadable:
    """A tool's ``permissions`` that raised: the tool is left out, logged."""

    reason: str


@dataclass
class _Version:
    """The server's tools at one listing: their digests, the index and one toolbox per caller."""

    key: tuple[tuple[str, str], ...]
    index: Index
    listed: Mapping[str, types.Tool]
    """Each indexed tool's definition, as the server lists it now."""
    granted: list[Any]
    """The permissions ``permissions`` gave each listed tool (snapshots)."""
    seen: list[types.Tool]
    """A copy of the listing: the same listing next time needs neither digests nor a rebuild."""
    kept: list[int]
    """Positions in the listing of the definitions indexed (those :meth:`Front._valid` kept)."""
    boxes: OrderedDict[tuple[str, ...], Toolbox] = field(default_factory=OrderedDict)
    """The toolboxes of the callers seen last, by their sorted distinct permissions (at most
    :data:`BOXES_KEPT`, the least recently used dropped first)."""


#: Callers' toolboxes (each holds its plan) kept per listing: a server whose callers each hold
#: their own permissions keeps the plans of the busiest, not one per caller ever seen.
BOXES_KEPT = 256


class Front:
    """The wrapper :func:`front` installs; see the module docstring. Its arguments are :func:`front`'s."""

    def __init__(
        self,
        server: Any,
        *,
        caller: Caller | CallerOf,
        permissions: Mapping[str, Any] | Callable[[str], Any] | None = None,
        pinned: Sequence[str] = (),
        budget_tokens: int = 0,
        hooks: Hooks | None = None,
        statistics: str = "shared",
    ) -> None:
        low = _lowlevel(server)
        listing, calling = low.get_request_handler("tools/list"), low.get_request_handler("tools/call")
        if listing is None or calling is None:
            raise InvalidParameterError(
                "the server has no tools/list or tools/call handler to put toolsift in front of"
            )
        if isinstance(getattr(listing.handler, "__self__", None), Front):
            raise InvalidParameterError("toolsift is already in front of this server")
        if statistics not in ("shared", "caller"):
            raise InvalidParameterError(f"statistics must be 'shared' or 'caller', not {statistics!r}")
        if not callable(caller):
            perms_of(caller)  # a bad fixed caller is refused now, not on the first request
        if permissions is not None and not isinstance(permissions, Mapping) and not callable(permissions):
            kind = type(permissions).__name__
            raise InvalidParameterError(
                f"permissions must map tool names to permissions (or be a function), not {kind}"
            )
        check_parts("front", hooks=hooks)  # now, not at the first call
        self._list, self._call = listing, calling
        self.caller, self.permissions, self.hooks = caller, permissions, hooks or Hooks()
        pins = tool_names("pinned", pinned)  # not a bare string, read letter by letter
        self.tiers = ToolTierOptions(core=pins, pinned=pins, budget_tokens=budget_tokens)
        self.statistics = statistics
        self._version: _Version | None = None
        low.add_request_handler("tools/list", types.PaginatedRequestParams, self._list_tools)
        low.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool)
        # The SDK's Mcp-Param header check runs before any handler, for every caller alike; with the
        # server's own schemas it would answer a hidden tool differently from a missing one.
        low.get_tool_input_schema = _no_schema

    # -- the server's tools ----------------------------------------------------------------------
    async def _listed(self, ctx: Context) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await self._list.handler(ctx, types.PaginatedRequestParams(cursor=cursor))
            result = page if isinstance(page, types.ListToolsResult) else types.ListToolsResult.model_validate(page)
            tools.extend(result.tools)
            if not result.next_cursor or result.next_cursor == cursor:
                break
            cursor = result.next_cursor
        return tools

    async def current(self, ctx: Context) -> _Version:
        """The index of the server's tools as listed now (rebuilt only when a definition or a
        tool's permissions changed)."""
        tools = await self._listed(ctx)
        forms = functools.cache(self._forms)  # folded only once a name is not found as written
        granted = [self._granted(t.name, forms) for t in tools]  # read on every request: a change applies at once
        version = self._version
        if version is not None and version.granted == granted and version.seen == tools:
            return version  # the very listing of last time (compared: a fifth of the time of hashing it)
        key = tuple((t.name, digest(t)) for t in tools)
        seen = [t.model_copy(deep=True) for t in tools]  # as listed now, whatever the server does to its objects
        if version is None or version.key != key or version.granted != granted:
            catalog, kept = self._valid(tools, granted)
            index = await anyio.to_thread.run_sync(lambda: Index(catalog, statistics=self.statistics))
            version = self._version = _Version(key, index, {}, granted, seen, kept)
        # each indexed tool as the server lists it now: what is not indexed (outputSchema, _meta...)
        # is served fresh, and a name listed twice is served as the definition that was indexed
        version.listed, version.seen = {tools[i].name: tools[i] for i in version.kept}, seen
        return version

    def _forms(self) -> dict[str, list[str]]:
        """The names ``permissions`` (a mapping) holds, by their folded form (see
        :func:`~toolsift.arguments.matching_names`)."""
        return name_forms(self.permissions) if isinstance(self.permissions, Mapping) else {}

    def _granted(self, name: str, forms: Callable[[], Mapping[str, list[str]]]) -> Any:
        """What ``permissions`` gives tool ``name`` (looked up as written, else in any Unicode
        form that folds alike: ``forms``), as a snapshot (``None``: the permissions it is listed
        with): a list the caller changes later compares unequal to it, and a function that raises
        or a mapping that names the tool in two forms costs that tool only (:class:`_Unreadable`)."""
        if self.permissions is None:
            return None
        try:
            if callable(self.permissions):
                value = self.permissions(name)
            else:
                keys = [name] if name in self.permissions else matching_names(name, self.permissions, forms())
                if len(keys) > 1:
                    return _Unreadable(f"names it in {len(keys)} Unicode forms: {sorted(map(repr, keys))}")
                value = self.permissions[keys[0]] if keys else None
        except Exception as e:  # the caller's code: logged when the index is built, never shown
            return _Unreadable(f"raised {type(e).__name__}: {e}")
        if isinstance(value, str) or value is None:
            return value
        if isinstance(value, Iterable) and not isinstance(value, Mapping):
            return tuple(value)  # a generator read once; a list copied as it is now
        return value  # refused, naming the tool, when the index is built

    def _valid(self, tools: list[types.Tool], granted: list[Any]) -> tuple[Catalog, list[int]]:
        """The server's tools that can be indexed: one bad definition (a schema that is not an
        object, a bad permission, a name listed twice, in any Unicode form, or taken by a
        meta-tool) costs that tool, logged, not the listing of every caller, and no caller's
        error names it."""
        catalog, kept, positions = Catalog(), set(), []
        pinned = set(self.tiers.pinned)
        for i, (listed, perms) in enumerate(zip(tools, granted, strict=True)):
            try:
                if isinstance(perms, _Unreadable):
                    raise InvalidToolError(f"permissions({listed.name!r}) {perms.reason}", tool=listed.name)
                if listed.name in (SEARCH, CALL):
                    raise InvalidToolError("the name is reserved for toolsift's meta-tool", tool=listed.name)
                if listed.name in kept:
                    raise InvalidToolError("the server lists this name twice; the first is served", tool=listed.name)
                # served as the server lists it (outputSchema, title and all): nothing to report
                [tool] = load_mcp(
                    Tool,
                    [listed],
                    permissions=None if perms is None else {listed.name: perms},
                    core=[listed.name] if listed.name in pinned else (),
                    report_unread=False,
                )
                catalog.append(tool)  # a name that folds like another's is a duplicate too
                kept.add(listed.name)
                positions.append(i)
            except ToolsiftError as e:
                log.warning("toolsift front: tool left out: %s", e)
        named = set(self.permissions) if isinstance(self.permissions, Mapping) else set()
        forms = {folded_name(t.name) for t in tools}
        unknown = sorted(str(n) for n in named | pinned if not (isinstance(n, str) and folded_name(n) in forms))
        if unknown:  # a misspelt name would otherwise leave its tool as it came, unnoticed
            log.warning("toolsift front: permissions or pinned name tools the server does not list: %s", unknown[:20])
        return catalog, positions

    async def caller_of(self, ctx: Context) -> tuple[str, ...]:
        """The permissions of the request's caller."""
        value = self.caller(ctx) if callable(self.caller) else self.caller
        if inspect.isawaitable(value):
            value = await value
        return perms_of(value).names

    async def _box(self, version: _Version, perms: tuple[str, ...]) -> Toolbox:
        key = tuple(sorted(set(perms)))  # ("a", "b") and ("b", "a") are one caller
        box = version.boxes.get(key)
        if box is None:  # the plan is built once per caller and version, off the event loop
            box = Toolbox(version.index, tiers=self.tiers, caller=key)
            await anyio.to_thread.run_sync(box.plan)
            version.boxes[key] = box
            while len(version.boxes) > BOXES_KEPT:
                version.boxes.popitem(last=False)
        else:
            version.boxes.move_to_end(key)
        return box

    # -- the handlers ----------------------------------------------------------------------------
    async def _list_tools(self, ctx: Context, params: types.PaginatedRequestParams) -> types.ListToolsResult:
        version = await self.current(ctx)
        box = await self._box(version, await self.caller_of(ctx))
        tools = []
        for entry in box.tools("mcp"):
            if entry["name"] == SEARCH:
                tools.append(types.Tool.model_validate({**entry, "outputSchema": SEARCH_OUTPUT_SCHEMA}))
            elif entry["name"] == CALL:
                tools.append(types.Tool.model_validate(entry))
            else:  # a pinned tool, exactly as the server lists it
                tools.append(version.listed[entry["name"]])
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> Any:
        version, perms = await self.current(ctx), await self.caller_of(ctx)
        name, arguments = params.name, dict(params.arguments or {})
        if name == SEARCH:
            return await self._search(version, perms, arguments)
        target = arguments.get("name") if name == CALL else name

        async def forward(inner: Mapping[str, Any]) -> Any:
            return await self._call.handler(ctx, params.model_copy(update={"name": target, "arguments": dict(inner)}))

        handlers = {target: forward} if isinstance(target, str) else {}
        box = Toolbox(version.index, tiers=self.tiers, caller=perms, handlers=handlers, hooks=self.hooks)
        try:
            return await box.acall(name, arguments)
        except UnknownToolError:
            return _error(f"Unknown tool: {target}")
        except InvalidParameterError as e:
            return _error(str(e))
        except Exception:  # a before_tool hook refusing the call, say: an error result, not a
            # protocol error, and none of its text, which may hold what the client must not see
            log.warning("call of %r refused or failed", target, exc_info=True)
            return _error(FAILED)

    async def _search(self, version: _Version, perms: tuple[str, ...], arguments: Mapping[str, Any]) -> Any:
        box = await self._box(version, perms)
        try:
            text = await anyio.to_thread.run_sync(box.call, SEARCH, arguments)
        except InvalidParameterError as e:
            return _error(str(e))
        found = {"tools": [definition(version.listed[d["name"]]) for d in json.loads(text)]}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(found, ensure_ascii=False))],
            structured_content=found,
        )


def front(
    server: Any,
    *,
    caller: Caller | CallerOf,
    permissions: Mapping[str, Any] | Callable[[str], Any] | None = None,
    pinned: Sequence[str] = (),
    budget_tokens: int = 0,
    hooks: Hooks | None = None,
    statistics: str = "shared",
) -> Front:
    """Puts toolsift in front of ``server``'s own tools (a low-level ``Server`` or an ``MCPServer``).

    Args:
        server: The server; its ``tools/list`` and ``tools/call`` handlers are wrapped in place.
        caller: The caller's permissions, fixed (a stdio server's one user), or
            ``caller(ctx) -> permissions`` (sync or async) read from each request's
            ``ServerRequestContext`` (its HTTP ``request`` headers, its ``session``...).
        permissions: ``{tool name: permissions}`` or ``fn(name) -> permissions`` for the
            server's tools; a tool without any is public.
        pinned: Tools listed with their full definition (when the caller may use them).
        budget_tokens: Budget of the tools array (0: ``context_window / 20``, as for tiers).
        hooks: :class:`~toolsift.Hooks` around every real call (``before_tool`` may refuse it).
        statistics: ``"shared"`` or ``"caller"`` (rank each caller with its own tools'
            statistics), as for :class:`~toolsift.Index`.
    """
    return Front(
        server,
        caller=caller,
        permissions=permissions,
        pinned=pinned,
        budget_tokens=budget_tokens,
        hooks=hooks,
        statistics=statistics,
    )


def definition(tool: types.Tool) -> dict[str, Any]:
    """A tool as ``tool_search`` returns it: the server's own wire form (``inputSchema``...)."""
    data = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return {k: data[k] for k in _DEFINITION if k in data}


def _lowlevel(server: Any) -> Server[Any]:
    if isinstance(server, Server):
        return server
    low = getattr(server, "_lowlevel_server", None)  # MCPServer's own Server (no public accessor in mcp 2.3)
    if isinstance(low, Server):
        return low
    raise InvalidParameterError(f"server must be an mcp Server or MCPServer, not {type(server).__name__}")


def _no_schema(name: str) -> Mapping[str, Any] | None:
    return None


FAILED = "The call was refused or failed; the server's log says why."
"""What a client is told when a hook refuses a call or it fails around the tool."""


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


__all__ = ["SEARCH_OUTPUT_SCHEMA", "Front", "definition", "front"]
