"""The commands that wrap a user's script or a campaign: `python -m fastpass run SCRIPT`,
`python -m verify crosscheck SCRIPT`, `python -m verify fuzz`, `python -m verify peer`.

The script is tests/scripts/lower_tiny.py: plain executorch calls lowering a tiny model to
TOSA-FP, printing a digest of the serialized program and exiting with the status it is given.
(`verify replay` of all three reproducer kinds is tested in tests/test_report.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verify.cli import main as verify_main

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "scripts" / "lower_tiny.py"


def run(*command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=300, cwd=cwd)


def program_line(stdout: str) -> str:
    (line,) = [line for line in stdout.splitlines() if line.startswith("delegates ")]
    return line


def test_fastpass_run_and_verify_crosscheck_keep_the_scripts_output_and_exit_status(tmp_path):
    fast = run("-m", "fastpass", "run", str(SCRIPT), "3", cwd=tmp_path)
    assert fast.returncode == 3, fast.stderr[-2000:]  # the script's own exit status
    stats = [line for line in fast.stderr.splitlines() if line.startswith("fastpass: ")]
    assert len(stats) == 2 and "passes run" in stats[0] and not stats[0].startswith("fastpass: 0 passes run"), stats
    # crosscheck hands the script stock's results: the program fastpass's script serialized is stock's
    report = tmp_path / "crosscheck.json"
    checked = run("-m", "verify", "crosscheck", "--json", str(report), "--reproducers", str(tmp_path / "repro"),
                  str(SCRIPT), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert program_line(checked.stdout) == program_line(fast.stdout) == "delegates 1 program " + \
        program_line(fast.stdout).split()[-1]
    assert "crosscheck: lowerings crosschecked: 1  identical: 1  divergent: 0" in checked.stderr
    data = json.loads(report.read_text())
    assert data["crosscheck"]["identical"] == 1 and data["script_exit_status"] == 0
    assert [r["entry_point"] for r in data["records"]] == ["to_edge_transform_and_lower"]


def test_verify_crosscheck_exits_1_on_a_divergence_and_names_it(tmp_path, capsys):
    from tests.test_crosscheck import clamp_pass, fastpass_only_fault, rename_first_clamp

    with fastpass_only_fault(clamp_pass(), rename_first_clamp):  # relu becomes a clamp: renamed with fastpass only
        code = verify_main(["crosscheck", "--no-fresh-recheck", "--reproducers", str(tmp_path), str(SCRIPT)])
    captured = capsys.readouterr()
    assert code == 1, captured.err[-2000:]
    assert "divergent: 1" in captured.err and "DIVERGENT lower_tiny.py: to_edge_transform_and_lower" in captured.err
    assert list(tmp_path.glob("lower_tiny.py-*"))  # the divergent call's reproducer


def test_script_commands_refuse_a_missing_script(tmp_path, capsys):
    assert verify_main(["crosscheck", str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capsys.readouterr().err
    from fastpass.__main__ import main as fastpass_main

    with pytest.raises(SystemExit) as exited:
        fastpass_main(["run", str(tmp_path / "missing.py")])
    assert exited.value.code == 2


def test_verify_fuzz_help_and_bad_usage(capsys):
    with pytest.raises(SystemExit) as exited:
        verify_main(["fuzz", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert all(option in out for option in ("--targets", "--examples", "--shards", "--continue", "--coverage"))
    assert verify_main(["fuzz", "--targets", "tosa-int,ethos-u56", "--dry-run"]) == 2
    assert verify_main(["fuzz", "--examples", "0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "unknown target 'ethos-u56'" in err and "--examples must be a positive integer" in err


def test_verify_fuzz_runs_a_campaign_through_pytest_xdist(tmp_path):
    coverage = tmp_path / "coverage"
    proc = run("-m", "verify", "fuzz", "--targets", "tosa-int", "--shards", "1", "--examples", "1", "--max-ops", "2",
               "-n", "1", "--coverage", str(coverage), "--reproducers", str(tmp_path / "repro"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    campaign = json.loads((coverage / "campaign.json").read_text())
    assert campaign["targets"] == ["tosa-int"] and campaign["examples"] == 1
    assert "1 passed" in proc.stdout and "pass coverage, tosa-int: 1 graphs" in proc.stdout
    assert list(coverage.glob("coverage-gw0.jsonl"))  # the xdist worker recorded its graph


def test_verify_peer_is_the_peer_command(capsys):
    with pytest.raises(SystemExit) as exited:
        verify_main(["peer", "--help"])
    assert exited.value.code == 0
    assert "--share" in capsys.readouterr().out
    assert verify_main(["peer", "--modes", "nope"]) == 2
    assert "unknown modes ['nope']" in capsys.readouterr().err
