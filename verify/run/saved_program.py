"""The quantized program of a case, saved once by the pinned worker and loaded by every worker.

Why: the null check and the recheck must lower the *same* program as the pinned run, so that
only the hash seed differs. Rebuilding it in each worker made a factory's own randomness look
like stock nondeterminism.

Why every worker, the pinned one included, lowers the *loaded* copy: measured on
tests/models/tiny.py (tosa-int), a stock lowering of the in-memory program and one of its
torch.export.save/load round trip differ in meta["custom"] (the quantizer's ArmAnnotationInfo
comes back as a plain dict; `_torchdynamo_disable*` keys depend on the process's history),
while the first load in a fresh process and the first load after exporting in the pinned
worker lower byte for byte alike (tests/test_cli.py's stock-vs-stock run keeps that true).
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import torch

PROGRAM_NAME = "program.pt2"


def save_program(program, path: Path) -> None:
    """Save atomically: a waiting worker sees no file or the whole file. Serialized in memory,
    then written by verify.report.atomic: torch.export.save to a path name wrote a truncated
    program on a full disk without an error (and it was renamed into place for the other
    workers to load), and to a file that fails, its writer aborts the process (SIGABRT) when
    it is destroyed, so the worker could not say that the disk was full."""
    from verify.report.atomic import write_bytes

    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    write_bytes(path, buffer.getbuffer())


def load_program(path: Path):
    # The quantized ops (quantized_decomposed.*) must be registered before deserializing.
    import executorch.backends.arm.quantizer  # noqa: F401
    import torchao.quantization.pt2e.quantize_pt2e  # noqa: F401

    return torch.export.load(path)


def wait_for_program(path: Path, poll: float = 0.1) -> None:
    """Block until the pinned worker has saved the program (the parent kills us if it fails)."""
    while not path.exists():
        time.sleep(poll)
