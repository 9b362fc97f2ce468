"""Loaders: MCP ``tools/list`` results, OpenAI and Anthropic ``tools`` arrays, JSON and JSONL files.

Each loader returns tools in input order and raises :class:`~toolsift.errors.CatalogFormatError`
(naming the item and field) for input of the wrong shape; nothing is skipped silently: a tool keeps
its name, description, schema, OpenAI's and Anthropic's ``strict``, and MCP's title, output schema
and annotations, and the fields of an item it does not keep (Anthropic ``cache_control``, MCP
``_meta``, ...) are logged as a warning,
since the definitions toolsift emits will not have them. Every loader takes two options for what
those formats cannot carry:

* ``permissions``: a mapping ``name -> permissions`` or a callable ``name -> permissions``; a tool
  it does not name (or for which the callable returns ``None``) keeps the permissions its item
  carries (none in MCP, OpenAI and Anthropic items; those of a toolsift file), never loses them;
* ``core``: names of the tools to mark as core (besides those an item marks itself).

A name in either that no tool has is logged as a warning (a misspelt name changes nothing).
An MCP, OpenAI or Anthropic item that carries toolsift's own ``permissions`` or ``core`` is
refused (those shapes do not have them: dropped, they would leave the tool public).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .arguments import folded_name, matching_names, name_forms, tool_names
from .errors import CatalogEncodingError, CatalogFormatError, InvalidParameterError, InvalidToolError, ToolsiftError

log = logging.getLogger("toolsift.loaders")

T = TypeVar("T")
"""The tool class the loaders make (:class:`toolsift.Tool`, which passes itself in: the loaders
do not import the registry, which imports them)."""

Permissions = Mapping[str, Any] | Callable[[str], Any] | None


def _items(data: Any, what: str) -> list[Any]:
    if isinstance(data, Mapping):
        cursor = data.get("nextCursor")
    else:  # the SDK's result object names it in snake case (nextCursor is its JSON alias)
        cursor = getattr(data, "next_cursor", None) or getattr(data, "nextCursor", None)
    if cursor:  # the later pages' tools would be missing, unnoticed
        raise CatalogFormatError(
            f"{what} is one page of a listing (nextCursor {str(cursor)[:40]!r}): list every page and "
            "pass all their tools (toolsift.integrations.mcp pages through a server's listing)",
            field="nextCursor",
        )
    if isinstance(data, Mapping) and "tools" in data:
        data = data["tools"]
    elif hasattr(data, "tools") and not isinstance(data, Mapping):  # an SDK result object
        data = data.tools
    if isinstance(data, str | bytes | Mapping) or not isinstance(data, Iterable):
        raise CatalogFormatError(f"{what} must be a list of tools or an object with a 'tools' list")
    return list(data)


def _as_dict(item: Any, position: int) -> Mapping[str, Any]:
    if hasattr(item, "model_dump"):  # pydantic models of the mcp / openai / anthropic SDKs
        item = item.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(item, Mapping):
        raise CatalogFormatError(f"item {position} is a {type(item).__name__}, not a JSON object", tool=f"#{position}")
    return item


def _field(item: Mapping[str, Any], key: str, position: int, kind: type, default: Any = None) -> Any:
    value = item.get(key, default)
    if value is None and default is None and key == "name":
        raise CatalogFormatError(f"item {position} has no {key!r}", tool=f"#{position}", field=key)
    if value is not None and not isinstance(value, kind):
        name = item.get("name") if isinstance(item.get("name"), str) else f"#{position}"
        raise CatalogFormatError(f"{key!r} must be a {kind.__name__}, not {type(value).__name__}", tool=name, field=key)
    return value


def _the_name(name: Any, names: set[Any], forms: dict[str, list[str]], field: str) -> str | None:
    """The key of ``names`` that names tool ``name`` (in any Unicode form), or ``None``.

    Raises:
        InvalidToolError: ``names`` holds the tool in several forms (which would apply?).
    """
    if not isinstance(name, str):
        return None  # refused, naming the tool, when the tool is made
    keys = matching_names(name, names, forms)
    if len(keys) > 1:
        raise InvalidToolError(
            f"{field} name this tool in {len(keys)} Unicode forms: {sorted(keys)}", tool=name, field=field
        )
    return keys[0] if keys else None


def _finish(make: type[T], tools: list[dict[str, Any]], permissions: Permissions, core: Iterable[str]) -> list[T]:
    if permissions is not None and not isinstance(permissions, Mapping) and not callable(permissions):
        kind = type(permissions).__name__
        raise InvalidParameterError(f"permissions must map tool names to permissions (or be a function), not {kind}")
    core_names = set(tool_names("core", core))  # not a bare string, read letter by letter
    given = set(permissions) if isinstance(permissions, Mapping) else set()
    given_forms, core_forms = name_forms(given), name_forms(core_names)
    out = []
    for spec in tools:
        name = spec["name"]
        if callable(permissions):
            perms = permissions(name)
        elif permissions is not None:  # a tool it does not name keeps the permissions it came with
            key = _the_name(name, given, given_forms, "permissions")
            perms = None if key is None else permissions[key]
        if permissions is not None and perms is not None:
            spec["permissions"] = perms
        if _the_name(name, core_names, core_forms, "core") is not None:
            spec["core"] = True
        out.append(make(**spec))
    listed = {folded_name(spec["name"]) for spec in tools if isinstance(spec["name"], str)}
    unknown = sorted(str(n) for n in given | core_names if not (isinstance(n, str) and folded_name(n) in listed))
    if unknown:  # a misspelt name would otherwise leave its tool as it came, unnoticed
        log.warning("permissions or core name tools that are not in the catalog: %s", unknown[:20])
    return out


#: Where each shape keeps a tool's schema: an item with another shape's key and not its own was
#: given to the wrong loader, and would load with no parameters.
_SCHEMA_KEYS = {"inputSchema": "MCP", "parameters": "OpenAI or toolsift", "input_schema": "Anthropic"}


def _own_schema(item: Mapping[str, Any], own: str, i: int) -> None:
    """Refuses an item that keeps its schema under another shape's key (``own``: this shape's)."""
    if own in item:
        return
    other = next((k for k in _SCHEMA_KEYS if k != own and k in item), None)
    if other is not None:
        name = item.get("name")
        raise CatalogFormatError(
            f"item {i} is an {_SCHEMA_KEYS[other]} tool (its schema is in {other!r}, not {own!r}): "
            "load it with the loader of that shape",
            tool=name if isinstance(name, str) else f"#{i}",
            field=other,
        )


def _mcp_spec(item: Mapping[str, Any], i: int) -> dict[str, Any]:
    _own_schema(item, "inputSchema", i)
    spec = {
        "name": _field(item, "name", i, str),
        "description": _field(item, "description", i, str, ""),
        "parameters": _field(item, "inputSchema", i, Mapping, {"type": "object", "properties": {}}),
    }
    annotations = _field(item, "annotations", i, Mapping, {})
    if annotations:
        spec["annotations"] = annotations
    for key, field, kind in (("title", "title", str), ("outputSchema", "output_schema", Mapping)):
        value = _field(item, key, i, kind, None)
        if value is not None:
            spec[field] = value
    return spec


def _openai_spec(item: Mapping[str, Any], i: int) -> dict[str, Any]:
    if item.get("type", "function") != "function":
        raise CatalogFormatError(f"item {i} is a {item.get('type')!r} tool, not a function", tool=f"#{i}", field="type")
    fn = _field(item, "function", i, Mapping) or item  # Chat Completions nests; Responses API is flat
    _own_schema(fn, "parameters", i)
    return _strict(
        {
            "name": _field(fn, "name", i, str),
            "description": _field(fn, "description", i, str, ""),
            "parameters": _field(fn, "parameters", i, Mapping, {"type": "object", "properties": {}}),
        },
        fn,
        i,
    )


def _anthropic_spec(item: Mapping[str, Any], i: int) -> dict[str, Any]:
    if "input_schema" not in item:
        kind = item.get("type", "unknown")
        raise CatalogFormatError(f"item {i} ({kind!r}) has no 'input_schema'", tool=f"#{i}", field="input_schema")
    return _strict(
        {
            "name": _field(item, "name", i, str),
            "description": _field(item, "description", i, str, ""),
            "parameters": _field(item, "input_schema", i, Mapping),
        },
        item,
        i,
    )


def _strict(spec: dict[str, Any], item: Mapping[str, Any], i: int) -> dict[str, Any]:
    """``spec`` with the item's ``strict`` flag, when it has one."""
    strict = _field(item, "strict", i, bool, None)
    if strict is not None:
        spec["strict"] = strict
    return spec


