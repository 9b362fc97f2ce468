"""One upstream MCP server: connection, tool listing, calls, change notifications, restarts.

:class:`Upstream.run` supervises the connection for the gateway's lifetime: it connects (stdio
subprocess or streamable HTTP), lists the tools (every page), watches for
``notifications/tools/list_changed`` (or, on 2026-07-28 connections, a ``subscriptions/listen``
stream), pings to notice a dead server, and reconnects with exponential backoff after any failure.
Nothing an upstream does (crash, hang, garbage) escapes this class: calls get
:class:`UpstreamError` and the gateway keeps serving the other upstreams.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..errors import UpstreamError
from .config import ServerConfig

log = logging.getLogger("toolsift.gateway")

MAX_PAGES = 1000
PING_INTERVAL = 5.0
PING_TIMEOUT = 5.0
LIST_TIMEOUT = 30.0  # one page of tools/list; a listing of many pages may take longer in all
CONNECT_TIMEOUT = 30.0  # connecting and the initialize handshake
BACKOFF_START, BACKOFF_MAX = 0.25, 30.0

ToolsCallback = Callable[[str, list[types.Tool]], Awaitable[None]]


class Upstream:
    """Supervised connection to one upstream server.

    Args:
        config: The server's configuration.
        on_tools: Awaited with ``(server, tools)`` after every complete listing.
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
        if c.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=dict(c.headers), timeout=httpx2.Timeout(LIST_TIMEOUT, read=300.0))
            return _closing(http, Client(streamable_http_client(c.url, http_client=http), **options))
        assert c.command is not None
        params = StdioServerParameters(command=c.command, args=list(c.args), env=dict(c.env or {}), cwd=c.cwd)
        return Client(_lenient(stdio_client(params)), **options)

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
        for _ in range(MAX_PAGES):
            with anyio.fail_after(LIST_TIMEOUT):
                page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        else:
            raise UpstreamError(self.name, "error", f"tools/list did not end after {MAX_PAGES} pages")
        self.listings += 1
        await self._on_tools(self.name, tools)

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
        if client is None:
            detail = f": {self.last_error}" if self.last_error else ""
            raise UpstreamError(self.name, "unavailable", f"upstream {self.name!r} is unavailable{detail}")
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
        return result

    def _check_soon(self) -> None:
        """A failed call may be the tool's fault or a dead server: ping now to tell them apart."""
        self._probe.set()


@asynccontextmanager
async def _lenient(transport: AbstractAsyncContextManager[TransportStreams]) -> AsyncIterator[TransportStreams]:
    """The transport's streams, with each message the SDK could not parse parsed again by the
    standard library. The SDK's parser refuses a whole message for one string holding an escaped
    lone surrogate (``"\\ud800"``), so one such tool description would lose the whole listing and
    time it out, restart after restart; parsed here, the message arrives and only that tool is
    refused (a tool's text must be valid Unicode)."""
    async with transport as (read, write):
        relay, received = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            async with relay:
                async for item in read:
                    await relay.send(_reparsed(item))

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            yield received, write
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
