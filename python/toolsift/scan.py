# ruff: noqa: RUF001, RUF002 - look-alike letters on purpose (homoglyph table, docs)
"""Poisoned tool definitions: text aimed at the model, hidden characters, look-alike names.

A tool description is read by the model, so a malicious server can hide instructions in it
("ignore previous instructions", "do not tell the user", read ``~/.ssh``), hide them from people
(zero-width, bidirectional, tag characters or variation selectors, one per byte of a payload), or
register a name that shadows a trusted tool (``read_fiIe`` beside ``read_file``, or ``read_file``
with an invisible or combining character). :func:`scan` reports each such finding;
``Index(scan=...)`` decides what happens to flagged tools (see :class:`toolsift.Index`).

Hidden characters are the default-ignorable code points (:data:`DEFAULT_IGNORABLE`) and the
format, private-use, surrogate and control characters. In text, two exceptions keep emoji
legitimate: a single presentation selector (U+FE0E, U+FE0F) right after a symbol (an emoji, one
of the few emoji that are punctuation or letters, or a keycap's digit before U+20E3), and a
zero-width joiner between two parts of an emoji (man, joiner, woman: a couple). Everything else
is reported: a second selector in a row, a selector after a letter, every other variation
selector (VS1-14, and VS17-256, which a payload encoded one byte per selector needs; ideographic
variation sequences, rare in tool definitions, are reported too). In a name, every
default-ignorable and every combining mark is reported, emoji or not: a name is an identifier
the model must repeat exactly, and such characters let two different names read the same.

The patterns are generic markers of prompt injection and exfiltration, not a list fitted to any
catalog; a finding is a reason to review, not proof of malice.
"""

from __future__ import annotations

import re
import threading
import unicodedata
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .arguments import tool_names
from .errors import InvalidParameterError
from .registry import Tool

INSTRUCTION_PATTERNS = [
    r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|other|your)\s+"
    r"(instructions?|prompts?|messages?|rules|guidelines)",
    r"<\s*/?\s*(important|system|instructions?|admin|secret)\s*>",
    r"\b(do\s+not|don't|never)\s+(tell|inform|mention|reveal|show|notify|alert)\b.{0,20}\buser",
    # a tool may take a system prompt (a model API): asking for it, or to drop it, is the marker
    r"\b(reveal|print|repeat|output|show|leak|share|ignore|disregard|override|forget)\b.{0,30}"
    r"\b(system\s+prompt|developer\s+message)",
    r"\bhidden\s+instructions?\b",
    r"\b(before|instead\s+of)\s+(using|calling|invoking)\s+(any|every|all|the)\s+(other\s+)?tools?\b",
    r"\byou\s+are\s+now\b",
    # secrets sent somewhere: a tool that sends a token or imports API keys says so without a place
    r"\b(send|upload|post|forward|exfiltrate|copy)\b.{0,40}\b(credentials?|passwords?|secrets?|tokens?|api\s+keys?|"
    r"private\s+keys?|conversation|chat\s+history)\b.{0,40}\b(to|into)\s+(https?://|[^\s@]+@|(an?|the|this|my|our|"
    r"that)\s+(url|address|server|endpoint|webhook|email)|[^\s]+\.(com|net|org|io|ru|cn)\b)",
    r"\bexfiltrate\b",
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
# ASCII text (nearly every definition) is matched lower-cased, with ASCII classes and no re.I: the
# same matches, found faster. That holds while no pattern depends on case, which this checks.
if any(p != p.lower() for p in INSTRUCTION_PATTERNS + SENSITIVE_PATTERNS):
    raise AssertionError("scan patterns must be written in lower case (the ASCII path lower-cases text)")
_INSTRUCTION_ASCII = [re.compile(p, re.A | re.S) for p in INSTRUCTION_PATTERNS]
_SENSITIVE_ASCII = [re.compile(p, re.A) for p in SENSITIVE_PATTERNS]
_VISIBLE_CONTROLS = {"\n", "\r", "\t"}
_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # the hidden characters ASCII has

