"""The README's quickstart runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_quickstart_runs() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "README has no python block under '## Quickstart'"
    assert len(code.group(1).strip().splitlines()) <= 15
    exec(compile(code.group(1), str(README), "exec"), {})


def test_readme_toolbox_examples_run_after_the_quickstart() -> None:
    text = README.read_text(encoding="utf-8")
    quick = re.search(r"## Quickstart\n\n```python\n(.*?)```", text, re.S)
    section = text.split("## Agent toolbox", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert quick and len(blocks) == 2
    namespace: dict[str, object] = {}
    exec(compile(quick.group(1) + "".join(blocks), str(README), "exec"), namespace)
    assert [t["function"]["name"] for t in namespace["tools"]] == ["search_help", "tool_search", "call_tool"]  # type: ignore[index]


def test_ci_runs_the_readme_test_command() -> None:
    text = README.read_text(encoding="utf-8")
    command = re.search(r"<!-- test-command -->\n```sh\n(.*?)\n```", text, re.S)
    assert command, "README has no marked test command"
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert command.group(1).strip() in ci


def test_readme_gateway_config_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    tomllib = pytest.importorskip("tomllib")
    pytest.importorskip("mcp")

    from toolsift.gateway import parse

    text = README.read_text(encoding="utf-8").split("## MCP gateway", 1)[1]
    block = re.search(r"```toml\n(.*?)```", text, re.S)
    assert block
    monkeypatch.setenv("ALICE_TOKEN", "alice-secret-1")
    monkeypatch.setenv("OPS_TOKEN", "ops-secret-22")
    config = parse(tomllib.loads(block.group(1)), "README")
    assert [s.name for s in config.servers] == ["files", "weather"]
    assert config.caller_for_token("ops-secret-22").admin  # type: ignore[union-attr]


def test_readme_doctor_example_runs_after_the_quickstart() -> None:
    text = README.read_text(encoding="utf-8")
    quick = re.search(r"## Quickstart\n\n```python\n(.*?)```", text, re.S)
    section = text.split("## Doctor", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert quick and len(blocks) == 1
    namespace: dict[str, object] = {}
    exec(compile(quick.group(1) + blocks[0], str(README), "exec"), namespace)
    assert namespace["miss"].fix.endswith("parcel")  # type: ignore[attr-defined]
