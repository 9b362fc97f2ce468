"""Labelled tool-retrieval datasets: a catalog plus queries that name the tools they need.

* :func:`load_files`: any ``tools.jsonl`` (any shape :meth:`Catalog.from_file` reads) with a
  ``queries.jsonl`` of ``{"id", "query", "relevant": [tool names], "category"?}`` lines.
* :func:`load_bfcl`: the Berkeley Function Calling Leaderboard, from the data files inside the
  ``bfcl-eval`` wheel on PyPI. The wheel is downloaded once (``pip download --no-deps``, nothing is
  installed) into toolsift's cache directory. Every distinct function definition of the
  single-turn categories and every multi-turn API function is pooled into one catalog; each
  single-turn question is a query whose relevant tools are the functions its ground truth calls.
  A function name defined differently by different questions is kept once per definition (the
  later ones named ``name#2``, ``name#3``...); all definitions of a name carry that name as their
  label, so retrieving any of them finds the function.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalogs import cache_dir
from ..errors import CatalogFormatError, ToolsiftError
from ..loaders import json_lines, read_text
from ..registry import Catalog, Tool

BFCL_VERSION = "2026.3.23"
BFCL_SINGLE_TURN = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
BFCL_IRRELEVANCE = ("irrelevance", "live_irrelevance")
"""BFCL's categories of requests that none of their offered functions fits."""


@dataclass(frozen=True)
class LabelledQuery:
    """A query and the names of the tools it needs."""

    id: str
    text: str
    relevant: tuple[str, ...]
    category: str = "all"
    history: tuple[str, ...] = ()
    """Earlier user turns of the conversation, oldest first (may be empty)."""
    available: tuple[str, ...] = ()
    """The tools the dataset makes available with the request, where it says (BFCL gives each
    request a few functions; for its irrelevance categories none of them fits and ``relevant``
    is empty)."""
    offered: tuple[str, ...] | None = None
    """The tools the request was offered at the time, best first, where a log recorded them
    (``None``: not recorded)."""


@dataclass
class Dataset:
    """A catalog and its labelled queries."""

    name: str
    catalog: Catalog
    queries: list[LabelledQuery] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    """Tool name → the label queries use for it, where they differ (variants of one function)."""

    def label(self, tool_name: str) -> str:
        """The label that relevance judgements use for ``tool_name``."""
        return self.labels.get(tool_name, tool_name)

    def categories(self) -> list[str]:
        """Categories in first-seen order."""
        return list(dict.fromkeys(q.category for q in self.queries))


def unrestricted(tools: Iterable[Tool]) -> Catalog:
    """The tools without their permissions: retrieval quality is measured over the whole
    catalog, as a caller allowed every tool would see it."""
    return Catalog(dataclasses.replace(t, permissions=()) for t in tools)


def load_files(tools: str | Path, queries: str | Path, *, catalog: Catalog | None = None) -> Dataset:
    """A dataset from a catalog file and a queries JSONL file (``catalog``: the tools, already
    read from ``tools``, for example from a saved index). Permissions are dropped (see
    :func:`unrestricted`)."""
    catalog = unrestricted(Catalog.from_file(tools) if catalog is None else catalog)
    out = []
    for n, row in json_lines(read_text(Path(queries)), queries):
        q = _labelled(row, f"{queries}: line {n}", n)
        unknown = [r for r in (*q.relevant, *q.available) if catalog.get(r) is None]
        if unknown:
            raise CatalogFormatError(f"{queries}: line {n} names tools not in the catalog: {unknown}")
        out.append(q)
    return Dataset(Path(tools).stem, catalog, out)


def _labelled(row: Any, where: str, n: int) -> LabelledQuery:
    """One line of a queries file as a :class:`LabelledQuery` (``where``: the file and line, for
    the :class:`CatalogFormatError` a bad line raises); a tool named twice counts once."""
    if not isinstance(row, dict):
        raise CatalogFormatError(f"{where} is not a labelled query (a JSON object)")

    def text(key: str, default: str | None = None) -> str:
        value = row.get(key, default)
        if not isinstance(value, str):
            raise CatalogFormatError(f"{where}: {key!r} must be a string, not {_kind(value)}")
        return value

    def names(key: str, required: bool) -> tuple[str, ...]:
        value = row.get(key) if required or key in row else []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CatalogFormatError(f"{where}: {key!r} must be a list of tool names, not {_kind(value)}")
        return tuple(dict.fromkeys(value))

    ident = row.get("id", n)
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        raise CatalogFormatError(f"{where}: 'id' must be a string or an integer, not {_kind(ident)}")
    return LabelledQuery(
        str(ident), text("query"), names("relevant", True), text("category", "all"), available=names("available", False)
    )


def _kind(value: Any) -> str:
    return "null or missing" if value is None else f"{type(value).__name__} {json.dumps(value)[:40]}"


#: How the gateway's event log ends a text it cut (``gateway.server.MAX_LOG_CHARS``).
_CUT = re.compile(r"…\[\d+ more characters\]\Z")


