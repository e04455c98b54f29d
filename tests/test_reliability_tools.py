"""The tools around the harness never lose a result either (issue 32, defects 7-13): the
bench and verify.peer stopped by a signal, peer killed outright, two peers in one second, the
hash seed of peer's modes, the pytest plugin's output paths and lost xdist workers, replay of
files that are not (or are malformed) reproducers, and the launcher's memory limit.

Each test reproduces one defect first; the numbers are the issue's. Nothing here lowers a
model: the suites are tiny test files of our own, and the bench's lowerings are scripted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def alive(pid: int) -> bool:
    """Running (a zombie, which holds nothing, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.1)


# ---- the launcher's memory limit ------------------------------------------------------------

GROWS = ("import subprocess, sys, time\n"
         # a child of the worker holds the memory: the limit is on the whole group
         "child = subprocess.Popen([sys.executable, '-c', 'import time; b = bytearray(400 << 20); b[::4096] = b\"x\" * len(b[::4096]); time.sleep(600)'])\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(600)\n")


def test_a_worker_group_over_the_memory_limit_is_killed_and_the_limit_named(tmp_path):
    from verify.launcher import MIB, WorkerMemoryExceeded, launch_command

    log = tmp_path / "log"
    started = time.monotonic()
    with pytest.raises(WorkerMemoryExceeded) as caught:
        launch_command([sys.executable, "-c", GROWS], log_path=log, timeout=120, memory_limit=200 * MIB)
    assert time.monotonic() - started < 60, "only the timeout stopped it"
    assert caught.value.limit == 200 * MIB and caught.value.resident > 200 * MIB
    assert "memory limit" in str(caught.value) and "over the limit of 200 MiB" in str(caught.value)
    child = int(log.read_text().split()[0])
    wait_for(lambda: not alive(child), 5, "the child holding the memory killed")
    assert "memory limit exceeded" in log.read_text().splitlines()[-1]


def test_the_memory_limit_is_on_by_default_and_spares_a_small_worker(tmp_path):
    from verify.launcher import DEFAULT_MEMORY_LIMIT, GIB, launch, launch_command

    assert 8 * GIB <= DEFAULT_MEMORY_LIMIT <= 64 * GIB
    assert launch.__kwdefaults__["memory_limit"] == DEFAULT_MEMORY_LIMIT
    assert launch_command.__kwdefaults__["memory_limit"] == DEFAULT_MEMORY_LIMIT
    code = launch_command([sys.executable, "-c", "b = bytearray(50 << 20); b[::4096] = b'x' * len(b[::4096])"],
                          log_path=tmp_path / "log", timeout=60)
    assert code == 0


def test_launch_command_runs_any_command_and_its_group_dies_with_the_launcher(tmp_path):
    """The command's whole group (a child it started too) goes when the process that launched it
    is killed outright: what verify.peer's pytest processes rely on."""
    script = tmp_path / "holder.py"
    script.write_text(
        "import sys, threading\n"
        "from pathlib import Path\n"
        "from verify.launcher import launch_command\n"
        "threading.Thread(target=launch_command, daemon=True, kwargs=dict(command=[sys.executable, '-c', "
        "'import os, subprocess, sys, time; c = subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(600)\"]); "
        "print(os.getpid(), c.pid, flush=True); time.sleep(600)'], log_path=Path(sys.argv[1]), timeout=None)).start()\n"
        "threading.Event().wait()\n")
    log = tmp_path / "log"
    holder = subprocess.Popen([sys.executable, str(script), str(log)], env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        wait_for(lambda: log.exists() and len(log.read_text().split()) == 2, 60, "the command started")
        command, child = map(int, log.read_text().split())
        assert os.getpgid(command) == os.getpgid(child) != os.getpgid(holder.pid)
        holder.kill()
        holder.wait()
        wait_for(lambda: not alive(command) and not alive(child), 5, "the command and its child gone")
    finally:
        holder.kill()
