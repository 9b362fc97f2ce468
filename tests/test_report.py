"""The HTML pages (`toolsift eval --report`, `toolsift doctor --html`) opened in a real headless
Chromium, the distribution's, through Playwright: they render, their charts are there, nothing
is fetched from anywhere and the console stays clean. `.ci/run` installs Chromium; without it
these tests fail rather than skip."""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolsift.cli import main
from toolsift.eval import evaluate, load_bfcl, toolsift_system
from toolsift.eval.report import html_report, token_curve


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright import sync_api
    except ImportError:
        pytest.fail("playwright is not installed: pip install '.[test]'")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("Chromium is not installed: apt-get install chromium (.ci/run does)")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        launched.close()


def _open(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    """The page at ``path``, with the console errors and the requests it made for anything else."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    fetched: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r: Any) -> None:
        if r.request.url == path.as_uri():
            r.continue_()
        else:
            fetched.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, errors, fetched


def test_the_bfcl_evaluation_report_renders_its_charts_offline(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, results = tmp_path / "report.html", tmp_path / "results.json"
    args = ["eval", "--dataset", "bfcl", "--systems", "toolsift", "bm25s", "--json", str(results)]
    assert main([*args, "--report", str(report)]) == 0
    capsys.readouterr()
    page, errors, fetched = _open(browser, report)
    assert errors == [] and fetched == []
    assert page.title() == "toolsift eval: bfcl"
    for chart in ("recall", "ndcg", "tokens"):
        svg = page.locator(f"figure#{chart} svg")
        box = svg.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 150, chart
        assert svg.locator("path").count() > 10, chart  # axes, ticks and the data drawn
    legend = page.locator("figure#recall svg text").all_text_contents()
    assert "toolsift" in legend and "bm25s" in legend  # one curve per system
    assert "simple_python" in page.locator("figure#ndcg svg text").all_text_contents()
    assert "tool_search + call_tool" in page.locator("figure#tokens svg text").all_text_contents()
    misses = json.loads(results.read_text())["results"][0]["misses"]
    assert len(misses) > 0 and page.locator("table").nth(1).locator("tbody tr").count() == min(len(misses), 200)
    assert page.screenshot(full_page=True)[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_report_is_the_same_bytes_for_the_same_results() -> None:
    data = load_bfcl(categories=("simple_python",))
    result = evaluate(toolsift_system(data), data)
    pages = [html_report([result], data, token_curve(data, 2000)) for _ in range(2)]
    assert pages[0] == pages[1]
    assert "<script" not in pages[0] and not re.search(r'(src|href)="(?!#)', pages[0])  # nothing to fetch


@pytest.mark.parametrize("category", ["price $^$ tier", "$5 to $10", r"\frac{1}{2}"])
def test_a_category_name_is_drawn_as_written_not_as_tex(category: str) -> None:
    import dataclasses

    data = load_bfcl(categories=("simple_python", "multiple"))
    data.queries = [dataclasses.replace(q, category=category) if q.category == "multiple" else q for q in data.queries]
    page = html_report([evaluate(toolsift_system(data), data)], data)
    assert f">{html.escape(category, quote=False)}</text>" in page  # the tick label, text as given


def test_the_doctor_page_renders_every_kind_found(browser: Any, tmp_path: Path) -> None:
    page_file = tmp_path / "doctor.html"
    assert main(["doctor", "--dataset", "bfcl", "--limit", "0", "--html", str(page_file)]) == 0
    page, errors, fetched = _open(browser, page_file)
    assert errors == [] and fetched == []
    headings = page.locator("h2").all_text_contents()
    assert [h.split(" (")[0] for h in headings] == [
        "Poisoned or shadowing definitions",
        "Confusable tools",
        "Unreachable tools",
        "Misses",
        "Vague descriptions",
    ]
    assert page.locator("#confusable + table tbody tr").count() > 100
    page.locator("table.counts a", has_text="Vague descriptions").click()  # the counts link to their tables
    assert page.evaluate("location.hash") == "#vague"
