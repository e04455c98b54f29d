"""Atomic writes: a reader (another run, a CI step, `verify report --from`) sees the old file or
the new one, never half of one. Write to a temporary file beside the target, fsync, rename.

The temporary file is created with mode 0666 and the process's umask applies (as for any file
the user's tools create): tempfile.mkstemp's fixed 0600 made every report private. When the
file system refuses (full, no permission, read-only) the temporary file is removed and a
verify.usage.output_paths.CannotWrite names the target, not the temporary.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import IO, Iterator

from verify.usage.output_paths import writing


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new, exclusively created file beside `path` (same file system: the rename is atomic)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


@contextlib.contextmanager
def atomic_output(path: Path, mode: str = "w") -> Iterator[IO]:
    """Yield a file to write; on success it replaces `path` in one rename, on failure it vanishes."""
    path = Path(path)
    temporary = None
    with writing(path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = _create_temporary(path)
            with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        except BaseException:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            raise


def write_text(path: Path, text: str) -> None:
    with atomic_output(path) as f:
        f.write(text)


def write_bytes(path: Path, data: bytes) -> None:
    with atomic_output(path, "wb") as f:
        f.write(data)
