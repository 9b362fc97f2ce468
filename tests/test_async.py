"""``Toolbox.acall``: async handlers and hooks are awaited, permissions are checked before them,
usage counts only calls that finished; the synchronous ``call`` refuses an async handler instead
of handing back an un-run coroutine."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

import toolsift as ts
from toolsift.errors import MissingHandlerError

TOOLS = [
    ts.Tool("search_help", "Search the help center", core=True),
    ts.Tool("order_status", "Get the shipping status of an order", permissions="orders.read"),
    ts.Tool("issue_refund", "Refund an order payment", permissions="billing"),
]


def toolbox(handlers: dict[str, Any], hooks: ts.Hooks | None = None, **options: Any) -> ts.Toolbox:
    return ts.Toolbox(
        ts.Catalog(TOOLS),
        caller=("orders.read",),
        handlers=handlers,
        hooks=hooks or ts.Hooks(),
        tiers=ts.ToolTierOptions(),
        **options,
    )


def test_acall_awaits_async_handlers_and_hooks_in_order(tmp_path: Any) -> None:
    seen: list[str] = []

    async def status(args: Any) -> str:
        await asyncio.sleep(0)
        seen.append("handler")
        return f"order {args['id']} shipped"

    async def before(event: ts.ToolEvent) -> None:
        seen.append(f"before {event.name} via {event.via}")

    async def after(event: ts.ToolEvent, result: Any) -> None:
        seen.append(f"after {result}")

    usage = ts.UsageStore(tmp_path / "usage.sqlite", warmup=0)
    box = toolbox({"order_status": status}, ts.Hooks(before, after), usage=usage)
    got = asyncio.run(box.acall("call_tool", {"name": "order_status", "arguments": {"id": 7}}))
    assert got == "order 7 shipped"
    assert seen == ["before order_status via call_tool", "handler", "after order 7 shipped"]
    assert box.used == {"order_status": 1}
    assert usage.score(box.user, "order_status") > 0 and usage.score(box.user, "issue_refund") == 0
    # tool_search answers the same as the synchronous call
    assert asyncio.run(box.acall("tool_search", {"query": "order status"})) == box.call(
        "tool_search", {"query": "order status"}
    )


def test_acall_takes_plain_functions_too() -> None:
    box = toolbox({"order_status": lambda args: "shipped"}, ts.Hooks(after_tool=lambda e, r: None))
    assert asyncio.run(box.acall("order_status")) == "shipped"
    assert box.used == {"order_status": 1}


def test_a_failed_or_refused_async_call_counts_nothing() -> None:
    async def broken(args: Any) -> str:
        raise RuntimeError("upstream down")

    async def refuse(event: ts.ToolEvent) -> None:
        raise PermissionError("not today")

    box = toolbox({"order_status": broken})
    with pytest.raises(RuntimeError, match="upstream down"):
        asyncio.run(box.acall("order_status"))
    assert box.used == {}
    ran: list[str] = []
    guarded = toolbox({"order_status": lambda args: ran.append("ran")}, ts.Hooks(before_tool=refuse))
    with pytest.raises(PermissionError):
        asyncio.run(guarded.acall("order_status"))
    assert ran == [] and guarded.used == {}


def test_acall_checks_permissions_before_any_handler_or_hook_runs() -> None:
    ran: list[str] = []

    async def refund(args: Any) -> str:
        ran.append("refund")
        return "refunded"

    async def before(event: ts.ToolEvent) -> None:
        ran.append("hook")

    box = toolbox({"issue_refund": refund}, ts.Hooks(before_tool=before))
    for call in (("issue_refund", {}), ("call_tool", {"name": "issue_refund", "arguments": {}})):
        with pytest.raises(ts.errors.UnknownToolError):
            asyncio.run(box.acall(*call))
    assert ran == []


def test_the_synchronous_call_refuses_an_async_handler_before_counting_it() -> None:
    async def status(args: Any) -> str:
        return "shipped"

    box = toolbox({"order_status": status})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine was never awaited" would be a RuntimeWarning
        with pytest.raises(ts.errors.InvalidParameterError, match="acall"):
            box.call("order_status")
        gc.collect()
    assert box.used == {}
    assert asyncio.run(box.acall("order_status")) == "shipped"


def test_a_missing_handler_is_still_seen_by_the_hook_first() -> None:
    seen: list[str] = []

    async def before(event: ts.ToolEvent) -> None:
        seen.append(event.name)

    box = toolbox({}, ts.Hooks(before_tool=before))
    with pytest.raises(MissingHandlerError):
        asyncio.run(box.acall("order_status"))
    assert seen == ["order_status"]