#: toolsift's own access fields: in an item of another shape they are refused, not dropped.
_ACCESS_KEYS = frozenset({"permissions", "core"})
#: The keys of each shape's items that toolsift reads (the rest are reported, see :func:`_unread`).
_MCP_KEYS = frozenset({"name", "title", "description", "inputSchema", "outputSchema", "annotations"})
_OPENAI_KEYS = frozenset({"type", "function", "name", "description", "parameters", "strict"})
_OPENAI_FUNCTION_KEYS = frozenset({"name", "description", "parameters", "strict"})
_ANTHROPIC_KEYS = frozenset({"type", "name", "description", "input_schema", "strict"})


def _unread(item: Mapping[str, Any]) -> list[str]:
    """The keys of an MCP, OpenAI or Anthropic item that toolsift does not keep, so never emits
    (Anthropic ``cache_control``, MCP ``_meta``...); toolsift's own form
    refuses unknown keys instead."""
    if item.get("type") == "function" or "function" in item:
        fn = item.get("function")
        nested = [f"function.{k}" for k in fn if k not in _OPENAI_FUNCTION_KEYS] if isinstance(fn, Mapping) else []
        return [k for k in item if k not in _OPENAI_KEYS] + nested
    if "inputSchema" in item:
        return [k for k in item if k not in _MCP_KEYS]
    if "input_schema" in item:
        return [k for k in item if k not in _ANTHROPIC_KEYS]
    return []


