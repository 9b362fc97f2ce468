"""Atomic file replacement, for catalog files and index files alike.

:func:`write_atomic` writes to a temporary file of its own in the target's directory, flushes and
fsyncs it, renames it over the target (``os.replace``: readers see the old file or the new one,
never a mix, however many threads or processes save at once) and fsyncs the directory, so the
rename survives a crash. A symbolic link is written through: the file it names is replaced and
the link stays. The file keeps the permission bits of the file it replaces; a new file
gets those the umask allows (``0o666 & ~umask``), as ``open()`` would give it. A save that fails
removes its temporary file.

A save killed mid-write cannot remove its temporary file. Such files are named
``.<target name>.<16 hex digits>.toolsift-tmp`` (for a name too long to fit that in a file
name, a hash of it in place of the name), and every save of a target removes those of the
same target that were last written more than :data:`STALE_AFTER_S` ago and that no process holds:
a save holds an exclusive ``flock`` on its temporary file while it writes, so a slow save still
running is never touched (where ``fcntl`` is missing, on Windows, the age alone decides, and the
system refuses to delete a file that is still open).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

#: Age (seconds since its last write) past which an unheld temporary file is a killed save's.
STALE_AFTER_S = 15 * 60.0
TEMP_SUFFIX = ".toolsift-tmp"
_BUFFER = 1 << 20
_NAME_MAX = 255


def write_atomic(path: str | Path, chunks: Iterable[bytes]) -> None:
    """Replaces the file at ``path`` with the concatenated ``chunks``, atomically.

    Args:
        path: The file to write (a symbolic link: the file it names); its directory must exist.
        chunks: The contents, in pieces (a generator is consumed while the file is written).

    Raises:
        OSError: The file cannot be written; the old file, if any, is left as it was. (Only
            when the directory cannot be synced, after the rename, is the new file already in
            place, though a power loss may still undo it.)
    """
    target = Path(path)
    if target.is_symlink():  # written through, as the file it names: the link stays a link
        target = Path(os.path.realpath(target))
    mode = _mode(target)
    remove_stale(target)
    fd, temp = create_temp(target, mode)
    try:
        with os.fdopen(fd, "wb", buffering=_BUFFER) as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    _sync_directory(target.parent)


def create_temp(target: Path, mode: int | None) -> tuple[int, Path]:
    """A new temporary file for ``target``, open for writing and locked: ``(fd, path)``.

    ``mode``: the permission bits it gets, or ``None`` for ``0o666`` less the umask.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temp = target.with_name(f".{_stem(target)}.{secrets.token_hex(8)}{TEMP_SUFFIX}")
        try:
            fd = os.open(temp, flags, 0o600 if mode is not None else 0o666)  # the umask applies here
        except FileExistsError:  # pragma: no cover - 64 random bits
            continue
        except OSError as e:  # named as the file asked for, not our temporary one
            raise type(e)(e.errno, e.strerror, str(target)) from None
        break
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # new, so nobody else holds it
        if mode is not None:
            os.chmod(fd if os.chmod in os.supports_fd else temp, mode)
    except BaseException:
        os.close(fd)
        temp.unlink()
        raise
    return fd, temp


def _stem(target: Path) -> str:
    """What the temporary files of ``target`` are named after: its name, or a hash of a name too
    long for a temporary file's name (``NAME_MAX``, 255 bytes on most systems) to hold it."""
    name = target.name
    if len(os.fsencode(name)) + 18 + len(TEMP_SUFFIX) <= _NAME_MAX:
        return name
    return "~" + hashlib.sha256(os.fsencode(name)).hexdigest()[:32]


def remove_stale(target: Path) -> None:
    """Removes the temporary files of ``target`` that killed saves left (see the module notes)."""
    pattern = re.compile(re.escape(f".{_stem(target)}.") + "[0-9a-f]{16}" + re.escape(TEMP_SUFFIX))
    now = time.time()
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        with contextlib.suppress(OSError):  # gone already, or not ours to remove: leave it
            if entry.is_file(follow_symlinks=False) and now - entry.stat().st_mtime > STALE_AFTER_S:
                _remove_unheld(Path(entry.path))


def _remove_unheld(path: Path) -> None:
    if fcntl is None:  # pragma: no cover - Windows
        path.unlink()
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: a save still holds it
        path.unlink()
    finally:
        os.close(fd)


def _mode(target: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return None


def _sync_directory(folder: Path) -> None:
    if os.name == "nt":  # pragma: no cover - a directory cannot be opened there
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:  # a file system that cannot sync directories
            raise
    finally:
        os.close(fd)
