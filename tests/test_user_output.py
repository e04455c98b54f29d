"""The user's output is the user's own (issue 47): a script that lowers a model prints the same
stdout under `python SCRIPT`, `python -m fastpass run SCRIPT` and `python -m verify crosscheck
SCRIPT`, and verify's logging configures its own loggers, never the root logger (executorch's
INFO lines stay as quiet as under plain python).

Why it broke: the TOSA reference model, which crosscheck runs on each delegate, prints "WARNING:
Different TOSA spec..." on C-level stdout; and verify set the root logger to INFO."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from verify.report import verbosity

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "scripts" / "print_and_lower.py"


def python(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def test_a_lowering_script_prints_the_same_stdout_plain_with_fastpass_and_crosschecked(tmp_path):
    plain = python(str(SCRIPT), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert plain.stdout.startswith("before the lowering\ndelegates 1 program "), plain.stdout
    fast = python("-m", "fastpass", "run", str(SCRIPT), cwd=tmp_path)
    checked = python("-m", "verify", "crosscheck", "--reproducers", str(tmp_path / "r"), str(SCRIPT), cwd=tmp_path)
    assert fast.returncode == 0 and checked.returncode == 0, (fast.stderr[-2000:], checked.stderr[-2000:])
    assert fast.stdout == plain.stdout
    assert checked.stdout == plain.stdout
    assert "identical: 1" in checked.stderr
    # executorch's INFO logs are not shown under plain python, nor under crosscheck
    assert "Partitioning for TOSABackend" not in plain.stderr
    assert "Partitioning for TOSABackend" not in checked.stderr, checked.stderr[-3000:]


def test_configure_leaves_the_root_logger_alone(capsys):
    root = logging.getLogger()
    before = (root.level, list(root.handlers))
    try:
        verbosity.configure(logging.DEBUG)
        assert (root.level, list(root.handlers)) == before
        logging.getLogger("verify.some.module").info("shown: verify's own")
        logging.getLogger("fastpass._patches").debug("shown: fastpass's own")
        logging.getLogger("executorch.backends.arm").info("not shown: a third party's")
        verbosity.configure(logging.WARNING)
        logging.getLogger("verify.some.module").info("not shown: quiet")
    finally:
        verbosity.reset()
    err = capsys.readouterr().err
    assert "shown: verify's own" in err and "shown: fastpass's own" in err
    assert "not shown" not in err, err
    assert logging.getLogger("verify").handlers == [] and logging.getLogger("verify").level == logging.NOTSET


def test_crosschecks_lines_appear_once_whatever_handlers_the_root_logger_has(tmp_path):
    """Issue 47: under `verify crosscheck`, an Ethos-U script printed crosscheck's result line
    twice: a handler on the root logger (there: installed by the stock lowering; here: the
    script's own `logging.basicConfig()`) printed every record verify's loggers propagated to it.
    verify's configured loggers keep their records to their own handler."""
    script = ROOT / "tests" / "scripts" / "root_handler_and_lower.py"
    checked = python("-m", "verify", "crosscheck", "--reproducers", str(tmp_path / "r"), str(script), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert re.fullmatch(r"root handler installed\ndelegates 1 program [0-9a-f]{16}\n", checked.stdout), checked.stdout
    results = [line for line in checked.stderr.splitlines() if f"crosscheck {script.name}: " in line]
    assert len(results) == 1 and ": identical (" in results[0], checked.stderr[-3000:]
    assert "verify.crosscheck" not in checked.stderr, checked.stderr[-3000:]  # no line came through basicConfig's
    assert "identical: 1" in checked.stderr


def test_configured_loggers_do_not_propagate_to_the_root_until_reset():
    root = logging.getLogger()
    seen = []

    class Remember(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    handler = Remember()
    root.addHandler(handler)
    try:
        verbosity.configure(logging.INFO)
        logging.getLogger("verify.crosscheck.session").info("verify's own")
        logging.getLogger("fastpass._patches").warning("fastpass's own")
        assert seen == []
        verbosity.reset()
        logging.getLogger("verify.crosscheck.session").warning("after reset: the root's again")
        assert seen == ["after reset: the root's again"]
    finally:
        root.removeHandler(handler)
        verbosity.reset()