#: Default_Ignorable_Code_Point, from Unicode's DerivedCoreProperties.txt (Unicode 14.0, this
#: unicodedata's version): code points that render as nothing unless a font chooses to show them.
#: The standard library has no property lookup, hence the table, as inclusive ranges.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),  # Cf SOFT HYPHEN
    (0x034F, 0x034F),  # Mn COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # Cf ARABIC LETTER MARK
    (0x115F, 0x1160),  # Lo HANGUL CHOSEONG FILLER, HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # Mn KHMER VOWEL INHERENT AQ, AA
    (0x180B, 0x180F),  # Mn/Cf MONGOLIAN FREE VARIATION SELECTOR ONE..FOUR, VOWEL SEPARATOR
    (0x200B, 0x200F),  # Cf ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # Cf LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
    (0x2060, 0x206F),  # Cf WORD JOINER..NOMINAL DIGIT SHAPES (U+2065 reserved)
    (0x3164, 0x3164),  # Lo HANGUL FILLER
    (0xFE00, 0xFE0F),  # Mn VARIATION SELECTOR-1..16
    (0xFEFF, 0xFEFF),  # Cf ZERO WIDTH NO-BREAK SPACE
    (0xFFA0, 0xFFA0),  # Lo HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # Cn reserved
    (0x1BCA0, 0x1BCA3),  # Cf SHORTHAND FORMAT LETTER OVERLAP..UP STEP
    (0x1D173, 0x1D17A),  # Cf MUSICAL SYMBOL BEGIN BEAM..END PHRASE
    (0xE0000, 0xE0FFF),  # LANGUAGE TAG, TAG SPACE..CANCEL TAG, VARIATION SELECTOR-17..256, reserved
)
_IGNORABLE = frozenset(chr(c) for first, last in DEFAULT_IGNORABLE for c in range(first, last + 1))
_PRESENTATION = ("\ufe0e", "\ufe0f")  # text and emoji presentation selectors
_ZWJ, _KEYCAP = "\u200d", "\u20e3"
# emoji that are punctuation or letters: double exclamation, interrobang, information source,
# wavy dash, part alternation mark
_EMOJI_NOT_SYMBOLS = frozenset("\u203c\u2049\u2139\u3030\u303d")
# Latin look-alikes from other scripts, as text reads them (the patterns match words)
_LOOKALIKE_LETTERS = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "ɡ": "g", "һ": "h", "ӏ": "l", "ο": "o", "α": "a", "ν": "v", "τ": "t", "ι": "i", "κ": "k",
    "ρ": "p", "χ": "x", "к": "k", "м": "m", "т": "t", "н": "h", "в": "b", "ԛ": "q", "ԝ": "w", "ɑ": "a",
    "ı": "i", "ɩ": "i", "ɪ": "i", "ʀ": "r",
}  # fmt: skip
# text: those letters, and the braille blank, which passes for a space
_TEXT_LOOKALIKES = str.maketrans({**_LOOKALIKE_LETTERS, "\u2800": " "})
# names: those letters too, but where an identifier must be told apart, i and l meet (``read_fiIe``,
# Cyrillic U+0456), and so do the digits and the bar that pass for letters
_HOMOGLYPHS = str.maketrans(
    {k: "l" if v == "i" else v for k, v in _LOOKALIKE_LETTERS.items()}
    | {"ǀ": "l", "0": "o", "1": "l", "i": "l", "|": "l"}
)
#: Scripts a name may mix without being reported: Japanese (Han, Hiragana, Katakana), Chinese
#: (Han, Bopomofo), Korean (Han, Hangul), each with Latin (Unicode's UTS #39 "highly
#: restrictive" level). A script is the first word of a letter's Unicode name.
_SCRIPT_SETS = (
    frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA"}),
    frozenset({"LATIN", "CJK", "BOPOMOFO"}),
    frozenset({"LATIN", "CJK", "HANGUL"}),
)


@dataclass(frozen=True)
class Finding:
    """One reason to distrust a tool definition."""

    tool: str
    field: str
    kind: str
    """``instruction`` | ``sensitive_path`` | ``hidden_unicode`` (hidden characters in text, hidden or
    combining ones in a name) | ``mixed_script_name`` | ``shadowing``"""
    detail: str


def _texts(tool: Tool) -> Iterator[tuple[str, str]]:
    yield "description", tool.description
    yield "search_text", tool.search_text
    for example in tool.examples:
        yield "examples", example
    yield from _strings("parameters", tool.parameters)
    if tool.annotations is not None:  # sent with the tool in MCP output (``title`` and so on)
        yield from _strings("annotations", tool.annotations)
    if tool.title is not None:  # MCP output too
        yield "title", tool.title
    if tool.output_schema is not None:
        yield from _strings("output_schema", tool.output_schema)


def _strings(field: str, value: Any) -> Iterator[tuple[str, str]]:
    """Every string in ``value`` (keys too), at any depth: ``value`` is a JSON copy, so it has no
    cycles."""
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            yield field, node


def _is_hidden(ch: str) -> bool:
    category = unicodedata.category(ch)
    return ch in _IGNORABLE or category in ("Cf", "Co", "Cs") or (category == "Cc" and ch not in _VISIBLE_CONTROLS)


