"""The pytest plugin (`--fastpass`, `--fastpass=crosscheck`) on a slice of executorch's own Arm
pass tests, the divergence it exists to catch (an injected unsound annotation fails the test
that produced it), its usage errors, and verify.peer's test-by-test comparison."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verify.commands.peer import main as peer_main
from verify.peer.campaign import ModeRun, summarize
from verify.peer.suites import arm_test_root
from verify.report.peer import mismatches

# Small and fast: ConvertToClampPass through _transform (pass calls), and to_edge lowerings
# whose MemoryFormatOpsPass rewrites a dtype cast (the injected annotation's target).
SLICE = ["passes/test_convert_to_clamp.py", "passes/test_cast_int64_pass.py"]
MEMORY_FORMAT_PASS = "executorch.exir.passes.memory_format_ops_pass.MemoryFormatOpsPass"


def run_pytest(args: list[str], cwd: Path, extra_path: Path | None = None) -> subprocess.CompletedProcess:
    import os

    env = dict(os.environ, PYTHONHASHSEED="0")
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), env.get("PYTHONPATH")]))
    ini = cwd / "pytest.ini"
    ini.write_text("[pytest]\n")  # not this project's ini: the suite runs under its own conftest
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(ini), "-p", "no:cacheprovider", "-q",
                           "-p", "no:randomly", *args], cwd=cwd, capture_output=True, text=True, timeout=1500)


def slice_paths() -> list[str]:
    root = arm_test_root()
    return [str(root / name) for name in SLICE]


@pytest.mark.slow
def test_slice_of_executorch_pass_tests_crosschecked_with_xdist(tmp_path):
    report = tmp_path / "report.json"
    done = run_pytest(["-n", "2", "--fastpass=crosscheck", "--fastpass-json", str(report),
                       "--fastpass-reproducers", str(tmp_path / "repro"), "--rootdir", str(arm_test_root()),
                       *slice_paths()], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    data = json.loads(report.read_text())
    assert data["mode"] == "crosscheck" and data["outcome_counts"] == {"passed": 4}, data["outcome_counts"]
    totals = data["crosscheck"]
    # Every lowering of every test came back from the xdist workers: to_edge per test, and the
    # clamp tests' pass calls.
    assert totals["by_entry_point"].get("to_edge") == 4 and totals["by_entry_point"].get("pass call") == 2, totals
    assert totals["identical"] == totals["crosschecked"] == 6 and totals["divergent"] == 0
    assert totals["stock_seconds"] > 0 and totals["fastpass_seconds"] > 0
    assert "lowerings crosschecked: 6  identical: 6  divergent: 0" in done.stdout
    # what the identical verdicts rest on: the annotations fastpass acted by, each proven
    assert totals["relied_on"] and set(totals["relied_on"].values()) == {"sound"}, totals["relied_on"]
    assert f"relied on {len(totals['relied_on'])} annotations: {len(totals['relied_on'])} sound" in done.stdout


@pytest.mark.slow
def test_injected_unsound_annotation_fails_the_tests_that_lower_through_it(tmp_path):
    """MemoryFormatOpsPass registered copy-sound with no targeted op: fastpass copies the cast the
    pass exists to rewrite. The plugin must report each lowering divergent and fail its test."""
    inject = tmp_path / "inject_unsound_annotation.py"
    inject.write_text(textwrap.dedent(f"""
        from fastpass.annotations import register
        register("{MEMORY_FORMAT_PASS}", [], skip_sound=False, copy_sound=True, why="deliberately wrong (test)")
    """))
    report = tmp_path / "report.json"
    cast_tests = str(arm_test_root() / "passes/test_cast_int64_pass.py")
    # --fastpass-trust all: the registered claim is no proven one, and the default trust would not use it
    done = run_pytest(["-p", "no:xdist", "-p", "inject_unsound_annotation", "--fastpass=crosscheck",
                       "--fastpass-trust", "all", "--fastpass-json", str(report), "--fastpass-reproducers", str(tmp_path / "repro"),
                       "--rootdir", str(arm_test_root()), cast_tests], tmp_path, extra_path=tmp_path)
    assert done.returncode == 1, done.stdout[-3000:]
    data = json.loads(report.read_text())
    totals = data["crosscheck"]
    # Exactly the tests whose lowering diverged fail; the others pass as they do stock.
    diverged = {d["test"] for d in totals["divergences"]}
    failed = {test for test, outcome in data["outcomes"].items() if outcome == "failed"}
    assert failed == diverged and any("non_persistent" in test for test in failed), (data["outcomes"], totals)
    assert set(data["outcomes"].values()) <= {"failed", "passed"}
    for divergence in totals["divergences"]:
        assert divergence["entry_point"] == "to_edge" and divergence["test"] in data["outcomes"]
        assert divergence["first_divergence"]["label"]
        assert Path(divergence["reproducer"]["path"]).is_file()
    assert "DIVERGENT" in done.stdout and "fastpass crosscheck: to_edge" in done.stdout


def test_plugin_is_off_unless_asked_and_refuses_a_bad_mode(tmp_path):
    (tmp_path / "test_trivial.py").write_text("def test_trivial():\n    import sys\n"
                                             "    assert 'fastpass' not in sys.modules\n")
    off = run_pytest(["-p", "no:xdist", "test_trivial.py"], tmp_path)
    assert off.returncode == 0 and "fastpass" not in off.stdout, off.stdout
    bad = run_pytest(["-p", "no:xdist", "--fastpass=bogus", "test_trivial.py"], tmp_path)
    assert bad.returncode == 4 and "--fastpass takes no value, 'on' or 'crosscheck'" in bad.stderr, bad.stderr
    outcomes = run_pytest(["-p", "no:xdist", "--fastpass-json", "r.json", "test_trivial.py"], tmp_path)
    assert outcomes.returncode == 0  # outcomes only: fastpass stays off (the trivial test checks)
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["mode"] == "stock" and data["outcomes"] == {"test_trivial.py::test_trivial": "passed"}


def mode_run(mode: str, outcomes: dict[str, str], divergent: int = 0, nondeterministic: int = 0) -> ModeRun:
    crosscheck = None
    if mode == "crosscheck":
        crosscheck = {"crosschecked": 3, "identical": 3 - divergent - nondeterministic, "divergent": divergent,
                      "unchecked": 0, "nondeterministic": nondeterministic,
                      "by_entry_point": {"to_edge": 3}, "stock_seconds": 1.0, "fastpass_seconds": 0.5,
                      "fastpass_work": {"passes_run": 1, "passes_skipped": 0, "nodes_copied": 0,
                                        "nodes_dispatched": 1},
                      "calls_with_fastpass_work": 0,
                      "divergences": [{"test": "t::a", "entry_point": "to_edge", "failed_checks": ["graph"],
                                       "first_divergence": {"label": "edge/x[1] P"},
                                       "reproducer": {"command": "replay it"}}] * divergent,
                      "nondeterministic_calls": [
                          {"test": "t::b", "entry_point": "to_edge", "failed_checks": ["meta"],
                           "order_recheck": {"differing_checks": ["meta"], "first_divergence": {"label": "edge/x[2] Q"}},
                           "reproducer": {"path": "/r/t_b-0.xcheck"}}] * nondeterministic}
    report = {"outcomes": outcomes, "outcome_counts": {}, "skip_reasons": {"needs FVP": 1}, "crosscheck": crosscheck,
              "records": []}
    return ModeRun(mode, report, 1.0, 0)


def test_peer_fails_on_an_outcome_mismatch_or_a_divergence(capsys):
    same = {"t::a": "passed", "t::b": "skipped", "t::c": "xfailed"}
    assert summarize([mode_run("stock", same), mode_run("fastpass", same), mode_run("crosscheck", same)]) == 0
    changed = dict(same, **{"t::a": "failed"})
    assert mismatches([mode_run("stock", same), mode_run("fastpass", changed)]) == [
        ("t::a", {"stock": "passed", "fastpass": "failed"})]
    missing = {k: v for k, v in same.items() if k != "t::c"}
    assert mismatches([mode_run("stock", same), mode_run("fastpass", missing)]) == [
        ("t::c", {"stock": "xfailed", "fastpass": "not run"})]
    assert summarize([mode_run("stock", same), mode_run("fastpass", changed)]) == 1
    assert summarize([mode_run("stock", same), mode_run("crosscheck", same, divergent=1)]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH t::a: stock passed, fastpass failed" in out and "DIVERGENT t::a" in out
    assert "needs FVP" in out


def test_peer_lists_stock_nondeterminism_without_failing_or_calling_it_identical(capsys):
    same = {"t::a": "passed", "t::b": "passed"}
    assert summarize([mode_run("stock", same), mode_run("crosscheck", same, nondeterministic=1)]) == 0
    out = capsys.readouterr().out
    assert "STOCK NONDETERMINISTIC t::b" in out and "edge/x[2] Q" in out and "/r/t_b-0.xcheck" in out
    assert "identical except 1 that stock itself does not lower deterministically" in out
    # ... and a divergence next to it still fails the run
    assert summarize([mode_run("stock", same), mode_run("crosscheck", same, divergent=1, nondeterministic=1)]) == 1


def test_peer_usage_errors_exit_2(capsys):
    assert peer_main(["no-such-suite"]) == 2
    assert "verify.peer: no 'no-such-suite' under" in capsys.readouterr().err
    assert peer_main(["--modes", "stock,turbo"]) == 2
    assert capsys.readouterr().err.strip() == "verify.peer: unknown modes ['turbo']; modes are stock, fastpass, crosscheck"
