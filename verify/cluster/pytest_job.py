"""A pytest process as a launcher worker (`python -m verify.cluster.pytest_job ARGS`): the fuzz
campaign's cells and peer's modes, here or on a cluster node.

Why not `verify.launcher.launch_command`: a command job carries its whole argv inside its job
description, inline, and a node re-spells the worker's arguments one by one and the `.json`
files it was sent (verify.cluster.shipping), never a path inside an inline description. So on a
node a command job's pytest would be handed the harness's own paths (its campaign file, its report
and JUnit files), which exist only on the harness's machine (a loopback cluster shares them, which
hid it). Here each pytest argument is a worker argument of its own, re-spelled on the node for the
job's folder there; everything else is the launcher's: own process group, killed with its parent
(`die_with_parent`, called first), timeout, memory limit, pinned hash seed.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Sequence

from verify.launcher import DEFAULT_MEMORY_LIMIT, JobFiles, die_with_parent, launch


def launch_pytest(args: Sequence[str | Path], *, log_path: Path, files: JobFiles, hash_seed: int | str | None = None,
                  timeout: float | None = None, cancel: threading.Event | None = None,
                  memory_limit: int | None = DEFAULT_MEMORY_LIMIT, cwd: Path | None = None) -> int:
    """`python -m pytest *args` as a worker (verify.launcher.launch: same guarantees and exceptions),
    on the cluster if one is in use; its exit status. `hash_seed`: its PYTHONHASHSEED (None: ours)."""
    env = {} if hash_seed is None else {"PYTHONHASHSEED": str(hash_seed)}
    return launch(__name__, list(map(str, args)), log_path=log_path, env=env, timeout=timeout, cancel=cancel,
                  memory_limit=memory_limit, cwd=cwd, files=files)


def main(args: list[str]) -> int:
    die_with_parent()
    import pytest

    return int(pytest.main(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
