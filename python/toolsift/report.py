"""Self-contained HTML pages: the shell, tables and charts of the doctor's and the evaluation's pages.

A page carries its styles inline and its charts as inline SVG drawn by matplotlib
(``pip install 'toolsift[report]'``), so it opens offline, fetches nothing and runs no script.
The same input gives the same bytes: SVG ids come from a fixed salt and are prefixed per chart,
and no date is written.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .errors import MissingExtraError

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #1d2433; background: #fff; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
p.lead { color: #4a5568; margin-top: 0; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: 13px; table-layout: fixed; }
th, td { border-bottom: 1px solid #e2e8f0; padding: .35rem .5rem; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
th { background: #f7fafc; font-weight: 600; } .num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f1f5f9; padding: 0 .2rem;
       display: inline-block; margin: 0 .2rem .15rem 0; }
figure { margin: 1rem 0; } figure svg { max-width: 100%; height: auto; }
figcaption { color: #4a5568; font-size: 13px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(30rem, 1fr)); gap: 1rem; }
.counts td { font-size: 15px; }
"""


def escape(value: object) -> str:
    """Text for an HTML element or attribute."""
    return html.escape(str(value), quote=True)


def page(title: str, lead: str, body: Iterable[str]) -> str:
    """A whole HTML document: ``title`` as its heading, a ``lead`` line, then ``body``'s parts."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f'<h1>{escape(title)}</h1><p class="lead">{escape(lead)}</p>',
        *body,
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def table(head: Sequence[str], rows: Iterable[Sequence[object]], *, numeric: Sequence[int] = (), cls: str = "") -> str:
    """An HTML table; the cells of the ``numeric`` columns are right-aligned. Cells are escaped,
    except :class:`Markup` ones."""
    out = [f'<table class="{cls}">' if cls else "<table>", "<thead><tr>"]
    out += [f"<th{' class=num' if i in numeric else ''}>{escape(h)}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = (
            f"<td{' class=num' if i in numeric else ''}>{c if isinstance(c, Markup) else escape(c)}</td>"
            for i, c in enumerate(row)
        )
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


class Markup(str):
    """HTML that :func:`table` inserts as is (already escaped)."""


def codes(names: Iterable[str]) -> Markup:
    """Tool names as ``<code>`` elements."""
    return Markup(" ".join(f"<code>{escape(n)}</code>" for n in names))


def new_figure(width: float, height: float) -> Any:
    """A matplotlib ``Figure`` (no pyplot, no global figure state), or a
    :class:`~toolsift.errors.MissingExtraError` saying how to install matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError("the HTML report needs matplotlib: pip install 'toolsift[report]'") from None
    return Figure(figsize=(width, height), layout="constrained")


#: matplotlib settings of every chart: labels drawn as given (a ``$`` in a category or tool name
#: is not TeX math, which could fail to parse), SVG ids salted so a page is reproducible, text
#: kept as text.
CHART_STYLE: dict[str, Any] = {
    "text.parse_math": False,
    "svg.hashsalt": "toolsift",
    "svg.fonttype": "none",
    "font.size": 10,
}


def chart_style() -> Any:
    """A context in which charts are built and drawn with :data:`CHART_STYLE` (labels read the settings
    when they are made, so the charts' code runs inside it too)."""
    try:
        from matplotlib import rc_context
    except ImportError:
        raise MissingExtraError("the HTML report needs matplotlib: pip install 'toolsift[report]'") from None
    return rc_context(CHART_STYLE)  # type: ignore[arg-type]


def svg(fig: Any, key: str) -> str:
    """``fig`` as an inline ``<svg>`` element whose ids all start with ``key`` (unique per page)."""
    buffer = io.StringIO()
    with chart_style():
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)  # names matplotlib's version
    text = re.sub(r'id="([^"]+)"', rf'id="{key}-\1"', text)
    return re.sub(r'(url\(#|href="#)([^")]+)', rf"\1{key}-\2", text)


def figure(fig: Any, key: str, caption: str) -> str:
    """A ``<figure>`` with the chart and its caption."""
    return f'<figure id="{escape(key)}">{svg(fig, key)}<figcaption>{escape(caption)}</figcaption></figure>'
