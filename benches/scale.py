"""Every user-facing path at 1k / 10k / 100k tools, in one table, with the growth from 10k to 100k.

For each size, the botocore catalog sampled or repeated to that size (``workloads.aws``, the
caller holding every other service) goes through what a user runs, end to end from Python:
building the index, saving and loading it, ``search`` and ``select``, a tiered ``Toolbox``'s plan
and tools array and its ``tool_search``, the tenant-isolated index's first query of a permission
set, and the MCP gateway (``toolsift serve`` in its own process, the catalog behind one upstream
over stdio, ``benches/catalog_server.py``): its first ``tools/list`` once it is ready (the index
and the listing of every configured caller built, as the gateway reports on stderr), a second
one, and ``tool_search`` round trips with the official SDK client. Times are medians
unless a path runs once; memory is the resident-set growth of this process.

    python benches/scale.py [--sizes [1000 10000 100000]] [--gateway-sizes [1000 10000 100000]] [--huge-every N]

(``--sizes`` or ``--gateway-sizes`` with no sizes skips the library's or the gateway's paths.)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import toolsift as ts
from toolsift.assemble import default_token_count
from workloads import BUDGET, aws

HERE = Path(__file__).resolve().parent
TOKEN, PROBE = "scale-bench-token", "scale-probe-token"
Row = dict[str, str]


def rss_mib() -> float:
    """This process's resident set, in MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def once(run: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = run()
    return result, time.perf_counter() - start


def median_us(run: Callable[[str], Any], queries: list[str], rounds: int = 5) -> float:
    for q in queries:  # warm
        run(q)
    times = []
    for _ in range(rounds):
        for q in queries:
            start = time.perf_counter()
            run(q)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def library(n: int) -> Row:
    """The library's paths for ``n`` tools."""
    work = aws(n)
    tools, queries, caller = work.tools, work.queries, work.caller
    gc.collect()
    before = rss_mib()
    index, build = once(lambda: ts.Index(tools))
    gc.collect()
    memory = rss_mib() - before
    row = {"Index(tools) s": f"{build:.2f}", "index memory MiB": f"{memory:.0f}"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.toolsift"
        _, save = once(lambda: index.save(path))
        size = path.stat().st_size
        _, load = once(lambda: ts.Index.load(path))
    row |= {"save s": f"{save:.2f}", "load s": f"{load:.3f}", "file bytes/tool": f"{size / n:,.0f}"}
    row["search µs"] = f"{median_us(lambda q: index.search(q, k=5, caller=caller), queries):.1f}"
    row["select µs"] = (
        f"{median_us(lambda q: index.select(q, caller=caller, budget_tokens=BUDGET, max_tools=8), queries):.1f}"
    )
    box, plan = once(lambda: _tiered(index, caller))
    array = sum(default_token_count(t["function"]) for t in box.tools("openai"))
    row |= {"Toolbox plan + tools s": f"{plan:.3f}", "tools array tokens": f"{array:,} / {BUDGET:,}"}
    search = median_us(lambda q: box.call("tool_search", {"query": q}), queries)
    row["Toolbox tool_search µs"] = f"{search:.0f}"
    isolated, tenant_build = once(lambda: ts.Index(tools, statistics="caller"))
    _, first = once(lambda: isolated.select(queries[0], caller=caller, budget_tokens=BUDGET))
    row |= {"Index(statistics='caller') s": f"{tenant_build:.2f}", "its first query s": f"{first:.3f}"}
    return row


def _tiered(index: ts.Index, caller: tuple[str, ...]) -> ts.Toolbox:
    box = ts.Toolbox(index, tiers=ts.ToolTierOptions(budget_tokens=BUDGET), caller=caller)
    box.tools("openai")
    return box


def gateway(n: int, huge_every: int = 0) -> Row:
    """The gateway's paths for ``n`` tools behind one stdio upstream (every ``huge_every``-th
    description padded to 1 MB when set)."""
    import anyio

    work = aws(n)
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Path(tmp) / "tools.jsonl"
        ts.Catalog(work.tools).save(catalog)
        config = Path(tmp) / "gateway.toml"
        port = _free_port()
        config.write_text(
            f"[gateway]\nport = {port}\nbudget_tokens = {BUDGET}\n"
            f"[servers.cat]\ncommand = {json.dumps(sys.executable)}\n"
            f"args = [{json.dumps(str(HERE / 'catalog_server.py'))}, {json.dumps(str(catalog))}, "
            f'"--huge-every", "{huge_every}"]\n'
            f'[callers.bench]\ntoken = "{TOKEN}"\npermissions = ["cat"]\n'
            f'[callers.probe]\ntoken = "{PROBE}"\npermissions = ["cat", "probe"]\n'  # its own listing
        )
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolsift", "serve", "--config", str(config)], stderr=subprocess.PIPE
        )
        try:
            assert proc.stderr is not None
            while "serving" not in proc.stderr.readline().decode():
                if proc.poll() is not None:
                    raise RuntimeError("the gateway did not start")
            ready: dict[str, float] = {}
            threading.Thread(target=_watch, args=(proc.stderr, n, ready), daemon=True).start()
            url = f"http://127.0.0.1:{port}/mcp"
            return anyio.run(_client, url, work.queries, work.tools[-1].name, started, ready)
        finally:
            proc.terminate()
            proc.wait(30)


