"""Atomic writes: a reader (another run, a CI step, `verify report --from`) sees the old file or
the new one, never half of one. Write to a temporary file beside the target, fsync, rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator


@contextlib.contextmanager
def atomic_output(path: Path, mode: str = "w") -> Iterator[IO]:
    """Yield a file to write; on success it replaces `path` in one rename, on failure it vanishes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text(path: Path, text: str) -> None:
    with atomic_output(path) as f:
        f.write(text)


def write_bytes(path: Path, data: bytes) -> None:
    with atomic_output(path, "wb") as f:
        f.write(data)
