"""An interrupted or incomplete gate run is never green.

`verify gate` stopped by SIGINT/SIGTERM, or whose `--max-seconds` runs out before a check
starts, must not read as a pass in CI: every pass whose check did not finish is an `error`
verdict saying why ("not run: stopped by SIGTERM ...", "not started: the --max-seconds budget
was spent ..."), a JUnit <error>, and the JSON says `"ok": false`; the exit status is
128 + the signal (130/143), or 1 for a spent budget, as for `verify run`. Bad usage is exit 2
with one line, before any work.

The signalled runs are real `python -m verify gate` processes on toy passes from
tests/passes/gate_passes.py with one-graph searches; the worker of the second pass hangs
(VERIFY_GATE_WORKER_FAULT, verify/gate/worker.py), so the signal lands while the gate is
demonstrably mid-run: one check finished, one running, one not yet started."""

from __future__ import annotations

import os
import signal
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_gate_workers import ROOT, gate_command, processes_mentioning, report
from tests.waiting import wait_for
from verify.gate.worker import FAULT_VARIABLE
from verify.vocabulary import Feature

FINISHED, RUNNING, NEVER_STARTED = "InsertBeforeRetracePass", "NoRetracePass", "ChangeDtypePass"


def _signal_mid_run(tmp_path: Path, signum: int) -> tuple[subprocess.CompletedProcess, Path]:
    """Start the gate on three passes, -j 1; once the second pass's worker hangs (its injected
    fault is in its event file), send `signum` to the gate. Returns the ended process and --junit."""
    junit = tmp_path / "gate.xml"
    out = tmp_path / "out"
    env = dict(os.environ, **{FAULT_VARIABLE: f"{RUNNING}:hang"})
    proc = subprocess.Popen(gate_command(tmp_path, [FINISHED, RUNNING, NEVER_STARTED], "-j", "1",
                                         "--junit", str(junit), "--json", str(tmp_path / "gate.json")),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        events = out / "workers" / f"001-{RUNNING}.events.jsonl"
        wait_for(lambda: events.exists() and "injected fault" in events.read_text(), 300,
                 f"{RUNNING}'s worker hangs (its injected fault is in its event file)", proc=proc, interval=0.5)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), junit


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_gate_makes_every_unfinished_pass_a_junit_error(tmp_path, signum):
    proc, junit = _signal_mid_run(tmp_path, signum)
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, proc.stderr[-3000:]
    assert f"stopped by {name}" in proc.stderr
    # the JSON: not ok, incomplete, every pass listed in the order given
    document = report(tmp_path / "gate.json")
    assert document["ok"] is False
    assert document["run"]["complete"] is False and document["run"]["stopped_by"] == name
    finished, running, never = document["passes"]
    assert (finished["name"], running["name"], never["name"]) == (FINISHED, RUNNING, NEVER_STARTED)
    # finished before the signal: its own verdict (one graph per mode: sound or unexercised), not an error
    assert finished["verdict"] in ("sound", "unexercised") and finished["unfinished"] is None, finished
    assert finished["examples"] >= 1
    for unfinished in (running, never):
        assert unfinished["verdict"] == "error" and unfinished["unfinished"] == "stopped", unfinished
        assert unfinished["reason"] == f"not run: stopped by {name} before its check finished"
    assert report(tmp_path / "out" / "gate.json") == document  # the run folder's copy says the same
    # the JUnit: the unfinished passes are there, as errors
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("3", "2", "0")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert cases[FINISHED].find("error") is None
    for pass_name in (RUNNING, NEVER_STARTED):
        error = cases[pass_name].find("error")
        assert error is not None and error.get("message") == f"not run: stopped by {name} before its check finished"
    assert not processes_mentioning(str(tmp_path / "out" / "workers")), "a worker outlived the stop"


