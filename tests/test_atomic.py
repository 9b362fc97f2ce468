"""Catalog and index files are replaced whole: concurrent saves, failed saves, file modes and the
temporary files of saves that were killed."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolsift as ts
from toolsift import _atomic, registry

CATALOG_A = ts.Catalog(ts.Tool(f"a{i}", "alpha " * 20) for i in range(1500))
CATALOG_B = ts.Catalog(ts.Tool(f"b{i}", "beta " * 60, permissions=["x"]) for i in range(700))


def _save_catalog(path: Path) -> None:
    ts.Catalog([ts.Tool("one", "One tool")]).save(path)


def _save_index(path: Path) -> None:
    ts.Index([ts.Tool("one", "One tool")]).save(path)


SAVES = pytest.mark.parametrize("save", [_save_catalog, _save_index], ids=["Catalog.save", "Index.save"])


def test_threads_saving_to_one_path_always_leave_one_whole_catalog(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    CATALOG_A.save(path)
    wanted = {CATALOG_A.names, CATALOG_B.names}
    seen: list[tuple[str, ...]] = []
    errors: list[BaseException] = []

    def work(catalog: ts.Catalog) -> None:
        try:
            for _ in range(25):
                catalog.save(path)
                seen.append(ts.Catalog.from_file(path).names)
        except BaseException as e:  # reported below, with the thread's failure
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c,)) for c in (CATALOG_A, CATALOG_B)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(seen) == 50 and set(seen) <= wanted
    assert ts.Catalog.from_file(path).names in wanted
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tools.jsonl"]


@SAVES
@pytest.mark.parametrize("mode", [0o644, 0o604, 0o600])
def test_a_save_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path, save: Callable[[Path], None], mode: int) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"old")
    path.chmod(mode)
    save(path)
    assert stat.S_IMODE(path.stat().st_mode) == mode


@SAVES
def test_a_new_file_gets_the_modes_the_umask_allows(tmp_path: Path, save: Callable[[Path], None]) -> None:
    old = os.umask(0o027)
    try:
        save(tmp_path / "file")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "file").stat().st_mode) == 0o640


@SAVES
def test_a_save_that_fails_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, save: Callable[[Path], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"old")

    def refuse(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        save(path)
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_catalog_save_that_fails_while_writing_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tools.jsonl"
    CATALOG_A.save(path)
    calls = iter(range(10**6))

    def json_form(self: ts.Tool) -> dict[str, object]:
        if next(calls) == 1000:  # well into the file: earlier lines are written out already
            raise RuntimeError("boom")
        return {}

    monkeypatch.setattr(ts.Tool, "_json_form", json_form)
    monkeypatch.setattr(registry, "LINES_STEP", 100)  # lines go out 100 at a time
    with pytest.raises(RuntimeError, match="boom"):
        CATALOG_A.save(path)
    monkeypatch.undo()
    assert ts.Catalog.from_file(path).names == CATALOG_A.names
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tools.jsonl"]


def _leftover(target: Path, age_s: float) -> Path:
    """A temporary file of ``target`` as a killed save leaves it, last written ``age_s`` ago."""
    fd, temp = _atomic.create_temp(target, None)
    os.close(fd)  # closing drops its lock: the process that held it is gone
    then = time.time() - age_s
    os.utime(temp, (then, then))
    return temp


@SAVES
def test_a_save_removes_old_temporary_files_of_its_target_that_no_process_holds(
    tmp_path: Path, save: Callable[[Path], None]
) -> None:
    target, other = tmp_path / "file", tmp_path / "file.other"
    stale = _leftover(target, _atomic.STALE_AFTER_S + 60)
    fresh = _leftover(target, 5)  # may belong to a save still running
    elsewhere = _leftover(other, _atomic.STALE_AFTER_S + 60)  # another target's
    held = _leftover(target, _atomic.STALE_AFTER_S + 60)
    fd = os.open(held, os.O_RDONLY)
    try:
        if _atomic.fcntl is not None:
            _atomic.fcntl.flock(fd, _atomic.fcntl.LOCK_EX)  # a live (if slow) save holds it
        save(target)
    finally:
        os.close(fd)
    assert not stale.exists() and fresh.exists() and elsewhere.exists()
    assert held.exists() == (_atomic.fcntl is not None)
    assert stale.name.startswith(".file.") and stale.name.endswith(_atomic.TEMP_SUFFIX)


@SAVES
def test_a_file_name_near_the_longest_allowed_is_saved_and_errors_name_the_file_asked_for(
    tmp_path: Path, save: Callable[[Path], None]
) -> None:
    """The temporary file's name added 31 bytes to the target's: a valid name of 230 bytes could
    not be saved ("File name too long"), and a missing folder was reported under the temporary
    file's name, which the user never gave."""
    long = tmp_path / ("n" * 240)
    save(long)
    save(long)  # over the first: its temporary files are named after a hash of the name
    assert sorted(p.name for p in tmp_path.iterdir()) == [long.name]
    missing = tmp_path / "no" / "such" / "x.idx"
    with pytest.raises(FileNotFoundError) as e:
        save(missing)
    assert e.value.filename == str(missing)


def test_a_save_through_a_symbolic_link_replaces_the_file_it_names_and_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "versions").mkdir()
    ts.Catalog([ts.Tool("old")]).save(tmp_path / "versions" / "v1.jsonl")
    link = tmp_path / "catalog.jsonl"
    link.symlink_to(Path("versions") / "v1.jsonl")
    ts.Catalog([ts.Tool("new")]).save(link)
    assert link.is_symlink() and ts.Catalog.from_file(tmp_path / "versions" / "v1.jsonl").names == ("new",)
    assert sorted(p.name for p in (tmp_path / "versions").iterdir()) == ["v1.jsonl"]  # no temporary file left
