"""One upstream MCP server: connection, tool listing, calls, change notifications, restarts.

:class:`Upstream.run` supervises the connection for the gateway's lifetime: it connects (stdio
subprocess or streamable HTTP), lists the tools (every page), watches for
``notifications/tools/list_changed`` (or, on 2026-07-28 connections, a ``subscriptions/listen``
stream), pings to notice a dead server, and reconnects with exponential backoff after any failure.
Nothing an upstream does (crash, hang, garbage) escapes this class: calls get
:class:`UpstreamError` and the gateway keeps serving the other upstreams.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client._transport import TransportStreams, WriteStream
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.methods import validate_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..errors import UpstreamError
from ..registry import MAX_SCHEMA_DEPTH, json_shape
from .config import ServerConfig

log = logging.getLogger("toolsift.gateway")

MAX_PAGES = 1000
PING_INTERVAL = 5.0
PING_TIMEOUT = 5.0
LIST_TIMEOUT = 30.0  # one page of tools/list; a listing of many pages may take longer in all
CONNECT_TIMEOUT = 30.0  # connecting and the initialize handshake
BACKOFF_START, BACKOFF_MAX = 0.25, 30.0

ToolsCallback = Callable[[str, list[types.Tool], list[dict[str, str]]], Awaitable[None]]


class Upstream:
    """Supervised connection to one upstream server.

    Args:
        config: The server's configuration.
        on_tools: Awaited with ``(server, tools, refused)`` after every complete listing;
            ``refused`` holds ``{"tool", "error"}`` for each listed tool the SDK would refuse,
            left out of ``tools`` (:class:`ToolScreen`).
        debounce: Seconds to wait after a change notification before re-listing, so that a burst
            of notifications costs one listing.
        ping_interval: Seconds between liveness pings.
        connect_timeout: Seconds a connection (process start or HTTP connect, and the
            ``initialize`` handshake) may take before it counts as failed and is retried.
    """

    def __init__(
        self,
        config: ServerConfig,
        on_tools: ToolsCallback,
        *,
        debounce: float = 0.2,
        ping_interval: float = PING_INTERVAL,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.config = config
        self.name = config.name
        self._on_tools = on_tools
        self._debounce = debounce
        self._ping_interval = ping_interval
        self._connect_timeout = connect_timeout
        self._client: Client | None = None
        self._screen = ToolScreen(self.name)
        self._broken = anyio.Event()
        self._changed = anyio.Event()
        self._probe = anyio.Event()
        self.ready = anyio.Event()
        self.status = "starting"
        self.restarts = 0
        self.last_error: str | None = None
        self.listings = 0

    # -- connection ---------------------------------------------------------------------------
    def _connect(self) -> AbstractAsyncContextManager[Client]:
        c = self.config
        options: dict[str, Any] = {"cache": None, "message_handler": self._on_message}
        self._screen = screen = ToolScreen(self.name)
        if c.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(
                headers=dict(c.headers),
                timeout=httpx2.Timeout(LIST_TIMEOUT, read=300.0),
                event_hooks={"response": [screen.on_response]},
            )
            return _closing(http, Client(_lenient(streamable_http_client(c.url, http_client=http), screen), **options))
        assert c.command is not None
        params = StdioServerParameters(command=c.command, args=list(c.args), env=dict(c.env or {}), cwd=c.cwd)
        return Client(_lenient(stdio_client(params), screen), **options)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._changed.set()
        elif isinstance(message, Exception):
            log.warning("upstream %s: transport error: %s", self.name, message)
        await anyio.lowlevel.checkpoint()

    async def run(self) -> None:
        """Connects, lists and watches until cancelled; reconnects with backoff after failures."""
        delay = BACKOFF_START
        while True:
            started = time.monotonic()
            try:
                await self._session()
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as e:
                self.last_error = _describe(e)
                log.warning("upstream %s failed: %s", self.name, self.last_error)
            finally:
                self._client = None
                self.status = "down"
            if time.monotonic() - started > 60:
                delay = BACKOFF_START
            await anyio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)
            self.restarts += 1
            self.status = "restarting"

    async def _session(self) -> None:
        # The deadline covers entering the client (where the handshake happens) and is lifted once
        # it is in; the scope encloses the whole connection, so the SDK's own scopes nest inside it.
        with anyio.move_on_after(self._connect_timeout) as handshake:
            async with self._connect() as client:
                handshake.deadline = math.inf
                await self._serve(client)
        if handshake.cancelled_caught:
            raise UpstreamError(self.name, "timeout", f"no answer to initialize within {self._connect_timeout:g} s")
        raise UpstreamError(self.name, "unavailable", self.last_error or "connection lost")

    async def _serve(self, client: Client) -> None:
        """Lists the tools, then watches the connection until it breaks."""
        self._broken, self._changed, self._probe = anyio.Event(), anyio.Event(), anyio.Event()
        self._screen.version = client.protocol_version
        await self._refresh(client)
        self._client = client
        self.status = "ready"
        self.last_error = None
        self.ready.set()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._listen, client)
            tg.start_soon(self._refresher, client)
            tg.start_soon(self._pinger, client)
            await self._broken.wait()
            tg.cancel_scope.cancel()

    def relist(self) -> None:
        """Lists the tools again soon (after the debounce), as after a change notification."""
        self._changed.set()

    def mark_broken(self, reason: str) -> None:
        """Asks the supervisor to drop this connection and reconnect."""
        self.last_error = reason
        self._client = None
        self.status = "down"
        self._broken.set()

    # -- tools ----------------------------------------------------------------------------------
    async def _refresh(self, client: Client) -> None:
        tools: list[types.Tool] = []
        cursor: str | None = None
        refused: list[dict[str, str]] = []
        self._screen.refused = refused
        for _ in range(MAX_PAGES):
            page = await self._page(client, cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        else:
            raise UpstreamError(self.name, "error", f"tools/list did not end after {MAX_PAGES} pages")
        self.listings += 1
        await self._on_tools(self.name, tools, refused)

    async def _page(self, client: Client, cursor: str | None) -> types.ListToolsResult:
        """One page of the listing. A page the SDK refuses as a whole (one malformed tool is
        enough) is asked for again with the :class:`ToolScreen` on, which drops the tools the SDK
        would refuse, so that only they are lost; then the screen is off again (each page is
        judged alone, whatever came before)."""
        try:
            with anyio.fail_after(LIST_TIMEOUT):
                return await client.list_tools(cursor=cursor)
        except (ValueError, MCPError) as e:  # pydantic's ValidationError is a ValueError
            if isinstance(e, MCPError) and e.code != types.PARSE_ERROR:
                raise
            reason = _describe(e).partition("\n")[0][:200]
            log.warning("upstream %s: tools/list refused whole (%s); asking again, tool by tool", self.name, reason)
        self._screen.active = True
        try:
            with anyio.fail_after(LIST_TIMEOUT):
                return await client.list_tools(cursor=cursor)
        finally:
            self._screen.active = False

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._changed.set()
        except ListenNotSupportedError:
            return  # handshake-era server: notifications arrive through the message handler
        except MCPError as e:
            if e.code == types.METHOD_NOT_FOUND:
                return  # a server that never announces changes; its listing is kept as it is
            self.mark_broken(f"change stream lost: {_describe(e)}")
        except Exception as e:
            self.mark_broken(f"change stream lost: {_describe(e)}")

    async def _refresher(self, client: Client) -> None:
        while True:
            await self._changed.wait()
            await anyio.sleep(self._debounce)
            self._changed = anyio.Event()
            try:
                await self._refresh(client)
            except Exception as e:
                self.mark_broken(f"re-listing tools failed: {_describe(e)}")
                return

    async def _pinger(self, client: Client) -> None:
        while True:
            with anyio.move_on_after(self._ping_interval):
                await self._probe.wait()
            self._probe = anyio.Event()
            await self.check(client)

    async def check(self, client: Client | None = None) -> bool:
        """Pings the server; a failed ping marks the connection broken."""
        client = client or self._client
        if client is None:
            return False
        try:
            with anyio.fail_after(PING_TIMEOUT):
                if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    await client.session.send_discover(client.protocol_version)  # ping is gone in 2026-07-28
                else:
                    await client.send_ping()
            return True
        except Exception as e:
            self.mark_broken(f"ping failed: {_describe(e)}")
            return False

    # -- calls ----------------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> types.CallToolResult:
        """Runs ``tool`` upstream; raises :class:`UpstreamError` for anything but a tool result."""
        client = self._client
        if client is None:  # why (last_error) is the connection's, told the operator, not every caller
            raise UpstreamError(self.name, "unavailable", f"upstream {self.name!r} is unavailable (reconnecting)")
        try:
            with anyio.fail_after(timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            self._check_soon()
            message = f"upstream {self.name!r} did not answer within {timeout:g} s"
            raise UpstreamError(self.name, "timeout", message) from None
        except Exception as e:
            self._check_soon()
            raise UpstreamError(self.name, "error", f"upstream {self.name!r} failed: {_describe(e)}") from None
        if not isinstance(result, types.CallToolResult):
            raise UpstreamError(self.name, "error", f"upstream {self.name!r} sent a {type(result).__name__}")
        try:  # what cannot be written as JSON would fail the answer to the client, not the call
            result.model_dump_json(by_alias=True, exclude_none=True)
        except ValueError:  # pydantic's serialization error: a lone surrogate, which _lenient let in
            message = f"upstream {self.name!r} sent a result that is not valid Unicode text (a lone surrogate)"
            raise UpstreamError(self.name, "error", message) from None
        return result

    def _check_soon(self) -> None:
        """A failed call may be the tool's fault or a dead server: ping now to tell them apart."""
        self._probe.set()