def test_a_registry_run_whose_budget_is_spent_before_its_stages_start_is_red(tmp_path):
    """--max-seconds spent before any stage search or direct check could start: each pass is an
    `error`, "not started", none of them green (it used to be `unexercised`, which CI passes)."""
    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import run
    from verify.vocabulary import Ending
    from verify.gate.workers import SearchSettings, registry_runner
    from fastpass.annotations import ProofStatus

    sign = "executorch.backends.arm._passes.decompose_sign_pass.DecomposeSignPass"
    direct = "executorch.backends.arm._passes.decompose_gru_pass.DecomposeGruPass"  # no pipeline runs it
    with check.quiet():
        registry = gp.annotated_passes()
    classes = {sign: registry[sign], direct: registry[direct]}
    settings = SearchSettings(3, tmp_path, 0, 2, 15.0, ("sign",), 1)
    real_runner = registry_runner(classes, settings, parallel=1, pass_timeout=600)
    budget = 0.5

    def late_runner(plans, items, stage, deadline):  # the budget ran out before the first job
        assert deadline is not None
        return real_runner(plans, items, stage, deadline - budget)  # as if its 0.5 s had passed: no sleep

    verdicts = {v.qualname: v for v in run.gate_registry(
        classes, 2, ["quantized"], tmp_path, seed=0, max_ops=2, ops=["sign"], direct_examples=3, min_evidence=1,
        top_up=0, max_seconds=budget, runner=late_runner)}
    assert set(verdicts) == {sign, direct}
    for qn, what in ((sign, "its search of stage(s) quantized"), (direct, "its direct run")):
        v = verdicts[qn]
        assert v.verdict is ProofStatus.ERROR and v.verdict.fails and v.unfinished is Ending.NOT_STARTED, v
        assert v.reason.startswith(f"not started: the --max-seconds budget was spent before {what}"), v.reason
        assert v.examples == 0
    assert not list((tmp_path / "workers").glob("*.job.json")), "a job started after the deadline"


@pytest.mark.parametrize("argv, message", [
    (["--ops", "bogus"], "unknown vocabulary op(s) bogus in --ops"),
    (["--ops", ","], "--ops names no op"),
    (["--examples", "0"], "--examples must be at least 1, got 0"),
    (["--min-evidence", "0"], "--min-evidence must be at least 1, got 0"),
    (["--max-seconds", "0"], "--max-seconds must be positive, got 0"),
    (["--max-seconds", "nan"], "--max-seconds must be positive, got nan"),
    (["-j", "0"], "-j must be at least 1, got 0"),
    (["--pass-timeout", "-1"], "--pass-timeout must be positive, got -1"),
    (["--top-up", "-1"], "--top-up must be at least 0, got -1"),
    (["--top-up-seconds", "-5"], "--top-up-seconds must be at least 0, got -5"),
    (["--direct-examples", "-1"], "--direct-examples must be at least 0, got -1"),
    (["--max-ops", "0"], "--max-ops must be at least 1, got 0"),
    (["--shrink-seconds", "-1"], "--shrink-seconds must be at least 0, got -1"),
    (["--pass", "x:Y", "--stage", "edge-fp", "--stage", "quantized"], "--pass runs one stage"),
    (["--pass", "x:Y", "--since-gated"], "drop --pass"),
    (["--junit", "/proc/gate.xml"], "--junit /proc/gate.xml: cannot write in /proc"),
    (["--pass", "no_such_module:Nope"], "cannot import"),
])
def test_bad_gate_usage_is_one_line_and_exit_2_before_any_work(tmp_path, capsys, monkeypatch, argv, message):
    """Each bad argument: exit 2, one line naming it, nothing written (in-process: the refusal
    comes before the gate imports the lowering stack or creates its output folder)."""
    from verify.cli import main

    monkeypatch.chdir(tmp_path)
    status = main(["gate", *argv])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = _own_lines(err, argv)
    assert len(lines) == 1 and lines[0].startswith("verify gate: ") and message in lines[0], err
    assert not (tmp_path / "verify-out").exists()


@pytest.mark.parametrize("argv, message", [
    (["--mutants", "0"], "--mutants must be at least 1, got 0"),
    (["--resume", "no/such/st.json"], "--resume no/such/st.json: no such file"),
    (["-j", "0"], "-j must be at least 1, got 0"),
    (["--max-seconds", "nan"], "--max-seconds must be positive, got nan"),
    (["--json", "/proc/st.json"], "--json /proc/st.json: cannot write in /proc"),
])
def test_bad_selftest_usage_is_one_line_and_exit_2_before_any_work(tmp_path, capsys, monkeypatch, argv, message):
    """`selftest` checks the gate's search options as `gate` does, and its own, before any work."""
    from verify.cli import main

    monkeypatch.chdir(tmp_path)
    status = main(["selftest", *argv])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = _own_lines(err, argv)
    assert len(lines) == 1 and lines[0].startswith("verify selftest: ") and message in lines[0], err
    assert not (tmp_path / "verify-out").exists()


