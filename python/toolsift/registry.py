"""The registry: :class:`Tool` and the ordered, append-only :class:`Catalog`.

A tool's position in its catalog never changes, so selections can be emitted in registry order and
keep a stable prompt prefix. Everything is validated on the way in: a bad field raises a
:mod:`toolsift.errors` exception naming the tool and the field, and nothing is silently dropped.
"""

from __future__ import annotations

import dataclasses
import json
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from .arguments import file_path, folded_name
from .callers import RESERVED
from .errors import (
    DuplicateToolError,
    InvalidParameterError,
    InvalidToolError,
    InvalidToolTypeError,
    SchemaError,
    UnknownToolError,
)
from .loaders import Permissions, load_anthropic, load_file, load_mcp, load_native, load_openai, naming

EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}
MAX_NAME_CHARS = 256
#: Deepest nesting of objects and arrays accepted in a tool's parameters. Real schemas stay far
#: below; a bound keeps every later step (copying, costing, emitting) clear of Python's recursion
#: limit whatever the call stack around it.
MAX_SCHEMA_DEPTH = 100


#: The MCP tool annotations toolsift checks, and their types (``ToolAnnotations`` of the spec).
ANNOTATION_TYPES: Mapping[str, type] = {
    "title": str,
    "readOnlyHint": bool,
    "destructiveHint": bool,
    "idempotentHint": bool,
    "openWorldHint": bool,
}


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidToolTypeError(f"name must be a string, not {type(name).__name__}", tool=repr(name), field="name")
    if not name or len(name) > MAX_NAME_CHARS:
        raise InvalidToolError(f"name must have 1 to {MAX_NAME_CHARS} characters", tool=name[:80], field="name")
    if any(c.isspace() or unicodedata.category(c).startswith("C") for c in name):
        raise InvalidToolError("name must not contain whitespace or control characters", tool=name, field="name")
    return str.__str__(name)  # a plain str: a subclass could compare or hash as another name


def json_shape(value: object) -> tuple[int, list[object]]:
    """Nesting depth of objects and arrays in ``value``, counted without recursion and given up
    on just past :data:`MAX_SCHEMA_DEPTH` (so a cycle ends too), and the first key found that
    is not a string (``[]``: none), which JSON would turn into one or merge with another."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            odd = [k for k in item if not isinstance(k, str)][:1]
            if odd:
                return deepest, odd
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_SCHEMA_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest, []


def _checked_json(name: str, field: str, value: Mapping[str, Any], error: type[InvalidToolError]) -> dict[str, Any]:
    """A deep copy of ``value`` through JSON, refused (``error``, naming the tool and field) when
    it nests too deeply or is not JSON: NaN, a non-JSON object, an integer past Python's
    int-to-str digit limit, a lone surrogate in a string or key."""
    depth, odd = json_shape(value)
    if depth > MAX_SCHEMA_DEPTH:
        raise error(f"{field} nest deeper than {MAX_SCHEMA_DEPTH} levels", tool=name, field=field)
    if odd:
        raise error(f"{field} are not valid JSON: the key {odd[0]!r} is not a string", tool=name, field=field)
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise error(f"{field} are not valid JSON: {e}", tool=name, field=field) from None
    copy: dict[str, Any] = json.loads(check_tool_text(name, field, text, error))
    return copy


def _check_schema(name: str, schema: object, field: str = "parameters") -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise SchemaError(f"{field} must be a JSON object, not {type(schema).__name__}", tool=name, field=field)
    copy = _checked_json(name, field, schema, SchemaError)
    if copy.get("type", "object") != "object":
        raise SchemaError(f"{field} must be an object schema, not type {copy['type']!r}", tool=name, field=field)
    return copy


def check_tool_text(name: str, field: str, value: str, error: type[InvalidToolError] = InvalidToolError) -> str:
    """``value``, refused (``error`` naming tool ``name`` and ``field``) when it holds a lone
    surrogate, which is not Unicode text: the core and every file written need UTF-8."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise error(f"a lone surrogate ({value[e.start]!r}) is not Unicode text", tool=name, field=field) from None
    return value


def _check_strings(name: str, field: str, value: object) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, Iterable) or isinstance(items, Mapping | bytes):
        raise InvalidToolTypeError(f"{field} must be a string or a list of strings", tool=name, field=field)
    out = tuple(items)
    for item in out:
        if not isinstance(item, str):
            raise InvalidToolTypeError(
                f"{field} must hold strings, found {type(item).__name__}", tool=name, field=field
            )
        check_tool_text(name, field, item)
    return tuple(str.__str__(item) for item in out)  # plain strs (see _check_name)