def load_gateway_log(log: str | Path, *, catalog: Catalog | None = None) -> Dataset:
    """A dataset from a gateway's JSONL log and the catalog it keeps beside it (``LOG.tools.jsonl``,
    or ``catalog`` when given).

    Each ``tool_search`` query is labelled with the tools the same caller then ran successfully
    (before its next search), and keeps the tools that search returned as
    :attr:`LabelledQuery.offered`; searches followed by no successful call are left out, and so
    are lookups (``select:...``, ``group:...``, which rank nothing and end the search before).
    """
    path = Path(log)
    tools = Catalog.from_file(Path(f"{path}.tools.jsonl")) if catalog is None else catalog
    catalog = unrestricted(tools)  # the callers' permissions are dropped
    last: dict[str, int] = {}
    rows: list[tuple[str, list[str], tuple[str, ...]]] = []
    for n, event in json_lines(read_text(path), path):
        if not isinstance(event, dict):
            raise CatalogFormatError(f"{path}: line {n} is a {type(event).__name__}, not a JSON object")
        caller = str(event.get("caller"))
        if event.get("event") == "search" and isinstance(event.get("query"), str):
            query = _CUT.sub("", event["query"])  # the log's mark of a query it cut short
            if not query.strip() or query.startswith(("select:", "group:")):
                last.pop(caller, None)  # a lookup by name or group: no request ranked, and it ends the last
                continue
            last[caller] = len(rows)
            found = event.get("tools")
            rows.append((query, [], tuple(str(t) for t in found) if isinstance(found, list) else ()))
        elif event.get("event") == "call" and event.get("outcome") == "ok" and caller in last:
            used = rows[last[caller]][1]
            if event.get("tool") not in used and catalog.get(str(event.get("tool"))) is not None:
                used.append(str(event["tool"]))
    queries = [LabelledQuery(str(i), q, tuple(r), offered=o) for i, (q, r, o) in enumerate(rows) if r]
    return Dataset(path.stem, catalog, queries)


def _bfcl_wheel() -> Path:
    folder = cache_dir() / "bfcl"
    found = sorted(folder.glob(f"bfcl_eval-{BFCL_VERSION}-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(folder)]
    run = subprocess.run([*cmd, f"bfcl-eval=={BFCL_VERSION}"], capture_output=True, text=True)
    found = sorted(folder.glob(f"bfcl_eval-{BFCL_VERSION}-*.whl"))
    if run.returncode != 0 or not found:
        raise ToolsiftError(f"could not download bfcl-eval=={BFCL_VERSION} from PyPI: {run.stderr.strip()[-500:]}")
    return found[0]


def _jsonl(z: zipfile.ZipFile, name: str) -> Iterator[dict[str, Any]]:
    for _, value in json_lines(z.read(f"bfcl_eval/data/{name}").decode("utf-8"), name):
        yield value


def _object_types(schema: Any) -> Any:
    """BFCL writes ``"type": "dict"`` for JSON-schema objects; map it to ``"object"``."""
    if isinstance(schema, dict):
        return {k: ("object" if k == "type" and v == "dict" else _object_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_object_types(v) for v in schema]
    return schema


class _Pool:
    """Distinct function definitions, each under a unique tool name."""

    def __init__(self) -> None:
        self.by_definition: dict[str, str] = {}
        self.tools: list[Tool] = []
        self.names: set[str] = set()

    def add(self, fn: dict[str, Any]) -> str:
        key = json.dumps(fn, sort_keys=True)
        if key in self.by_definition:
            return self.by_definition[key]
        name, n = str(fn["name"]), 1
        while name in self.names:
            n += 1
            name = f"{fn['name']}#{n}"
        params = _object_types(fn.get("parameters") or {"type": "object", "properties": {}})
        self.tools.append(Tool(name, fn.get("description", ""), params))
        self.names.add(name)
        self.by_definition[key] = name
        return name


def _user_text(question: Iterable[Any]) -> str:
    turns = [m["content"] for turn in question for m in turn if m.get("role") == "user" and m.get("content")]
    return "\n".join(turns)


def load_bfcl(categories: Iterable[str] = BFCL_SINGLE_TURN) -> Dataset:
    """The pooled BFCL catalog with the questions of ``categories`` as queries. The catalog is
    every function of :data:`BFCL_SINGLE_TURN` and the multi-turn documents, plus those of the
    :data:`BFCL_IRRELEVANCE` categories asked for (their queries have no relevant tool)."""
    categories = tuple(categories)
    unknown = set(categories) - {*BFCL_SINGLE_TURN, *BFCL_IRRELEVANCE}
    if unknown:
        raise ToolsiftError(f"unknown BFCL categories: {sorted(unknown)}")
    pool = _Pool()
    queries = []
    with zipfile.ZipFile(_bfcl_wheel()) as z:
        for category in BFCL_SINGLE_TURN:
            answers = {a["id"]: a["ground_truth"] for a in _jsonl(z, f"possible_answer/BFCL_v4_{category}.json")}
            for item in _jsonl(z, f"BFCL_v4_{category}.json"):
                offered = tuple(pool.add(fn) for fn in item["function"])
                if category not in categories:
                    continue
                needed = dict.fromkeys(name for call in answers[item["id"]] for name in call)
                text = _user_text(item["question"])
                queries.append(LabelledQuery(item["id"], text, tuple(needed), category, available=offered))
        docs = sorted(n for n in z.namelist() if n.startswith("bfcl_eval/data/multi_turn_func_doc/"))
        for doc in docs:
            for fn in _jsonl(z, doc.removeprefix("bfcl_eval/data/")):
                pool.add({k: v for k, v in fn.items() if k in ("name", "description", "parameters")})
        for category in (c for c in BFCL_IRRELEVANCE if c in categories):
            for item in _jsonl(z, f"BFCL_v4_{category}.json"):
                offered = tuple(pool.add(fn) for fn in item["function"])
                queries.append(LabelledQuery(item["id"], _user_text(item["question"]), (), category, available=offered))
    labels = {t.name: t.name.split("#")[0] for t in pool.tools if "#" in t.name}
    return Dataset("bfcl", Catalog(pool.tools), queries, labels)
