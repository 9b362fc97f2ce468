"""Real catalogs that ship inside pip-installable packages.

:func:`aws_catalog` turns the service models bundled with ``botocore`` (about 18,000 AWS API
operations across 400+ services) into tools: one tool per operation, named
``<service>__<Operation>``, described by the first sentences of its documentation, with a JSON
schema built from its input shape, and requiring the permission ``aws:<service>``. The converted
catalog is cached as JSON Lines under the user cache directory, keyed by botocore's version.

Every name is one each API takes (:data:`toolsift.assemble.NAME_RULES`): the few operations
(46 in botocore 1.43) whose ``<service>__<Operation>`` runs past OpenAI's 64 characters keep
their service and the start of their operation, end in six hex digits of a hash of the whole
name (``ec2__DescribeLocalGatewayRouteTableVirtualInterfaceGroupA_9449d4``; see
:func:`tool_name`), and carry the operation's full name as their ``title`` and in their
``search_text``.
"""

from __future__ import annotations

import hashlib
import html
import logging
import os
import re
from pathlib import Path
from typing import Any, ClassVar

from .errors import MissingExtraError
from .progress import Progress, Reporter
from .registry import Catalog, Tool

log = logging.getLogger("toolsift.catalogs")


_TAG = re.compile(r"<[^>]+>")
# admonitions (<important>, <note>) are about the service, not what the operation does
_ASIDE = re.compile(r"<(important|note)>.*?</\1>", re.S | re.I)
CONVERSION = 4
"""Bumped when :func:`aws_catalog` converts differently: the cached catalog's name carries it."""
_SPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def cache_dir() -> Path:
    """Where toolsift caches downloaded or converted data (``$TOOLSIFT_CACHE`` overrides)."""
    root = os.environ.get("TOOLSIFT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "toolsift"
    )
    return Path(root)


def plain(doc: str, max_chars: int) -> str:
    """Documentation HTML as plain text: whole sentences up to ``max_chars``, leaving out the
    ``<important>`` and ``<note>`` asides unless they are all there is."""
    text = _SPACE.sub(" ", html.unescape(_TAG.sub(" ", _ASIDE.sub(" ", doc)))).strip()
    if not text:
        text = _SPACE.sub(" ", html.unescape(_TAG.sub(" ", doc))).strip()
    if len(text) <= max_chars:
        return text
    cut = [m.start() for m in _SENTENCE_END.finditer(text) if m.start() <= max_chars]
    return text[: cut[-1]] if cut else text[:max_chars].rsplit(" ", 1)[0]


class _Converter:
    """Input shape of an operation → JSON schema, two levels of nesting deep."""

    SCALARS: ClassVar[dict[str, str]] = {
        "string": "string",
        "blob": "string",
        "timestamp": "string",
        "boolean": "boolean",
        "integer": "integer",
        "long": "integer",
        "float": "number",
        "double": "number",
    }

    def __init__(self, shapes: dict[str, Any]) -> None:
        self.shapes = shapes

    def schema(self, shape_name: str | None, depth: int = 0) -> dict[str, Any]:
        shape = self.shapes.get(shape_name or "", {})
        kind = shape.get("type", "structure")
        if kind == "structure":
            if depth >= 3:
                return {"type": "object"}
            members = shape.get("members", {})
            props = {m: self.member(spec, depth + 1) for m, spec in members.items()}
            out: dict[str, Any] = {"type": "object", "properties": props}
            required = [r for r in shape.get("required", []) if r in props]
            if required:
                out["required"] = required
            return out
        if kind == "list":
            return {"type": "array", "items": self.schema(shape.get("member", {}).get("shape"), depth)}
        if kind == "map":
            return {"type": "object", "additionalProperties": self.schema(shape.get("value", {}).get("shape"), depth)}
        out = {"type": self.SCALARS.get(kind, "string")}
        if isinstance(shape.get("enum"), list):
            out["enum"] = shape["enum"][:20]
        return out

    def member(self, spec: dict[str, Any], depth: int) -> dict[str, Any]:
        out = self.schema(spec.get("shape"), depth)
        doc = plain(spec.get("documentation", ""), 160)
        return {"description": doc, **out} if doc else out