def _load(
    make: type[T],
    data: Any,
    what: str,
    spec: Callable[[Mapping[str, Any], int], dict[str, Any]],
    permissions: Permissions,
    core: Iterable[str],
    report_unread: bool = True,
) -> list[T]:
    specs, unread = [], Counter[str]()
    for i, item in enumerate(_items(data, what)):
        found = _as_dict(item, i)
        specs.append(spec(found, i))
        fn = found.get("function")
        given = [*found, *(fn if isinstance(fn, Mapping) else ())]
        odd = [k for k in given if not isinstance(k, str)][:1]
        if odd:  # JSON keys are strings: another would be read as one, or not at all
            raise CatalogFormatError(
                f"item {i} has a key that is not a string: {odd[0]!r}", tool=specs[-1]["name"], field=repr(odd[0])
            )
        skipped = _unread(found)
        access = next((k for k in skipped if k.rpartition(".")[2] in _ACCESS_KEYS), None)
        if access is not None:  # never read: dropped, it would leave the tool public (or not core)
            raise CatalogFormatError(
                f"toolsift's {access!r} is not read from an item of this shape: give it with the "
                "loader's permissions= / core= options, or write the tool in toolsift's own form",
                tool=specs[-1]["name"],
                field=access,
            )
        unread.update(skipped)
    if unread and report_unread:  # not silently: what the emitted definitions will lack
        keys = ", ".join(f"{k} ({n})" for k, n in sorted(unread.items()))
        log.warning("%s: fields toolsift keeps no copy of, so never emits (tools holding them): %s", what, keys)
    return _finish(make, specs, permissions, core)


def load_mcp(
    make: type[T],
    result: Any,
    *,
    permissions: Permissions = None,
    core: Iterable[str] = (),
    report_unread: bool = True,
) -> list[T]:
    """Tools of an MCP ``tools/list`` result (``permissions``: ``{name: perms}`` or
    ``fn(name) -> perms`` for the tools it names; ``core``: names of tools always sent;
    ``report_unread``: log the item fields not kept, for a caller that emits these tools)."""
    return _load(make, result, "an MCP tools/list result", _mcp_spec, permissions, core, report_unread)


def load_openai(make: type[T], tools: Any, *, permissions: Permissions = None, core: Iterable[str] = ()) -> list[T]:
    """Tools of an OpenAI ``tools`` array (``permissions``, ``core``: see :func:`load_mcp`)."""
    return _load(make, tools, "an OpenAI tools array", _openai_spec, permissions, core)


def load_anthropic(make: type[T], tools: Any, *, permissions: Permissions = None, core: Iterable[str] = ()) -> list[T]:
    """Tools of an Anthropic ``tools`` array (``permissions``, ``core``: see :func:`load_mcp`)."""
    return _load(make, tools, "an Anthropic tools array", _anthropic_spec, permissions, core)


def _any_spec(item: Mapping[str, Any], i: int, fields: frozenset[str]) -> dict[str, Any]:
    """Detects the shape of one file item: OpenAI, MCP, Anthropic or toolsift's own."""
    if item.get("type") == "function" or "function" in item:
        return _openai_spec(item, i)
    if "inputSchema" in item:
        return _mcp_spec(item, i)
    if "input_schema" in item:
        return _anthropic_spec(item, i)
    return _native_spec(item, i, fields)


def _fields(make: type[Any]) -> frozenset[str]:
    """The field names of the dataclass ``make``."""
    return frozenset(make.__dataclass_fields__)