def _emoji_part(ch: str) -> bool:
    """A character an emoji sequence is made of: a symbol (emoji, skin tones) or one of the few
    emoji that are punctuation or letters."""
    return unicodedata.category(ch) in ("So", "Sm", "Sk") or ch in _EMOJI_NOT_SYMBOLS


def _in_emoji(text: str, i: int) -> bool:
    """True when ``text[i]`` does its job in an emoji: a single presentation selector after an
    emoji (or after a keycap's base before U+20E3), or a joiner between two parts of one."""
    ch, before, after = text[i], text[i - 1 : i], text[i + 1 : i + 2]
    if ch in _PRESENTATION and before:
        return _emoji_part(before) or (before in "0123456789#*" and after == _KEYCAP)
    if ch == _ZWJ and before and after:
        return (_emoji_part(before) or before == _PRESENTATION[1]) and _emoji_part(after)
    return False


def _describe(text: str, i: int) -> str:
    run = next((j for j in range(i, len(text)) if not _is_hidden(text[j])), len(text)) - i
    ch = text[i]
    more = f" and {run - 1} more hidden characters in a row" if run > 1 else ""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}{more}"


def _hidden(text: str) -> str | None:
    if text.isascii():  # the common case: only control characters can hide there
        m = _ASCII_HIDDEN.search(text)
        return None if m is None else _describe(text, m.start())
    for i, ch in enumerate(text):
        if _is_hidden(ch) and not _in_emoji(text, i):
            return _describe(text, i)
    return None


def _hidden_in_name(name: str) -> str | None:
    if name.isascii():  # no ASCII character is a mark: only control characters can hide there
        m = _ASCII_HIDDEN.search(name)
        return None if m is None else f"U+{ord(m.group()):04X} {unicodedata.name(m.group(), 'unnamed')}"
    for ch in name:
        if _is_hidden(ch) or unicodedata.category(ch).startswith("M"):
            return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}"
    return None


def skeleton(name: str) -> str:
    """A name reduced so that look-alikes meet: case folded, compatibility-decomposed (NFKD) with
    combining marks and default-ignorable characters dropped, homoglyphs and separators."""
    if name.isascii():  # NFKD changes no ASCII, and ASCII has no mark or ignorable character
        bare = name.lower()
    else:
        decomposed = unicodedata.normalize("NFKD", name.casefold())
        bare = "".join(c for c in decomposed if c not in _IGNORABLE and unicodedata.category(c) != "Mn")
    folded = bare.translate(_HOMOGLYPHS)
    return re.sub(r"[\s_\-.:/]+", "", folded.replace("rn", "m").replace("vv", "w"))


def _scripts(name: str) -> set[str]:
    if name.isascii():  # every ASCII letter is LATIN
        return {"LATIN"} if any(c.isalpha() for c in name) else set()
    return {unicodedata.name(c, "?").split()[0] for c in name if c.isalpha()}


def _mixed(scripts: set[str]) -> bool:
    return len(scripts) > 1 and not any(scripts <= allowed for allowed in _SCRIPT_SETS)


def _text_findings(text: str) -> list[tuple[str, str]]:
    """``(kind, detail)`` of what one text of a definition hides or asks for. Text that is not
    ASCII is also read with compatibility forms (fullwidth, mathematical letters) and look-alike
    letters folded (a Cyrillic ``о`` in "ignоre"), the detail then said as it reads folded."""
    found = []
    hidden = _hidden(text)
    if hidden:
        found.append(("hidden_unicode", hidden))
    plain = text.isascii()
    folded = text.lower() if plain else text  # the same length: spans map back to ``text``
    readings = [(text, folded, "")]
    if not plain:
        disguised = unicodedata.normalize("NFKC", text).translate(_TEXT_LOOKALIKES)
        if disguised != text:
            readings.append((disguised, disguised, " (look-alike letters folded)"))
    for kind, patterns in (
        ("instruction", _INSTRUCTION_ASCII if plain else _INSTRUCTION),
        ("sensitive_path", _SENSITIVE_ASCII if plain else _SENSITIVE),
    ):
        for shown, read, note in readings:
            m = next((m for p in patterns if (m := p.search(read))), None)
            if m:
                span = shown[m.start() : m.end()]
                found.append((kind, (span if kind == "instruction" else span.strip())[:80] + note))
                break
    return found


