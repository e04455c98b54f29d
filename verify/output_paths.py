"""Check every output path before any work: a run that takes an hour must not end in a
traceback because `--json` points somewhere unwritable (and then skip the `--junit` too)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from verify.usage import UsageError


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
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise UsageError(f"{option} {path}: {existing} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".verify-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write in {folder} ({exc.strerror or exc})") from None
