"""Files sitesync writes for users: checked first, then written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from sitesync.errors import OutputError


def check_output(path: Path) -> None:
    """One line (``OutputError``) when ``path`` cannot be a file we write: before any work."""
    if path.is_dir():
        raise OutputError(f"{path} is a directory: name a file to write, e.g. {path / 'out'}")
    parent = path.parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: directory {parent} is not writable")


@contextlib.contextmanager
def atomic_output(path: Path) -> Iterator[BinaryIO]:
    """A binary stream whose bytes replace ``path`` only once all are written.

    They go to a temporary file in the same directory (same file system), which is then
    renamed over ``path``: a reader, or a crash halfway, never sees half a file, and an
    existing file is kept until its replacement is complete.
    """
    check_output(path)
    try:
        handle, temporary = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
        )
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror}") from exc
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; a new file is not
        os.replace(temporary, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