def _watch(stream: Any, n: int, ready: dict[str, float]) -> None:
    """Reads the gateway's stderr; notes when the version with all ``n`` tools is ready (its index
    and the listing of every configured caller built) and how long its listings took."""
    pattern = re.compile(rf"ready: {n:,} tools \(([\d,]+) descriptions cut\), \d+ listings in (\d+) ms")
    for line in iter(stream.readline, b""):
        found = pattern.search(line.decode(errors="replace"))
        if found:
            cut = int(found.group(1).replace(",", ""))
            ready |= {"at": time.perf_counter(), "cut": cut, "listings_ms": float(found.group(2))}


async def _client(url: str, queries: list[str], last: str, started: float, ready: dict[str, float]) -> Row:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    def connect(token: str) -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600)
        return Client(streamable_http_client(url, http_client=http), cache=None, mode="legacy")

    async with connect(PROBE) as probe:  # another permission set
        with anyio.fail_after(600):  # ready: every tool listed and indexed, every caller's listing built
            while not await _indexed(probe, last) or "at" not in ready:
                await anyio.sleep(0.2)
    async with connect(TOKEN) as client:
        first_start = time.perf_counter()
        listed = await client.list_tools()
        first = time.perf_counter() - first_start
        again_start = time.perf_counter()
        await client.list_tools()
        again = time.perf_counter() - again_start
        tokens = sum(default_token_count(t.model_dump(by_alias=True, mode="json")) for t in listed.tools)
        times = []
        for q in queries * 3:
            start = time.perf_counter()
            await client.call_tool("tool_search", {"query": q, "limit": 5})
            times.append(time.perf_counter() - start)
    return {
        "gateway ready s": f"{ready['at'] - started:.1f}",
        "gateway listings built ms": f"{ready['listings_ms']:.0f}",
        "gateway descriptions cut": f"{ready['cut']:.0f}",
        "gateway first tools/list ms": f"{first * 1e3:.0f}",
        "gateway next tools/list ms": f"{again * 1e3:.1f}",
        "gateway tools/list tokens": f"{tokens:,}",
        "gateway tool_search p50 ms": f"{statistics.median(times) * 1e3:.2f}",
    }


async def _indexed(client: Any, last: str) -> bool:
    """Whether the gateway has listed and indexed the upstream's last tool (its last page)."""
    found = await client.call_tool("tool_search", {"query": f"select:cat__{last}"})
    return bool(json.loads(found.content[0].text))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def table(rows: dict[int, Row]) -> str:
    sizes = sorted(rows)
    keys = list(dict.fromkeys(k for r in rows.values() for k in r))
    ratio = 10_000 in rows and 100_000 in rows
    head = "| path | " + " | ".join(f"{s:,} tools" for s in sizes) + (" | 100k ÷ 10k |" if ratio else " |")
    lines = [head, "|---" * (len(sizes) + 1 + ratio) + "|"]
    for key in keys:
        cells = [rows[s].get(key, "") for s in sizes]
        line = f"| {key} | " + " | ".join(cells) + " |"
        if ratio:
            line += f" {_growth(rows[10_000].get(key), rows[100_000].get(key))} |"
        lines.append(line)
    return "\n".join(lines)


def _growth(small: str | None, large: str | None) -> str:
    try:
        a, b = (float(x.split("/")[0].replace(",", "")) for x in (small or "", large or ""))
    except ValueError:
        return ""
    return f"{b / a:.1f}×" if a else ""


def run(sizes: list[int], gateway_sizes: list[int], huge_every: int = 0) -> str:
    rows: dict[int, Row] = {}
    for n in sorted(set(sizes) | set(gateway_sizes)):
        rows[n] = library(n) if n in sizes else {}
        if n in gateway_sizes:
            rows[n] |= gateway(n, huge_every)
        print(f"done: {n:,} tools", file=sys.stderr, flush=True)
    return table(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument(
        "--gateway-sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000], help="none given: no gateway runs"
    )
    parser.add_argument(
        "--huge-every", type=int, default=0, help="pad every N-th description the gateway's upstream serves to 1 MB"
    )
    args = parser.parse_args()
    print(run(args.sizes, args.gateway_sizes, args.huge_every))


if __name__ == "__main__":
    main()
