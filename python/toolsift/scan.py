# ruff: noqa: RUF001, RUF002 - look-alike letters on purpose (homoglyph table, docs)
"""Poisoned tool definitions: text aimed at the model, hidden characters, look-alike names.

A tool description is read by the model, so a malicious server can hide instructions in it
("ignore previous instructions", "do not tell the user", read ``~/.ssh``), hide them from people
(zero-width, bidirectional or tag characters), or register a name that shadows a trusted tool
(``read_fiIe`` beside ``read_file``). :func:`scan` reports each such finding; ``Index(scan=...)``
decides what happens to flagged tools (see :class:`toolsift.Index`).

The patterns are generic markers of prompt injection and exfiltration, not a list fitted to any
catalog; a finding is a reason to review, not proof of malice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .registry import Tool

INSTRUCTION_PATTERNS = [
    r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|other|your)\s+"
    r"(instructions?|prompts?|messages?|rules|guidelines)",
    r"<\s*/?\s*(important|system|instructions?|admin|secret)\s*>",
    r"\b(do\s+not|don't|never)\s+(tell|inform|mention|reveal|show|notify|alert)\b.{0,20}\buser",
    r"\b(system\s+prompt|developer\s+message|hidden\s+instructions?)\b",
    r"\b(before|instead\s+of)\s+(using|calling|invoking)\s+(any|every|all|the)\s+(other\s+)?tools?\b",
    r"\byou\s+are\s+now\b",
    r"\b(send|upload|post|forward|exfiltrate)\b.{0,40}\b(credentials?|passwords?|secrets?|tokens?|api\s+keys?|"
    r"private\s+keys?|conversation|chat\s+history)\b",
]
SENSITIVE_PATTERNS = [
    r"~/\.(ssh|aws|gnupg|kube|docker|config/gcloud)\b",
    r"\bid_(rsa|ed25519|ecdsa)\b",
    r"(^|[\s/'\"])\.env\b",
    r"\bmcp\.json\b",
    r"/etc/(passwd|shadow)\b",
]
_INSTRUCTION = [re.compile(p, re.I | re.S) for p in INSTRUCTION_PATTERNS]
_SENSITIVE = [re.compile(p, re.I) for p in SENSITIVE_PATTERNS]
_VISIBLE_CONTROLS = {"\n", "\r", "\t"}
# Latin look-alikes from other scripts and digits that pass for letters in names
_HOMOGLYPHS = str.maketrans(
    {
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
        "ԁ": "d", "ɡ": "g", "һ": "h", "ӏ": "l", "ο": "o", "α": "a", "ν": "v", "τ": "t", "ι": "i", "κ": "k",
        "ρ": "p", "χ": "x", "0": "o", "1": "l", "i": "l", "|": "l",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Finding:
    """One reason to distrust a tool definition."""

    tool: str
    field: str
    kind: str
    """``instruction`` | ``sensitive_path`` | ``hidden_unicode`` | ``mixed_script_name`` | ``shadowing``"""
    detail: str


def _texts(tool: Tool) -> Iterator[tuple[str, str]]:
    yield "description", tool.description
    yield "search_text", tool.search_text
    for example in tool.examples:
        yield "examples", example
    stack: list[Any] = [tool.parameters]
    while stack:  # every string in the schema, at any depth (a JSON copy: no cycles)
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            yield "parameters", node


def _hidden(text: str) -> str | None:
    for ch in text:
        category = unicodedata.category(ch)
        if category in ("Cf", "Co", "Cs") or (category == "Cc" and ch not in _VISIBLE_CONTROLS):
            return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}"
    return None


def skeleton(name: str) -> str:
    """A name reduced so that look-alikes meet: compatibility folding, case, homoglyphs, separators."""
    folded = unicodedata.normalize("NFKC", name).casefold().translate(_HOMOGLYPHS)
    return re.sub(r"[\s_\-.:/]+", "", folded.replace("rn", "m").replace("vv", "w"))


def _scripts(name: str) -> set[str]:
    return {unicodedata.name(c, "?").split()[0] for c in name if c.isalpha()}


def scan(tools: Iterable[Tool], *, trusted: Iterable[str] = ()) -> list[Finding]:
    """Findings for ``tools`` in registry order.

    ``trusted`` names tools already accepted (for example, yesterday's catalog): a tool whose name
    reads the same as one of them, or as an earlier tool of ``tools``, once case, separators,
    compatibility forms and look-alike letters are folded (``read_fiIe``, ``Read-File``, a Cyrillic
    ``а``), is reported as ``shadowing`` on the later tool. Names one edit apart are not reported:
    real catalogs are full of them (``get_user`` / ``get_users``).
    """
    findings: list[Finding] = []
    seen: dict[str, str] = {}  # skeleton -> first name with it
    for name in trusted:
        seen.setdefault(skeleton(name), name)
    for tool in tools:
        for field, text in _texts(tool):
            hidden = _hidden(text)
            if hidden:
                findings.append(Finding(tool.name, field, "hidden_unicode", hidden))
            for pattern in _INSTRUCTION:
                m = pattern.search(text)
                if m:
                    findings.append(Finding(tool.name, field, "instruction", m.group(0)[:80]))
                    break
            for pattern in _SENSITIVE:
                m = pattern.search(text)
                if m:
                    findings.append(Finding(tool.name, field, "sensitive_path", m.group(0).strip()[:80]))
                    break
        if len(_scripts(tool.name)) > 1:
            findings.append(Finding(tool.name, "name", "mixed_script_name", ", ".join(sorted(_scripts(tool.name)))))
        other = seen.setdefault(skeleton(tool.name), tool.name)
        if other != tool.name:
            findings.append(Finding(tool.name, "name", "shadowing", f"looks like {other!r}"))
    return findings
