"""Check every output path before any work: a run that takes an hour must not end in a
traceback because `--json` points somewhere unwritable (and then skip the `--junit` too).

And when the file system refuses a write later anyway (the disk filled up, a quota, a folder
made read-only or unwritable during the run), say so in one line that names the path: a
`CannotWrite`, raised by every writer of the harness (verify.report.atomic, the journal,
the run-folder lock) in place of the bare OSError, whose message names no file (a failed
`write()` knows only its descriptor) or names a temporary one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Iterator

from verify.usage import UsageError

# The file system refused: full, over quota, no permission, read-only, file too large. Not a
# bug of the harness, and nothing a retry fixes; the user frees space or fixes permissions.
REFUSED_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EFBIG})

# A worker's exit status when the file system refused one of its writes (sysexits' EX_IOERR):
# the only channel that needs no disk, so the parent can stop the run instead of recording the
# case as an error (which `--resume` would then skip).
WORKER_EXIT_CANNOT_WRITE = 74


class CannotWrite(OSError):
    """The file system refused to write `filename`; str() is the one line the user sees.

    An OSError (with the original errno) so that callers catching OSError still do."""

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


def is_refused(exc: BaseException) -> bool:
    """Whether `exc` is the file system refusing a write (see REFUSED_ERRNOS)."""
    return isinstance(exc, CannotWrite) or (isinstance(exc, OSError) and exc.errno in REFUSED_ERRNOS)


def cannot_write(exc: OSError, path: Path | str) -> CannotWrite:
    """`exc` (already one of REFUSED_ERRNOS) as a CannotWrite naming `path`, the file the user asked
    for (not a temporary beside it); a CannotWrite passes through, keeping the path it names."""
    if isinstance(exc, CannotWrite):
        return exc
    return CannotWrite(exc.errno, exc.strerror or os.strerror(exc.errno), str(path))


@contextlib.contextmanager
def writing(path: Path | str) -> Iterator[None]:
    """Inside: an OSError by which the file system refuses becomes a CannotWrite naming `path`."""
    try:
        yield
    except CannotWrite:
        raise
    except OSError as exc:
        if exc.errno in REFUSED_ERRNOS:
            raise cannot_write(exc, path) from exc
        raise


def check_output_file(path: Path, option: str) -> None:
    """`path` can be written as a file: not a folder, in a folder that exists or can be made,
    and in which a file can really be created (probed: /proc, read-only mounts)."""
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder, expected a file name")
    _check_folder(path.parent, option, path)


def check_output_folder(path: Path, option: str) -> None:
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path}: is a file, expected a folder")
    _check_folder(path, option, path)


def _check_folder(folder: Path, option: str, path: Path) -> None:
    """The probe writes a byte and syncs it: creating an empty file needs no free block, so on a
    full disk an empty probe passes and the run then fails at its first real write."""
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise UsageError(f"{option} {path}: {existing} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".verify-probe-", dir=folder)
        try:
            os.write(fd, b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write in {folder} ({exc.strerror or exc})") from None


def run_dir_name(base: Path = Path("verify-out")) -> Path:
    """A run folder's name as `new_run_dir` makes them, not made: for a command that writes there
    only when it finds something (a replay), and should leave no empty folder otherwise."""
    return base / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(2)}"


def new_run_dir(base: Path = Path("verify-out")) -> Path:
    """A run folder no other run shares (run, peer): time to the second, pid, a random suffix;
    created exclusively, so two runs started in the same second (once sharing one) never collide."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    while True:
        run_dir = base / f"{stamp}-{os.getpid()}-{secrets.token_hex(2)}"
        try:
            run_dir.mkdir(parents=True)
            return run_dir
        except FileExistsError:
            continue