MAX_NAME = 64
"""The longest tool name :func:`aws_catalog` makes: OpenAI's limit, the shortest of the APIs'."""
MAX_SERVICE = 40
"""The longest service part of a name: a longer service (none in botocore 1.43, whose longest
has 35 characters) is cut in every name of that service, and ends in a hash of the service."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def tool_name(service: str, operation: str) -> tuple[str, str | None]:
    """The name of ``operation`` of ``service`` (``s3__PutObject``), and a title for it when that
    name had to be shortened to :data:`MAX_NAME` characters: the service and as much of the
    operation as fits, then ``_`` and six hex digits of the SHA-256 of the full name, so two
    operations that start alike still get two names. A service longer than :data:`MAX_SERVICE`
    is cut to it in all of its names alike (``<service start>_<its digest>``), so they share one
    group."""
    part = service if len(service) <= MAX_SERVICE else f"{service[: MAX_SERVICE - 7]}_{_digest(service)}"
    name = f"{part}__{operation}"
    if len(name) <= MAX_NAME:
        return name, None if part == service else operation
    return f"{name[: MAX_NAME - 7]}_{_digest(f'{service}__{operation}')}", operation


MAX_EXAMPLES = 5
"""Example titles kept per operation."""


def _examples(loader: Any, service: str, api_version: str | None) -> dict[str, tuple[str, ...]]:
    """The titles of the worked examples botocore ships for a service's operations ("To upload
    an object"), where it has them (about 60 % of services), for the API version the
    operations come from: requests the operation serves."""
    from botocore.exceptions import DataNotFoundError

    try:
        examples = loader.load_service_model(service, "examples-1", api_version).get("examples", {})
    except DataNotFoundError:
        return {}
    titles: dict[str, tuple[str, ...]] = {}
    for op_name, items in examples.items():
        found = (plain(str(e.get("title") or ""), 200) for e in items if isinstance(e, dict))
        titles[op_name] = tuple(dict.fromkeys(t for t in found if t))[:MAX_EXAMPLES]
    return titles


def _service_tools(loader: Any, service: str) -> list[Tool]:
    model = loader.load_service_model(service, "service-2")
    convert = _Converter(model.get("shapes", {}))
    meta = model.get("metadata", {})
    # what people call the service ("Amazon Simple Queue Service", "SQS"): searched, never sent
    called = " ".join(dict.fromkeys(str(meta[k]) for k in ("serviceFullName", "serviceId") if meta.get(k)))
    examples = _examples(loader, service, meta.get("apiVersion"))
    tools = []
    for op_name, op in sorted(model.get("operations", {}).items()):
        name, title = tool_name(service, op_name)
        params = (
            convert.schema(op.get("input", {}).get("shape")) if "input" in op else {"type": "object", "properties": {}}
        )
        tools.append(
            Tool(
                name=name,
                description=plain(op.get("documentation", ""), 400),
                title=title,
                parameters=params,
                permissions=(f"aws:{service}",),
                # a shortened name's cut words are still searched
                search_text=called if title is None else f"{called} {op_name}",
                examples=examples.get(op_name, ()),
            )
        )
    return tools


def aws_catalog(progress: Progress | None = None, *, use_cache: bool = True) -> Catalog:
    """Every AWS API operation in the installed ``botocore``, as a :class:`Catalog`."""
    try:
        import botocore
        import botocore.session
    except ImportError:
        raise MissingExtraError("the AWS catalog needs botocore: pip install 'toolsift[demo]'") from None
    cached = cache_dir() / f"aws-botocore-{botocore.__version__}-v{CONVERSION}.jsonl"
    if use_cache and cached.exists():
        return Catalog.from_file(cached)
    loader = botocore.session.get_session().get_component("data_loader")
    services = sorted(loader.list_available_services("service-2"))
    catalog = Catalog()
    report = Reporter("converted AWS services", len(services), progress, log)
    for i, service in enumerate(services):
        catalog.extend(_service_tools(loader, service))
        report.step(i + 1, service)
    if use_cache:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        catalog.save(tmp)
        os.replace(tmp, cached)
    return catalog