@pytest.mark.parametrize("option", ["--self-test", "--mutants", "--unaimed", "--resume", "--replay", "--trust"])
def test_gate_no_longer_takes_the_selftest_or_replay_options(capsys, option):
    """`selftest` and `replay` are commands of their own (issue 45): `gate` refuses their options."""
    from verify.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["gate", option, "1"] if option in ("--mutants", "--resume", "--replay") else ["gate", option])
    assert exit_.value.code == 2 and f"unrecognized arguments: {option}" in capsys.readouterr().err


def _own_lines(err: str, argv: list[str]) -> list[str]:
    """stderr's lines; where a pass reference is resolved (it imports torch and executorch, whose
    import-time warnings reach stderr in-process), only the harness's own lines."""
    lines = [line for line in err.splitlines() if line.strip()]
    if any(arg.endswith(":Nope") for arg in argv):
        return [line for line in lines if line.startswith("verify ")]
    return lines


@pytest.mark.parametrize("argv, message", [
    (["x:Y", "--ops", "bogus"], "unknown vocabulary op(s) bogus in --ops"),
    (["x:Y", "--examples", "0"], "--examples must be at least 1, got 0"),
    (["x:Y", "--max-ops", "0"], "--max-ops must be at least 1, got 0"),
    (["no_such_module:Nope"], "cannot import"),
])
def test_bad_infer_usage_is_one_line_and_exit_2(capsys, argv, message):
    from verify.cli import main

    status = main(["infer", *argv])
    err = capsys.readouterr().err
    lines = _own_lines(err, argv)
    assert status == 2 and len(lines) == 1 and lines[0].startswith("verify infer: ") and message in lines[0], err


def test_a_pass_check_cut_short_by_a_stop_keeps_the_evidence_its_worker_wrote(tmp_path, caplog):
    """A `--pass` check's worker writes its verdict so far after every example
    (`<job>.partial.json`); the run is stopped on the worker's first example record (relayed to
    this process): the worker is killed, and the PassRun, STOPPED, carries that evidence, which
    the CLI turns into the pass's `error` ("not run: stopped by ..."), evidence kept."""
    import logging

    from tests.passes import gate_passes
    from verify.gate.workers import PassJob, SearchSettings, gate_in_workers
    from verify.vocabulary import Ending
    from verify.jobs.launcher import reset_after_stop, stop_all, stop_signal

    class StopAtFirstExample(logging.Handler):
        def emit(self, record):
            if "[skip] example 1/" in record.getMessage():
                stop_all(signal.SIGTERM)

    caplog.set_level(logging.INFO)
    handler = StopAtFirstExample()
    logger = logging.getLogger("verify.gate.run")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    settings = SearchSettings(30, tmp_path, 0, 2, 15.0, ("abs", "neg"), 1)
    job = PassJob(gate_passes.InsertBeforeRetracePass, "tests/passes/gate_passes.py:InsertBeforeRetracePass",
                  "edge-fp")
    try:
        (run,) = gate_in_workers([job], settings, parallel=1, pass_timeout=600)
        assert stop_signal() == signal.SIGTERM
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        reset_after_stop()
    assert run.ending is Ending.STOPPED and run.verdict is not None, run
    skip = run.verdict.evidence[Feature.SKIP]
    assert skip.examples >= 1 and run.verdict.examples >= 1, run.verdict  # written before the record
    assert run.verdict.examples < 60  # 30 per feature: cut short
    assert (tmp_path / "workers" / "000-InsertBeforeRetracePass.partial.json").is_file()
    assert not (tmp_path / "workers" / "000-InsertBeforeRetracePass.result.json").exists()
    assert not processes_mentioning(str(tmp_path / "workers")), "a worker outlived the stop"
