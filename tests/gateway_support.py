"""What the gateway tests share: the upstream test servers, a gateway config with three callers,
a gateway running in this process, and client sessions to it over loopback HTTP."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from toolsift.gateway import load_config
from toolsift.gateway.server import Gateway

SERVERS = Path(__file__).parent / "mcp_servers"
ALICE, BOB, ROOT = "alice-token-123", "bob-token-456", "root-token-789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config_text(weather_url: str, tmp_path: Path, **gateway: Any) -> str:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in gateway.items())
    files = f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVERS / 'files_server.py'))}]"
    return f"""
[gateway]
port = 0
log = {json.dumps(str(tmp_path / "gateway.jsonl"))}
debounce = 0.05
{extra}
{upstreams(files, weather_url)}"""


def upstreams(files: str, weather_url: str) -> str:
    """The two upstreams (``files`` gives how to reach the files server), the destructive rule
    and the three callers every gateway test configures."""
    return f"""[servers.files]
{files}
pinned = ["read_file"]

[servers.weather]
url = {json.dumps(weather_url)}

[[rules]]
destructive = true
require = ["admin"]

[callers.alice]
token = "{ALICE}"
permissions = ["files", "weather"]

[callers.bob]
token = "{BOB}"
permissions = ["weather"]

[callers.root]
token = "{ROOT}"
permissions = ["files", "weather", "admin"]
admin = true
"""


@contextmanager
def running(text: str, tmp_path: Path, **options: Any) -> Iterator[Gateway]:
    """A gateway of the config ``text`` (``options``: for :class:`Gateway`) serving in a thread."""
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    gateway = Gateway(load_config(path), **options)
    with anyio.from_thread.start_blocking_portal() as portal:
        future = portal.start_task_soon(gateway.run)

        async def started() -> None:
            with anyio.fail_after(60):
                await gateway.started.wait()

        portal.call(started)
        try:
            yield gateway
        finally:
            future.cancel()


def session(gateway: Gateway, token: str | None, **options: Any) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers)
    url = f"http://127.0.0.1:{gateway.port}/mcp"
    return Client(streamable_http_client(url, http_client=http), cache=None, **options)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def search(client: Client, query: str, limit: int = 5) -> list[str]:
    result = await client.call_tool("tool_search", {"query": query, "limit": limit})
    assert not result.is_error, text_of(result)
    return [d["name"] for d in json.loads(text_of(result))]


async def call(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    return await client.call_tool("call_tool", {"name": name, "arguments": arguments})


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
    with anyio.fail_after(timeout):
        while not await check():
            await anyio.sleep(0.1)
