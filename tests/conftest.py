from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import toolsift as ts
from cluster_support import serve_http
from helpers import seed_tool
from redis_support import RedisServer


@pytest.fixture
def support() -> ts.Index:
    """The seed's six-tool support catalog."""
    return ts.Index(
        [
            seed_tool("search_help", "Search the help center articles", "", True),
            seed_tool("lookup_account", "Look up a customer account by email or id", "crm.read"),
            seed_tool("order_status", "Get the shipping status of an order", "orders.read"),
            seed_tool("issue_refund", "Refund a customer order payment to the card", "billing.refund"),
            seed_tool("refund_policy", "Explain the refund policy to the customer", ""),
            seed_tool("delete_account", "Delete a customer account permanently", "admin"),
        ]
    )


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    """The weather upstream (official SDK, streamable HTTP) on a free loopback port."""
    proc, url = serve_http("weather_server.py")
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real redis-server on a free loopback port, no persistence, stopped after the test."""
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def files_url() -> Iterator[str]:
    """The files upstream over HTTP, one process that every replica connects to."""
    proc, url = serve_http("files_server.py")
    yield url
    proc.terminate()
    proc.wait(10)