# What each tool's own definition shows (everything but look-alike names, which depend on the
# other tools), by Tool object: a gateway builds a new index of mostly the same Tool objects at
# every change upstream (18k AWS tools: 2.5 s a scan, 0.2 s once remembered). By identity, not
# equality: equal tools may list a schema's keys in another order, and so their findings. With
# the hash of the texts read (each string's hash is cached in it, so this costs a walk of the
# definition, not a read of its text): a schema changed in place is read again. An entry goes
# when its tool does.
_OWN: dict[int, tuple[weakref.ref[Tool], int, tuple[Finding, ...]]] = {}
_OWN_LOCK = threading.RLock()  # a tool freed while it is held runs _forget in the same thread


def _remembered(tool: Tool, flagged: dict[str, list[tuple[str, str]]]) -> tuple[Finding, ...]:
    key, texts = id(tool), tuple(_texts(tool))
    digest = hash((tool.name, texts))
    with _OWN_LOCK:
        got = _OWN.get(key)
    if got is not None and got[0]() is tool and got[1] == digest:
        return got[2]
    own = _own_findings(tool, texts, flagged)
    with _OWN_LOCK:
        _OWN[key] = (weakref.ref(tool, lambda ref: _forget(key, ref)), digest, own)
    return own


def _forget(key: int, ref: weakref.ref[Tool]) -> None:
    with _OWN_LOCK:
        got = _OWN.get(key)
        if got is not None and got[0] is ref:
            del _OWN[key]


def _own_findings(
    tool: Tool, texts: tuple[tuple[str, str], ...], flagged: dict[str, list[tuple[str, str]]]
) -> tuple[Finding, ...]:
    """The findings of ``tool``'s ``texts`` (:func:`_texts`) and name on their own; ``flagged``:
    texts already read in this scan and their (kind, detail) (catalogs repeat texts)."""
    found: list[Finding] = []
    for field, text in texts:
        of_text = flagged.get(text)
        if of_text is None:
            of_text = flagged[text] = _text_findings(text)
        found.extend(Finding(tool.name, field, kind, detail) for kind, detail in of_text)
    hidden = _hidden_in_name(tool.name)
    if hidden:
        found.append(Finding(tool.name, "name", "hidden_unicode", hidden))
    scripts = _scripts(tool.name)
    if _mixed(scripts):
        found.append(Finding(tool.name, "name", "mixed_script_name", ", ".join(sorted(scripts))))
    return tuple(found)


def scan(tools: Iterable[Tool], *, trusted: Iterable[str] = ()) -> list[Finding]:
    """Findings for ``tools`` in registry order.

    ``trusted`` names tools already accepted (for example, yesterday's catalog): a tool whose name
    reads the same as one of them, or as an earlier tool of ``tools``, once case, separators,
    compatibility forms, accents, invisible characters and look-alike letters are folded
    (``read_fiIe``, ``Read-File``, a Cyrillic ``а``, ``read_file`` + U+FE0F, ``read_filé``), is
    reported as ``shadowing`` on the later tool, and on the earlier one too unless it is trusted
    (either may be the impostor: withholding both serves neither until someone looks). Names
    one edit apart are not reported: real catalogs are full of them (``get_user`` /
    ``get_users``).
    """
    findings: list[Finding] = []
    seen: dict[str, str] = {}  # skeleton -> first name with it
    trusted_list = tool_names("trusted", trusted)  # a lone string is refused, not read letter by letter
    trusted_names = set(trusted_list)
    for name in trusted_list:  # in the order given: the first of two alike trusted names is the one named
        seen.setdefault(skeleton(name), name)
    shadowed: set[str] = set()  # earlier tools already reported as copied
    names: list[str] = []
    flagged: dict[str, list[tuple[str, str]]] = {}  # text -> its (kind, detail): catalogs repeat texts
    for tool in tools:
        if not isinstance(tool, Tool):
            raise InvalidParameterError(f"scan takes toolsift.Tool objects, not {type(tool).__name__}")
        names.append(tool.name)
        findings.extend(_remembered(tool, flagged))
        other = seen.setdefault(skeleton(tool.name), tool.name)
        if other != tool.name and tool.name not in trusted_names:  # two trusted names were both accepted
            findings.append(Finding(tool.name, "name", "shadowing", f"looks like {other!r}"))
            if other not in trusted_names and other not in shadowed:
                # the look-alike may be the one listed first: the earlier tool is reported too, so
                # that withholding never serves an impostor in place of the tool it copies
                shadowed.add(other)
                findings.append(Finding(other, "name", "shadowing", f"looks like {tool.name!r}, listed after it"))
    positions = {t: i for i, t in reversed(list(enumerate(names)))}  # a name's first position
    return sorted(findings, key=lambda f: positions[f.tool])  # registry order (a stable sort)
