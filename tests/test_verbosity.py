"""-v/-q: diagnostics and progress go through logging, results and usage errors stay printed."""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys

import pytest

from verify.report import verbosity


def _levels(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    verbosity.add_arguments(parser)
    sub = parser.add_subparsers(dest="command")
    verbosity.add_arguments(sub.add_parser("gate"))
    return verbosity.level(parser.parse_args(list(argv)))


def test_level_counts_v_and_q_before_or_after_the_command():
    assert _levels("gate") == logging.INFO
    assert _levels("-v", "gate") == logging.DEBUG
    assert _levels("gate", "-v") == logging.DEBUG  # the sub-parser does not reset the count
    assert _levels("gate", "-q") == logging.WARNING
    with pytest.raises(SystemExit):
        _levels("gate", "-v", "-q")


@pytest.mark.parametrize("argv, shown", [((), True), (("-q",), False)])
def test_gate_progress_is_shown_unless_quiet(capsys, argv, shown):
    from verify.gate.run import _log

    verbosity.configure(_levels(*argv, "gate"))
    try:
        _log("gate: stage edge-fp: 3 graph(s)")
    finally:
        verbosity.configure(logging.WARNING)
    assert ("gate: stage edge-fp: 3 graph(s)" in capsys.readouterr().err) is shown


@pytest.mark.parametrize("argv", [["-q", "gate", "--examples", "0"], ["gate", "-v", "--examples", "0"]])
def test_usage_errors_are_printed_at_any_verbosity(argv):
    done = subprocess.run([sys.executable, "-m", "verify", *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "verify gate: --examples must be at least 1" in done.stderr, done.stderr
