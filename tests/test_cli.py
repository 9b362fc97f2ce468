"""The command line: `toolsift search` on a catalog file and `toolsift demo` on the AWS catalog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolsift as ts
from toolsift.cli import main


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.jsonl"
    ts.Catalog(
        [
            ts.Tool("search_help", "Search the help center articles", core=True),
            ts.Tool("order_status", "Get the shipping status of an order", permissions="orders.read"),
            ts.Tool("issue_refund", "Refund a customer order payment", permissions="billing.refund"),
        ]
    ).save(path)
    return path


def test_renamed_options_still_work_and_name_their_new_spelling(
    catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = ["--budget-tokens", "1000", "--max-tools", "0"]
    assert main(["search", str(catalog_file), "order status", "--caller", "orders.read", *new]) == 0
    want = capsys.readouterr()
    assert (
        main(["search", str(catalog_file), "order status", "--caller", "orders.read", "--budget", "1000", "-k", "0"])
        == 0
    )
    got = capsys.readouterr()
    assert got.out == want.out and want.out.split() == ["search_help"]
    assert "--budget is now --budget-tokens" in got.err and "-k is now --max-tools" in got.err
    assert "is now" not in want.err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["demo", "--repeat", "0"], "argument --repeat: must be >= 1, not 0"),
        (["demo", "--max-tools", "-1"], "argument --max-tools: must be >= 0, not -1"),
        (["demo", "--budget", "-5"], "argument --budget: must be >= 0, not -5"),
        (["doctor", "--dataset", "bfcl", "--limit", "-1"], "argument --limit: must be >= 0, not -1"),
        (["eval", "--dataset", "bfcl", "--budget-tokens", "x"], "argument --budget-tokens: not an integer: 'x'"),
        (["search", "tools.jsonl", "refund", "--groups", "0"], "argument --groups: must be >= 1, not 0"),
        (["doctor", "--dataset", "bfcl", "-k", "0"], "argument -k: must be >= 1, not 0"),
    ],
)
def test_a_count_out_of_range_is_refused_before_any_work(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 2 and says in capsys.readouterr().err


def test_search_prints_the_selection_for_the_caller(catalog_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(catalog_file), "refund my order", "--caller", "orders.read"]) == 0
    assert capsys.readouterr().out.split() == ["search_help", "order_status"]
    assert (
        main(["search", str(catalog_file), "refund my order", "--caller", "billing.refund", "--format", "anthropic"])
        == 0
    )
    assert [t["name"] for t in json.loads(capsys.readouterr().out)] == ["search_help", "issue_refund"]


def test_search_reports_a_bad_catalog_as_an_error_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"name": "a"}, {"name": "a"}]')
    run = subprocess.run([sys.executable, "-m", "toolsift", "search", str(bad), "x"], capture_output=True, text=True)
    assert run.returncode == 2
    assert "duplicate name" in run.stderr and "Traceback" not in run.stderr


def test_a_catalog_given_as_a_pipe_is_refused_not_read_without_its_first_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command read the first bytes to tell an index file from a catalog, and the loader then
    read what was left of the pipe: a catalog of 200 tools loaded 136, and the command succeeded."""
    fifo = tmp_path / "tools.fifo"
    os.mkfifo(fifo)
    assert main(["search", str(fifo), "weather"]) == 2
    assert "a pipe, which cannot be read twice" in capsys.readouterr().err


def test_demo_indexes_the_aws_catalog_and_selects_for_a_request(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("botocore")
    assert main(["demo", "--repeat", "1", "invoke a lambda function"]) == 0
    out = capsys.readouterr().out
    assert "AWS operations" in out and "lambda__Invoke" in out


def test_version_names_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"toolsift {version('toolsift')}"


def test_verbose_logs_what_takes_time_to_stderr(catalog_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "index.tsi"
    command = [sys.executable, "-m", "toolsift", "index", str(catalog_file), "-o", str(out)]
    quiet = subprocess.run(command, capture_output=True, text=True, check=True)
    loud = subprocess.run([*command[:3], "--verbose", *command[3:]], capture_output=True, text=True, check=True)
    assert "toolsift: indexed" not in quiet.stderr
    assert "toolsift: indexed" in loud.stderr and "toolsift: saved" in loud.stderr
    after = subprocess.run([*command, "-v"], capture_output=True, text=True, check=True)  # after the command too
    assert "toolsift: indexed" in after.stderr


def test_a_saved_index_is_searched_like_its_catalog(
    catalog_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "tools.tsidx"
    assert main(["index", str(catalog_file), "-o", str(saved)]) == 0
    assert "3 tools" in capsys.readouterr().err
    for source in (catalog_file, saved):
        assert main(["search", str(source), "refund my order", "--caller", "orders.read", "--format", "mcp"]) == 0
        assert [t["name"] for t in json.loads(capsys.readouterr().out)] == ["search_help", "order_status"]
    # a damaged index is an error, not a catalog parse or a traceback
    data = bytearray(saved.read_bytes())
    data[-3] ^= 0xFF
    saved.write_bytes(bytes(data))
    assert main(["search", str(saved), "refund"]) == 2
    assert "the file is corrupted" in capsys.readouterr().err


def test_search_within_groups_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tools.jsonl"
    ts.Catalog(
        [
            ts.Tool("s3__put_object", "Upload an object to a bucket"),
            ts.Tool("gcs__upload_object", "Upload an object to a bucket"),
        ]
    ).save(path)
    assert main(["search", str(path), "upload an object", "--group", "s3"]) == 0
    assert capsys.readouterr().out.split() == ["s3__put_object"]
    assert main(["search", str(path), "upload an object", "--groups", "1"]) == 0
    assert capsys.readouterr().out.split() == ["gcs__upload_object"]


def test_eval_reads_a_saved_index(catalog_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "tools.tsidx"
    assert main(["index", str(catalog_file), "-o", str(saved)]) == 0
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "1", "query": "where is my order", "relevant": ["order_status"]}\n')
    assert main(["eval", "--tools", str(saved), "--queries", str(queries), "--systems", "toolsift"]) == 0
    assert "toolsift" in capsys.readouterr().out


def test_an_index_that_cannot_be_written_is_an_error_naming_the_target(
    catalog_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for target in (tmp_path / "missing" / "idx.tsx", tmp_path):  # no such folder; a folder
        assert main(["index", str(catalog_file), "-o", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"toolsift: error: cannot write {target}: ") and "Traceback" not in err