def name_arg(name: object) -> str:
    """``name`` as a plain string for a lookup by tool name (:class:`InvalidParameterError` if not)."""
    if type(name) is str:
        return name
    if not isinstance(name, str):
        raise InvalidParameterError(f"a tool name must be a string, not {type(name).__name__}")
    return str.__str__(name)  # a str subclass could lie in __eq__ or __hash__


@dataclasses.dataclass(frozen=True)
class Tool:
    """One tool definition.

    Attributes:
        name: Unique name the model calls the tool by.
        description: What the tool does, in words the model (and the index) can match.
        parameters: JSON schema of the arguments (an object schema). Stored as a deep copy.
        permissions: Permissions required to use the tool; the caller needs all of them. Empty
            (or ``""`` / ``None``) means public. A single string is accepted.
        core: Always selected (when the caller may use it), whatever the query.
        examples: Example requests the tool serves; indexed, never emitted.
        search_text: Extra text that is indexed but never emitted (synonyms, keywords).
        cost_tokens: Explicit prompt cost; ``None`` lets the index's token counter measure the
            emitted definition.
        annotations: MCP tool annotations (``readOnlyHint`` and so on), passed through to MCP output.
            Stored as a deep copy through JSON, so they must be JSON.
        title: MCP display name, passed through to MCP output; neither indexed nor counted in
            ``cost_tokens`` (clients show it to people, not to the model).
        output_schema: MCP ``outputSchema``, the JSON schema (an object schema) of the tool's
            structured result, passed through to MCP output; neither indexed nor counted.
        strict: OpenAI's and Anthropic's ``strict`` (the model's arguments always match the
            schema, which must then meet their rules), passed through to their output when set.
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=lambda: dict(EMPTY_SCHEMA))
    permissions: tuple[str, ...] = ()
    core: bool = False
    examples: tuple[str, ...] = ()
    search_text: str = ""
    cost_tokens: int | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    strict: bool | None = None

    def __post_init__(self) -> None:
        name = _check_name(self.name)
        put = object.__setattr__
        put(self, "name", name)
        if self.description is None:
            put(self, "description", "")
        for field in ("description", "search_text"):
            if not isinstance(getattr(self, field), str):
                kind = type(getattr(self, field)).__name__
                raise InvalidToolTypeError(f"{field} must be a string, not {kind}", tool=name, field=field)
            put(self, field, str.__str__(check_tool_text(name, field, getattr(self, field))))
        put(self, "parameters", _check_schema(name, self.parameters))
        # None, "" or an empty list: public; False, 0, {}, b"" are refused like True, 1... are
        given = (
            ()
            if self.permissions is None or (isinstance(self.permissions, str) and not self.permissions)
            else self.permissions
        )
        perms = _check_strings(name, "permissions", given)
        if any(not p for p in perms):
            raise InvalidToolError("permissions must be non-empty strings", tool=name, field="permissions")
        reserved = next((p for p in perms if p.startswith(RESERVED)), None)
        if reserved is not None:  # no caller may hold one: the tool could never be used
            raise InvalidToolError(
                f"permissions starting with {RESERVED!r} are toolsift's own, found {reserved!r}",
                tool=name,
                field="permissions",
            )
        put(self, "permissions", tuple(sorted(set(perms))))
        put(self, "examples", _check_strings(name, "examples", self.examples))
        if not isinstance(self.core, bool):
            raise InvalidToolTypeError("core must be True or False", tool=name, field="core")
        cost = self.cost_tokens
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int) or not 0 <= cost < 2**32):
            raise InvalidToolError(
                f"cost_tokens must be an int in [0, 2**32), not {cost!r}", tool=name, field="cost_tokens"
            )
        if self.annotations is not None:
            if not isinstance(self.annotations, Mapping):
                raise InvalidToolTypeError("annotations must be a mapping", tool=name, field="annotations")
            put(self, "annotations", _checked_json(name, "annotations", self.annotations, InvalidToolError))
            for key, expected in ANNOTATION_TYPES.items():  # what an MCP client validates them as
                value = self.annotations.get(key)
                if value is not None and not isinstance(value, expected):
                    raise InvalidToolTypeError(
                        f"annotations {key!r} must be a {expected.__name__}, not {type(value).__name__}",
                        tool=name,
                        field="annotations",
                    )
        if self.title is not None:
            if not isinstance(self.title, str):
                raise InvalidToolTypeError(
                    f"title must be a string, not {type(self.title).__name__}", tool=name, field="title"
                )
            put(self, "title", str.__str__(check_tool_text(name, "title", self.title)))
        if self.output_schema is not None:
            put(self, "output_schema", _check_schema(name, self.output_schema, "output_schema"))
        if self.strict is not None and not isinstance(self.strict, bool):
            raise InvalidToolTypeError("strict must be True, False or None", tool=name, field="strict")

    def __hash__(self) -> int:
        return hash(("Tool", self.name))

    def to_json(self) -> str:
        """The tool in toolsift's own JSON form (fields left at their defaults are omitted), as
        read back by :meth:`from_dict` and :meth:`Catalog.from_file`. Keys keep their order
        (``name`` first, a schema's properties as given), so a saved and loaded tool is emitted
        to a model byte for byte as the one built."""
        form = self._json_form()
        try:
            return json.dumps(form, ensure_ascii=False, allow_nan=False)
        except (ValueError, TypeError, RecursionError) as e:
            raise _not_json([form], e) from None

    def _json_form(self) -> dict[str, Any]:
        """What :meth:`to_json` writes: the name and every field not at its default."""
        out: dict[str, Any] = {"name": self.name}
        for key, default in _OPTIONAL_FIELDS:
            value = getattr(self, key)
            if not _is_default(value, default):
                out[key] = list(value) if type(value) is tuple else value
        return out

    def definition(self) -> dict[str, Any]:
        """The format-neutral definition a model sees: name, description, parameters (a copy:
        changing it leaves the tool as it is)."""
        return {"name": self.name, "description": self.description, "parameters": json_copy(self.parameters, self.name)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, position: int | None = None) -> Tool:
        """A tool from toolsift's own JSON form (the field names of this class)."""
        return load_native(cls, data, position or 0)


def json_copy(value: Any, tool: str = "", depth: int = 0) -> Any:
    """A copy of JSON data (dicts and lists copied at every depth, the rest shared: strings,
    numbers, booleans and ``None`` cannot change), for handing out a tool's schema: what a caller
    does to the copy (``additionalProperties: false`` for a strict mode) leaves the tool, the
    index's costs and later selections as they were. A schema that nests deeper than a tool may
    (a circular reference, made by changing it after the tool was built) raises
    :class:`SchemaError` naming ``tool``."""
    if depth > MAX_SCHEMA_DEPTH:
        raise SchemaError(
            f"parameters nest deeper than {MAX_SCHEMA_DEPTH} levels (a circular reference?)",
            tool=tool,
            field="parameters",
        )
    if type(value) is dict:
        return {k: json_copy(v, tool, depth + 1) for k, v in value.items()}
    if type(value) is list:
        return [json_copy(v, tool, depth + 1) for v in value]
    return value


class Catalog(Sequence[Tool]):
    """Ordered, append-only list of uniquely named tools.

    Args:
        tools: Tools (or mappings in toolsift's JSON form) in registry order.
    """

    def __init__(self, tools: Iterable[Tool | Mapping[str, Any]] = ()) -> None:
        if not isinstance(tools, Iterable) or isinstance(tools, str | bytes | Mapping):
            raise InvalidParameterError(f"a catalog is made of a list of tools, not {type(tools).__name__}")
        self._tools: list[Tool] = []
        self._positions: dict[str, int] = {}
        self._folded: dict[str, int] = {}  # names that are not ASCII, NFKC-normalised
        self.extend(tools)

    def append(self, tool: Tool | Mapping[str, Any]) -> int:
        """Adds a tool (or a mapping in toolsift's JSON form) at the end; returns its position."""
        if not isinstance(tool, Tool):
            tool = Tool.from_dict(tool, position=len(self._tools))
        if tool.name in self._positions:
            raise DuplicateToolError(
                f"duplicate name (already at position {self._positions[tool.name]})", tool=tool.name, field="name"
            )
        folded = folded_name(tool.name)
        seen = self._folded.get(folded, None if folded == tool.name else self._positions.get(folded))
        if seen is not None:
            raise DuplicateToolError(
                f"name differs only in Unicode normalisation from {self._tools[seen].name!r} (position {seen})",
                tool=tool.name,
                field="name",
            )
        if folded != tool.name:
            self._folded[folded] = len(self._tools)
        self._positions[tool.name] = len(self._tools)
        self._tools.append(tool)
        return len(self._tools) - 1

    def extend(self, tools: Iterable[Tool | Mapping[str, Any]]) -> None:
        """Appends several tools; on error the catalog keeps the tools before the bad one."""
        for tool in tools:
            self.append(tool)

    def __len__(self) -> int:
        return len(self._tools)

    @overload
    def __getitem__(self, i: int) -> Tool: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Tool]: ...
    def __getitem__(self, i: int | slice) -> Tool | Sequence[Tool]:
        return self._tools[i]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __contains__(self, item: object) -> bool:
        name = item.name if isinstance(item, Tool) else item
        return isinstance(name, str) and name in self._positions

    def __repr__(self) -> str:
        return f"Catalog({len(self)} tools)"

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names in registry order."""
        return tuple(t.name for t in self._tools)

    def position(self, name: str) -> int:
        """Registry position of the tool called ``name``."""
        try:
            return self._positions[name_arg(name)]
        except KeyError:
            raise UnknownToolError(name) from None

    def permissions(self) -> dict[str, int]:
        """Every permission a tool of the catalog requires, sorted, with how many tools require it
        (to check a caller's permissions against; see :meth:`toolsift.Index.check_caller`)."""
        counts: dict[str, int] = {}
        for t in self._tools:
            for p in t.permissions:
                counts[p] = counts.get(p, 0) + 1
        return dict(sorted(counts.items()))

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        i = self._positions.get(name_arg(name))
        return None if i is None else self._tools[i]

    def save(self, path: str | Path) -> None:
        """Writes the catalog as JSON Lines in toolsift's own form (readable by :meth:`from_file`).

        The file is replaced atomically (readers and concurrent saves see one whole catalog) and
        keeps the permission bits of the file it replaces. A temporary file that a killed save
        left beside it is removed by a later save once 15 minutes old.
        """
        from ._atomic import write_atomic

        write_atomic(file_path(path), (piece for piece, _ in json_lines(self._tools)))

    @classmethod
    def from_mcp(cls, result: Any, *, permissions: Permissions = None, core: Iterable[str] = ()) -> Catalog:
        """From an MCP ``tools/list`` result (a dict, an SDK result object, or its tool list).
        ``permissions``: ``{name: perms}`` or ``fn(name) -> perms``, for the tools it names (the
        others keep what they came with); ``core``: names of tools always sent."""
        return cls(load_mcp(Tool, result, permissions=permissions, core=core))

    @classmethod
    def from_openai(cls, tools: Any, *, permissions: Permissions = None, core: Iterable[str] = ()) -> Catalog:
        """From an OpenAI ``tools`` array (Chat Completions or Responses form); ``permissions``
        and ``core`` as for :meth:`from_mcp`."""
        return cls(load_openai(Tool, tools, permissions=permissions, core=core))

    @classmethod
    def from_anthropic(cls, tools: Any, *, permissions: Permissions = None, core: Iterable[str] = ()) -> Catalog:
        """From an Anthropic ``tools`` array; ``permissions`` and ``core`` as for :meth:`from_mcp`."""
        return cls(load_anthropic(Tool, tools, permissions=permissions, core=core))

    @classmethod
    def from_file(cls, path: str | Path, *, permissions: Permissions = None, core: Iterable[str] = ()) -> Catalog:
        """From a JSON or JSON Lines file of tools in any of the supported shapes; ``permissions``
        and ``core`` as for :meth:`from_mcp`."""
        path = file_path(path)
        tools = load_file(Tool, path, permissions=permissions, core=core)
        with naming(Path(path)):  # a name listed twice in the file
            return cls(tools)


#: Every field of :class:`Tool` but its name, with its default (``MISSING`` for ``parameters``).
_OPTIONAL_FIELDS = tuple((f.name, f.default) for f in dataclasses.fields(Tool) if f.name != "name")


#: Tools per piece of :func:`json_lines`.
LINES_STEP = 4096


def json_lines(tools: Sequence[Tool], step: int | None = None) -> Iterator[tuple[bytes, list[int]]]:
    """``tools`` in toolsift's own form, one :meth:`Tool.to_json` line each (newline-terminated),
    written by the core ``step`` (default :data:`LINES_STEP`) tools at a time: each piece, with
    the offset of each of its lines in it and then its end. (Pieces keep the tools' intermediate
    dicts few at a time, so a large catalog is written without a sweep of the garbage collector
    over all of them.)"""
    from ._core import json_lines as write

    step = step or LINES_STEP
    for start in range(0, len(tools), step):
        forms = [t._json_form() for t in tools[start : start + step]]
        try:
            piece = write(forms)
        except (ValueError, TypeError, RecursionError) as e:  # a schema changed after the tool was built
            raise _not_json(forms, e) from None
        yield piece


def _not_json(forms: list[dict[str, Any]], error: BaseException) -> SchemaError:
    """The error naming the tool and field of ``forms`` (tools' :meth:`Tool._json_form`) that is
    not JSON: NaN, a set or a circular reference put in a schema after the tool was built, which
    a written file would hold and no reader take back."""
    for form in forms:
        for field, value in form.items():
            try:
                json.dumps(value, allow_nan=False)
            except (ValueError, TypeError, RecursionError) as e:
                message = f"{field} is no longer JSON ({e}); was it changed after the tool was built?"
                return SchemaError(message, tool=str(form.get("name", "")), field=field)
    return SchemaError(f"a tool is not JSON: {error}")


def _is_default(value: object, default: object) -> bool:
    if default is dataclasses.MISSING:  # parameters: default_factory
        return value == EMPTY_SCHEMA
    return type(value) is type(default) and value == default