class ToolScreen:
    """Takes each tool the SDK would refuse out of a ``tools/list`` answer, before the SDK sees it.

    The SDK checks a listing as one value, so a single malformed tool (an ``inputSchema`` that is
    a string or ``null``, a name that is a number, a schema nested hundreds of levels deep) failed
    the whole listing: the upstream reconnected forever and none of its tools were served. While
    :attr:`active` (set by :meth:`Upstream._page` when the SDK refused a page, which it then asks
    for again, and cleared once that page is in), each answer to a ``tools/list`` is checked tool
    by tool with the SDK's own checks for the negotiated version; each tool that fails is dropped
    and kept in :attr:`refused` (``{"tool", "error"}``), and the rest of the page goes on. Until
    then it costs nothing: a well-formed listing is checked once, by the SDK.
    """

    def __init__(self, server: str) -> None:
        self.server = server
        self.version: str | None = None  # set once the handshake is done; the SDK's default before
        self.refused: list[dict[str, str]] = []
        self.active = False
        self._asked: set[str | int] = set()  # ids of tools/list requests not yet answered

    def sent(self, item: SessionMessage) -> None:
        message = item.message
        if self.active and isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
            self._asked.add(message.id)

    def received(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        if not isinstance(item, SessionMessage):
            return item
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError) or message.id not in self._asked:
            return item
        self._asked.discard(message.id)
        result = self.screened(message.result) if isinstance(message, types.JSONRPCResponse) else None
        if result is None:
            return item
        return SessionMessage(message.model_copy(update={"result": result}), item.metadata)

    def screened(self, result: object, *, text: bool = False) -> dict[str, Any] | None:
        """``result`` (a page of a listing) without the tools the SDK would refuse (and without
        a field of the page it would refuse, see :meth:`_page_fields`), or ``None`` when it keeps
        them all, or when the page cannot be taken even so (``tools`` not a list, a required
        field missing): the SDK refuses that as a whole, as before. With ``text``, a tool holding
        a string that is not Unicode (an escaped lone surrogate) is refused too: such a page must
        be written out again as JSON text."""
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(tools, list):
            return None
        page = self._page_fields({k: v for k, v in result.items() if k != "tools"})  # each tool is checked within it
        if page is None:
            return None
        kept = []
        for position, tool in enumerate(tools):
            error = self._tool_refusal(page, tool, text)
            if error is None:
                kept.append(tool)
                continue
            name = tool.get("name") if isinstance(tool, dict) else None
            name = name if isinstance(name, str) else f"#{position}"
            self.refused.append({"tool": name[:200], "error": error})
            log.warning("upstream %s: tool %.200s refused: %s", self.server, name, error)
        changed = len(kept) < len(tools) or len(page) < len(result) - 1
        return {**page, "tools": kept} if changed else None

    def _page_fields(self, page: dict[str, Any]) -> dict[str, Any] | None:
        """The fields of a page, its tools aside, as the SDK would take them: a field it refuses
        (a ``nextCursor`` that is a number, a ``_meta`` that is a list) is left out, logged, so
        that the page's tools are kept (without its ``nextCursor``, the listing ends at this
        page); ``None`` when the page is refused even so (a required field missing or wrong)."""
        page = dict(page)
        while (error := self._error({**page, "tools": []})) is not None:
            where = error.errors()[0]["loc"] if isinstance(error, ValidationError) else ()
            field = str(where[0]) if where else None
            if field is None or field not in page:
                return None
            ends = " (the listing ends at this page)" if field == "nextCursor" else ""
            log.warning("upstream %s: the listing's %s is refused, left out%s: %s", self.server, field, ends, error)
            del page[field]
        return page

    def _refusal(self, result: dict[str, Any]) -> str | None:
        """Why the SDK would refuse ``result`` as a page of a listing (a short reason), or ``None``."""
        error = self._error(result)
        if error is None:
            return None
        return _first_error(error) if isinstance(error, ValidationError) else f"{type(error).__name__}: {error}"[:200]

    def _error(self, result: dict[str, Any]) -> Exception | None:
        """What the SDK would raise on ``result`` as a page of a listing, or ``None``."""
        try:
            with contextlib.suppress(KeyError):  # a version without this method: the SDK skips it too
                validate_server_result("tools/list", self.version or "2025-11-25", result)
            types.ListToolsResult.model_validate(result, by_name=False)
        except (ValueError, RecursionError) as e:  # ValidationError; the serializer's "circular reference"
            return e
        return None

    def _tool_refusal(self, page: dict[str, Any], tool: object, text: bool) -> str | None:
        if not isinstance(tool, dict):
            return f"a tool must be a JSON object, not {type(tool).__name__}"
        for field in ("inputSchema", "outputSchema"):  # as deep as the gateway takes a schema
            if json_shape(tool.get(field))[0] > MAX_SCHEMA_DEPTH:
                return f"{field} nests deeper than {MAX_SCHEMA_DEPTH} levels"
        if text:
            try:
                json.dumps(tool, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                return "a text is not valid Unicode (it holds a lone surrogate)"
        return self._refusal({**page, "tools": [tool]})

    async def on_response(self, response: httpx2.Response) -> None:
        """An HTTP client's response hook: while :attr:`active`, the answer to a ``tools/list``
        POST (a JSON body or an event stream) that the SDK's parser would refuse (nested past
        its limit, or holding a lone surrogate) is read whole and written again without the
        tools the SDK would refuse. The SDK's HTTP client turns such a body into an error for
        the request, so the screen of the messages never sees that listing."""
        request = response.request
        if not self.active or request.method != "POST" or b"tools/list" not in request.content:
            return
        kind = response.headers.get("content-type", "").lower()
        if not kind.startswith(("application/json", "text/event-stream")):
            return
        body = await response.aread()
        if kind.startswith("application/json"):
            fixed = self._rewritten(request.content, body)
        else:
            fixed = self._rewritten_events(request.content, body)
        if fixed is not None:
            response._content = fixed  # what the SDK's aread and event reader then read

    def _rewritten(self, request: bytes, body: bytes | str) -> bytes | None:
        """One JSON-RPC answer to ``request`` written again without the tools the SDK would
        refuse, when the SDK cannot parse it and it answers a ``tools/list``; else ``None``."""
        try:
            types.jsonrpc_message_adapter.validate_json(body, by_name=False)
            return None
        except ValidationError:
            pass
        try:
            asked, answer = json.loads(request), json.loads(body)
        except (ValueError, RecursionError):
            return None  # nested past what the standard library parses too: the SDK refuses it
        if not isinstance(asked, dict) or asked.get("method") != "tools/list" or not isinstance(answer, dict):
            return None
        result = self.screened(answer.get("result"), text=True)
        return None if result is None else json.dumps({**answer, "result": result}).encode()

    def _rewritten_events(self, request: bytes, body: bytes) -> bytes | None:
        """An event stream with the data of each event :meth:`_rewritten` would write again
        replaced (one ``data:`` line); ``None`` when no event changes."""
        lines, out, data, changed = body.decode("utf-8", "surrogateescape").splitlines(), [], [], False
        for line in [*lines, ""]:
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
                continue
            if data and not line:
                fixed = self._rewritten(request, "\n".join(data))
                changed = changed or fixed is not None
                out.extend([f"data: {fixed.decode()}"] if fixed is not None else [f"data: {d}" for d in data])
                data = []
            out.append(line)
        return "\n".join(out).encode("utf-8", "surrogateescape") if changed else None


def _first_error(e: ValidationError) -> str:
    """The first of a validation's errors, located within the tool: ``inputSchema: Input should
    be a valid dictionary``, not pydantic's whole text with the input echoed."""
    first = e.errors(include_url=False, include_input=False)[0]
    where = [str(p) for p in first["loc"]]
    if where[:2] == ["tools", "0"]:
        where = where[2:]
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return f"{'.'.join(where) or 'tool'}: {first['msg']}{more}"


class _Noted:
    """A transport's write stream that shows each message to ``note`` before sending it."""

    def __init__(self, stream: WriteStream[SessionMessage], note: Callable[[SessionMessage], None]) -> None:
        self._stream, self._note = stream, note

    async def send(self, item: SessionMessage, /) -> None:
        self._note(item)
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Noted:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._stream.__aexit__(*exc)


@asynccontextmanager
async def _lenient(
    transport: AbstractAsyncContextManager[TransportStreams], screen: ToolScreen
) -> AsyncIterator[TransportStreams]:
    """The transport's streams, with each message the SDK could not parse parsed again by the
    standard library, and the tools of each listing screened one by one (:class:`ToolScreen`).
    The SDK's parser refuses a whole message for one string holding an escaped lone surrogate
    (``"\\ud800"``) or for nesting past its limit, so one such tool would lose the whole listing
    and time it out, restart after restart; parsed here, the message arrives and only that tool
    is refused."""
    async with transport as (read, write):
        relay, received = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            async with relay:
                async for item in read:
                    await relay.send(screen.received(_reparsed(item)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            yield received, _Noted(write, screen.sent)
            tg.cancel_scope.cancel()


def _reparsed(item: SessionMessage | Exception) -> SessionMessage | Exception:
    if not isinstance(item, ValidationError):
        return item
    errors = item.errors()
    if len(errors) != 1 or errors[0]["type"] != "json_invalid" or not isinstance(errors[0]["input"], str | bytes):
        return item
    try:
        data = json.loads(errors[0]["input"])
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(data, by_name=False))
    except (ValueError, RecursionError):
        return item


def _describe(e: BaseException) -> str:
    inner = getattr(e, "exceptions", None)  # an exception group (BaseExceptionGroup is 3.11+)
    if isinstance(inner, tuple) and inner:
        return "; ".join(_describe(x) for x in inner)
    text = str(e) or type(e).__name__
    return f"{type(e).__name__}: {text}" if str(e) else text


@asynccontextmanager
async def _closing(http: Any, client: Client) -> AsyncIterator[Client]:
    """``client``, then ``http``, its HTTP client, closed when the session ends: the SDK leaves a
    client it was given open, and each reconnection makes a new one (its connections and sockets
    would stay behind)."""
    async with http, client as entered:
        yield entered