def _native_spec(item: Mapping[str, Any], i: int, fields: frozenset[str]) -> dict[str, Any]:
    """toolsift's own form: the field names of :class:`~toolsift.Tool` (validated when the
    tool is made)."""
    unknown = sorted(set(item) - fields)
    name = _field(item, "name", i, str)
    if unknown:
        raise CatalogFormatError(f"unknown fields {unknown}; expected some of {sorted(fields)}", tool=name)
    return dict(item)


def load_native(make: type[T], item: Any, position: int) -> T:
    """One tool in toolsift's own form."""
    return make(**_native_spec(_as_dict(item, position), position, _fields(make)))


def read_text(path: Path) -> str:
    """The text of a UTF-8 file (a BOM allowed), or :class:`~toolsift.errors.CatalogEncodingError`
    naming the byte and line that are not UTF-8."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise CatalogEncodingError(f"{path}: invalid UTF-8 at byte {e.start} (line {line})") from None


def parse_json(text: str, where: object) -> Any:
    """``json.loads(text)``, failing with a :class:`~toolsift.errors.CatalogFormatError` that
    starts with ``where`` (a file, or a file and line): for text that is not JSON, has an object
    with a key twice (``json`` would keep the last silently: ``"permissions"`` given twice must
    not make a tool public), nests deeper than Python's recursion limit or holds an integer past
    its int-to-str digit limit."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise CatalogFormatError(f"{where}: a JSON object has the key {key!r} twice")
                seen.add(key)
        return out

    try:
        return json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as e:
        at = f"column {e.colno}" if e.lineno == 1 else f"line {e.lineno}, column {e.colno}"
        raise CatalogFormatError(f"{where}: not valid JSON: {e.msg} at {at}") from None
    except RecursionError:
        raise CatalogFormatError(f"{where}: JSON nested too deeply to read") from None
    except CatalogFormatError:  # a key given twice: already says where
        raise
    except ValueError as e:  # an integer past Python's int-to-str digit limit
        raise CatalogFormatError(f"{where}: JSON that cannot be read: {e}") from None


def json_lines(text: str, source: object) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of JSON Lines ``text``.

    Lines end at ``"\\n"`` alone (a ``"\\r"`` before it is JSON whitespace). U+0085, U+2028 and
    U+2029, where :meth:`str.splitlines` would also cut, are ordinary characters of a JSON string:
    ``json.dumps(..., ensure_ascii=False)`` writes them as they are.

    Raises:
        CatalogFormatError: A line cannot be parsed (see :func:`parse_json`); the message names
            ``source`` and the line.
    """
    for n, line in enumerate(text.split("\n"), 1):
        if line.strip(" \t\r"):  # JSON's whitespace, no other
            yield n, parse_json(line, f"{source}: line {n}")


def _parse(text: str, path: Path) -> Any:
    """The file's JSON: one value (a list, or an object with ``tools``), else JSON Lines, as
    :meth:`~toolsift.Catalog.save` writes whatever the file's name (one tool per line)."""
    if path.suffix != ".jsonl" and text.lstrip()[:1] in ("[", "{"):
        try:
            whole = parse_json(text, path)
        except CatalogFormatError as e:
            try:  # several lines of JSON (a catalog saved under a .json name)
                return [value for _, value in json_lines(text, path)]
            except CatalogFormatError:
                raise e from None
        if not (isinstance(whole, Mapping) and "tools" not in whole):
            return whole
        return [whole]  # one tool's object: a catalog of one saved as JSON Lines
    return [value for _, value in json_lines(text, path)]


def load_file(make: type[T], path: str | Path, *, permissions: Permissions = None, core: Iterable[str] = ()) -> list[T]:
    """Tools of a ``.json`` file (a list, or an object with a ``tools`` list) or a ``.jsonl`` file
    (``permissions``, ``core``: see :func:`load_mcp`)."""
    p = Path(path)
    try:
        text = read_text(p)
    except OSError as e:
        raise CatalogFormatError(f"cannot read {p}: {e.strerror}") from None
    with naming(p):
        fields = _fields(make)
        return _load(make, _parse(text, p), f"{p}", lambda item, i: _any_spec(item, i, fields), permissions, core)


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """Puts ``path`` in front of the message of a :class:`~toolsift.errors.ToolsiftError` raised
    inside (once): the error of a tool read from a file says which file."""
    try:
        yield
    except ToolsiftError as e:
        if e.args and str(path) not in str(e.args[0]):
            e.args = (f"{path}: {e.args[0]}", *e.args[1:])
        raise
