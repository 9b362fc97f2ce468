"""The gateway: upstream tools in one index, served to downstream MCP clients by caller.

Downstream clients see, per caller, the tools array of a :class:`~toolsift.Toolbox`: the pinned
tools (full schemas), then ``tool_search`` and ``call_tool``. Every upstream tool is namespaced
``server__tool`` and needs its server's permissions plus those of every matching rule; a caller
never sees, finds or runs a tool it lacks a permission for, and such a tool gives the same error
as one that does not exist.

An upstream's change notification re-lists that server only; the difference (added, removed and
changed tools, by schema digest) is applied to the gateway's ordered tool table, and a new index
is built beside the one in service and swapped in whole, so every request sees exactly one version.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from ..errors import InvalidParameterError, ToolsiftError, UnknownToolError
from ..index import Index
from ..registry import Catalog, Tool
from ..tiers import CALL, SEARCH, Toolbox, ToolTierOptions
from .config import CallerConfig, GatewayConfig, all_permissions, namespaced, permissions_of
from .upstream import Upstream, UpstreamError

log = logging.getLogger("toolsift.gateway")

REVIEW = "gateway_schema_changes"
ANONYMOUS = "anonymous"
MAX_LEGACY_SESSIONS = 4096


@dataclass(frozen=True)
class Entry:
    """One upstream tool as the gateway holds it."""

    server: str
    upstream_name: str
    tool: Tool
    digest: str
    hidden: bool = False


@dataclass
class Version:
    """One immutable index version and the per-caller toolboxes made from it."""

    number: int
    entries: Mapping[str, Entry]
    index: Index
    toolboxes: dict[str, Toolbox] = field(default_factory=dict)


def digest(tool: types.Tool) -> str:
    """SHA-256 of what a model relies on: description, input schema, annotations, title."""
    data = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    kept = {k: data.get(k) for k in ("title", "description", "inputSchema", "annotations")}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class EventLog:
    """JSONL log of searches and calls (one object per line), appended and flushed per event."""

    def __init__(self, path: str | None) -> None:
        self._file: TextIO | None = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def write(self, event: str, **data: Any) -> None:
        if self._file is None:
            return
        record = {"ts": round(time.time(), 6), "event": event, **data}
        self._file.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class Gateway:
    """An MCP server that fronts the upstream servers of a :class:`GatewayConfig`.

    Args:
        config: The configuration (see :func:`toolsift.gateway.load_config`).
        token: For the stdio transport, the token of the caller on the other end of the pipe.
    """

    def __init__(self, config: GatewayConfig, *, token: str | None = None) -> None:
        self.config = config
        self.log = EventLog(config.log)
        self.upstreams = {s.name: Upstream(s, self.apply, debounce=config.debounce) for s in config.servers}
        self._table: dict[str, Entry] = {}  # registry order: first seen first, new tools appended
        self._held: dict[str, Entry] = {}  # schema changes waiting for acknowledgement
        self._seen: set[str] = set()  # servers listed at least once
        self._reported: set[tuple[str, str, str]] = set()  # scan findings already logged
        self._lock = anyio.Lock()
        self.version = Version(0, {}, Index(Catalog()))
        self._bus = InMemorySubscriptionBus()
        self._legacy: dict[int, Any] = {}
        self._anonymous = CallerConfig(ANONYMOUS, "", tuple(all_permissions(config)), admin=True)
        self._stdio_caller: CallerConfig | None = None
        if config.transport == "stdio" or token is not None:
            self._stdio_caller = self._authenticate(token)
            if self._stdio_caller is None:
                raise InvalidParameterError("the token does not belong to any caller of the gateway config")
        self.server = self._build_server()
        self.port: int | None = None
        self.started = anyio.Event()

    # -- callers -------------------------------------------------------------------------------
    def _authenticate(self, token: str | None) -> CallerConfig | None:
        if not self.config.callers:
            return self._anonymous
        return self.config.caller_for_token(token)

    def _caller(self, ctx: Any) -> CallerConfig:
        request = getattr(ctx, "request", None)
        if request is None or not hasattr(request, "headers"):
            if self._stdio_caller is None:
                raise PermissionError("no caller")
            return self._stdio_caller
        caller = self._authenticate(token_of(request.headers))
        if caller is None:
            raise PermissionError("unknown caller")
        return caller

    # -- the tool table ------------------------------------------------------------------------
    def _entry(self, server: str, tool: types.Tool) -> Entry:
        name, notes = namespaced(server, tool.name), _annotations(tool)
        perms, hidden = permissions_of(self.config, server, name, notes)
        pinned = tool.name in self.config.server(server).pinned
        described = tool.description or tool.title or ""
        item = Tool(name, described, tool.input_schema, permissions=perms, core=pinned, annotations=notes)
        return Entry(server, tool.name, item, digest(tool), hidden)

    async def apply(self, server: str, tools: list[types.Tool]) -> None:
        """Applies a complete listing of ``server``: adds, removes and updates only what changed."""
        async with self._lock:
            fresh: dict[str, Entry] = {}
            for tool in tools:
                try:
                    entry = self._entry(server, tool)
                except ToolsiftError as e:
                    self.log.write("invalid_tool", server=server, tool=getattr(tool, "name", "?"), error=str(e))
                    continue
                if entry.tool.name in fresh:
                    self.log.write("duplicate_tool", server=server, tool=entry.tool.name)
                    continue
                fresh[entry.tool.name] = entry
            old = {n: e for n, e in self._table.items() if e.server == server}
            old.update({n: e for n, e in self._held.items() if e.server == server and n not in old})
            added = [n for n in fresh if n not in old]
            removed = [n for n in old if n not in fresh]
            changed = [n for n in fresh if n in old and self._current_digest(n) != fresh[n].digest]
            for n in removed:
                self._table.pop(n, None)
                self._held.pop(n, None)
            for n in added:
                self._table[n] = fresh[n]
            hold = self.config.strict_schema_changes
            for n in changed:
                self.log.write("schema_changed", tool=n, old=self._current_digest(n), new=fresh[n].digest, held=hold)
                (self._held if hold else self._table)[n] = fresh[n]
            if not (added or removed or changed) and server in self._seen:
                return
            self._seen.add(server)
            self.log.write("reindex", server=server, added=added, removed=removed, changed=changed)
            await self._swap()

    def _current_digest(self, name: str) -> str:
        held = self._held.get(name)
        return held.digest if held is not None else self._table[name].digest

    async def _swap(self) -> None:
        live = {n: e for n, e in self._table.items() if not e.hidden and n not in self._held}
        catalog = Catalog(e.tool for e in live.values())

        def build() -> Index:  # off the event loop: index build and the catalog file beside the log
            if self.config.log:  # `toolsift eval --gateway-log` reads it with the log
                catalog.save(self.config.log + ".tools.jsonl")
            return Index(catalog, scan=self.config.scan)

        index = await anyio.to_thread.run_sync(build)
        for f in index.findings:
            if (f.tool, f.kind, f.detail) not in self._reported:
                self._reported.add((f.tool, f.kind, f.detail))
                withheld = self.config.scan == "withhold"
                self.log.write("poisoned", tool=f.tool, field=f.field, kind=f.kind, detail=f.detail, withheld=withheld)
        self.version = Version(self.version.number + 1, live, index)
        await self._notify()

    def held(self) -> dict[str, tuple[str, str]]:
        """Schema changes waiting for acknowledgement: ``{name: (old digest, new digest)}``."""
        return {n: (self._table[n].digest, e.digest) for n, e in self._held.items() if n in self._table}

    async def acknowledge(self, names: list[str]) -> list[str]:
        """Puts held schema changes into service; returns the names that were held."""
        async with self._lock:
            done = [n for n in names if n in self._held]
            for n in done:
                self._table[n] = self._held.pop(n)
                self.log.write("schema_acknowledged", tool=n, digest=self._table[n].digest)
            if done:
                await self._swap()
            return done

    async def _notify(self) -> None:
        await self._bus.publish(ToolsListChanged())
        for key, session in list(self._legacy.items()):
            try:
                await session.send_tool_list_changed()
            except Exception:
                self._legacy.pop(key, None)

    # -- per caller ----------------------------------------------------------------------------
    def toolbox(self, caller: CallerConfig, version: Version | None = None) -> Toolbox:
        v = version or self.version
        box = v.toolboxes.get(caller.name)
        if box is None:
            pinned = [e.tool.name for e in v.entries.values() if e.tool.core]
            tiers = ToolTierOptions(core=pinned, pinned=pinned, budget_tokens=self.config.budget_tokens)
            handlers = {name: self._runner(entry) for name, entry in v.entries.items()}
            box = Toolbox(v.index, tiers=tiers, caller=list(caller.permissions), handlers=handlers)
            v.toolboxes[caller.name] = box
        return box

    def _runner(self, entry: Entry) -> Any:
        upstream = self.upstreams[entry.server]
        timeout = upstream.config.timeout or self.config.call_timeout

        def run(arguments: Mapping[str, Any]) -> Any:
            return upstream.call(entry.upstream_name, dict(arguments), timeout)

        return run

    # -- MCP handlers --------------------------------------------------------------------------
    def _build_server(self) -> Server[Any]:
        return Server(
            "toolsift-gateway",
            version=_version(),
            instructions="Find tools with tool_search, then run them with call_tool.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
        )

    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        caller = self._caller(ctx)
        if not str(ctx.protocol_version).startswith("2026") and len(self._legacy) < MAX_LEGACY_SESSIONS:
            self._legacy[id(getattr(ctx.session, "_connection", ctx.session))] = ctx.session
        tools = [types.Tool.model_validate(d) for d in self.toolbox(caller).tools("mcp")]
        if caller.admin and self.config.strict_schema_changes:
            tools.append(_review_tool())
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = self._caller(ctx)
        name, arguments = params.name, dict(params.arguments or {})
        version = self.version
        box = self.toolbox(caller, version)
        started = time.perf_counter()
        if name == REVIEW and caller.admin and self.config.strict_schema_changes:
            return await self._review(arguments)
        if name == SEARCH:
            try:
                text = box.call(SEARCH, arguments)
            except InvalidParameterError as e:
                return _error(str(e))
            chosen = [d["name"] for d in json.loads(text)]
            ms = (time.perf_counter() - started) * 1e3
            query = arguments.get("query")
            self.log.write("search", caller=caller.name, query=query, tools=chosen, version=version.number, ms=ms)
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        target = arguments.get("name") if name == CALL else name
        outcome, result = "ok", None
        try:
            pending = box.call(name, arguments)
            result = await pending if inspect.isawaitable(pending) else pending
            if not isinstance(result, types.CallToolResult):
                raise UpstreamError("?", "error", "the upstream returned no tool result")
            outcome = "error" if result.is_error else "ok"
            result = result.model_copy(update={"meta": None})
        except UnknownToolError:
            outcome, result = "unknown", _error(f"Unknown tool: {target}")
        except InvalidParameterError as e:
            outcome, result = "invalid", _error(str(e))
        except UpstreamError as e:
            outcome, result = e.reason, _error(str(e))
        ms = (time.perf_counter() - started) * 1e3
        self.log.write(
            "call", caller=caller.name, tool=target, via=name, outcome=outcome, ms=ms, version=version.number
        )
        return result

    async def _review(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        accept = arguments.get("accept", [])
        if not isinstance(accept, list) or not all(isinstance(n, str) for n in accept):
            return _error("accept must be a list of tool names")
        done = await self.acknowledge(accept)
        pending = {n: {"old": old, "new": new} for n, (old, new) in self.held().items()}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps({"accepted": done, "held": pending}))]
        )

    # -- running -------------------------------------------------------------------------------
    async def run(self, *, startup_timeout: float = 30.0) -> None:
        """Starts the upstreams and serves downstream clients until cancelled."""
        try:
            async with anyio.create_task_group() as tg:
                for upstream in self.upstreams.values():
                    tg.start_soon(upstream.run)
                with anyio.move_on_after(startup_timeout):
                    for upstream in self.upstreams.values():
                        await upstream.ready.wait()
                for upstream in self.upstreams.values():
                    if not upstream.ready.is_set():
                        print(f"toolsift gateway: upstream {upstream.name} not ready yet", file=sys.stderr)
                if self.config.transport == "stdio":
                    await self._serve_stdio()
                else:
                    await self._serve_http()
                tg.cancel_scope.cancel()
        finally:
            self.log.close()

    async def _serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        self.started.set()
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    async def _serve_http(self) -> None:
        import uvicorn

        app = _Authenticate(self.server.streamable_http_app(streamable_http_path=self.config.path), self)
        sock = socket.socket(socket.AF_INET6 if ":" in self.config.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.config.host, self.config.port))
        self.port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        print(f"toolsift gateway: serving http://{self.config.host}:{self.port}{self.config.path}", file=sys.stderr)

        async def serve() -> None:
            with anyio.CancelScope(shield=True):  # stopped through should_exit, so it shuts down cleanly
                await server.serve(sockets=[sock])

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            try:
                while not server.started:
                    await anyio.sleep(0.01)
                self.started.set()
                await anyio.sleep_forever()
            finally:
                server.should_exit = True
        sock.close()


class _Authenticate:
    """ASGI wrapper: a request without a known token gets 401 before it reaches MCP."""

    def __init__(self, app: Any, gateway: Gateway) -> None:
        self.app, self.gateway = app, gateway

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            if self.gateway._authenticate(token_of(headers)) is None:
                body = b'{"error":"invalid_token","error_description":"unknown or missing token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def token_of(headers: Mapping[str, str]) -> str | None:
    """The caller's token: ``Authorization: Bearer T`` or ``X-API-Key: T``."""
    auth = headers.get("authorization")
    if auth and auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return headers.get("x-api-key")


def _annotations(tool: types.Tool) -> dict[str, Any] | None:
    if tool.annotations is None:
        return None
    return tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json") or None


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _review_tool() -> types.Tool:
    return types.Tool(
        name=REVIEW,
        description="List upstream tools whose schema changed and is held back; accept some by name.",
        input_schema={
            "type": "object",
            "properties": {"accept": {"type": "array", "items": {"type": "string"}}},
        },
    )


def _version() -> str:
    from .. import __version__

    return __version__
