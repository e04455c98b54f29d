"""`verify gate` runs each pass's check in a worker (verify.gate.workers, started by
verify.launcher), -j N at a time: a worker that crashes, hangs past --pass-timeout or is stopped
by Ctrl-C costs that pass an `error` verdict (or, when stopped, its place in an incomplete
report), never the run; the verdicts do not depend on N.

Faults are injected through the worker's one test-only fault point (VERIFY_GATE_WORKER_FAULT,
see verify/gate/worker.py), read in the worker process: the gate under test runs unchanged.
Passes come from tests/passes/gate_passes.py; graphs are one or two ops, so each run takes
well under a minute (most of it importing torch and executorch)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from verify.gate.verdict import Evidence, PassVerdict
from verify.gate.worker import FAULT_EXIT_STATUS, FAULT_VARIABLE
from verify.report.verdict import Feature, GateVerdict

ROOT = Path(__file__).resolve().parents[1]
PASSES = "tests/passes/gate_passes.py"


def gate_command(tmp_path: Path, names: list[str], *extra: str, out: str = "out") -> list[str]:
    command = [sys.executable, "-m", "verify", "gate", "--examples", "1", "--ops", "abs,neg", "--max-ops", "2",
               "--min-evidence", "1", "--seed", "0", "--out", str(tmp_path / out), *extra]
    for name in names:
        command += ["--pass", f"{PASSES}:{name}"]
    return command


def run_gate(command: list[str], faults: str = "", timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, **({FAULT_VARIABLE: faults} if faults else {}))
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def report(path: Path) -> dict:
    return json.loads(path.read_text())


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text` (a worker's job path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if text in cmdline and "zombie" not in state:
            found.append(int(entry.name))
    return found


def test_a_verdict_crosses_the_process_boundary_unchanged():
    """The worker sends PassVerdict.to_json, the parent rebuilds it with from_json: the very same
    dataclass (enums, evidence, waived features), not a string to parse."""
    copy = Evidence(Feature.COPY, examples=4, examples_invoked=3, invocations=5, upstream_skipped=1,
                    examples_with_action=2, skipped_calls=0, copied_nodes=7, ops_maybe_copied={"aten.neg.default": 2})
    skip = Evidence(Feature.SKIP, examples=4, examples_invoked=4, invocations=4, examples_with_action=4,
                    skipped_calls=4)
    v = PassVerdict("m.P", "P", "m:P", GateVerdict.UNSOUND_COPY, "unsound-copy: graph differs", "direct",
                    "edge-fp", annotation={"targeted_ops": ["aten.relu.default"], "skip_sound": True,
                                           "copy_sound": True, "source": "test"},
                    reproducers={"unsound-copy": "/x/P-unsound-copy.py"}, examples=8,
                    evidence={Feature.SKIP: skip, Feature.COPY: copy},
                    waived={Feature.SKIP: "why not"}, modes={"copy": {"diverged": True, "where": "pass output"}},
                    seconds=1.5)
    rebuilt = PassVerdict.from_json(json.loads(json.dumps(v.to_json())))
    assert rebuilt == v
    assert rebuilt.verdict is GateVerdict.UNSOUND_COPY and rebuilt.evidence[Feature.COPY].feature is Feature.COPY


def test_a_worker_past_the_pass_timeout_is_killed_and_its_pass_an_error(tmp_path):
    names = ["NoRetracePass", "ChangeDtypePass"]
    started = time.monotonic()
    proc = run_gate(gate_command(tmp_path, names, "-j", "1", "--pass-timeout", "6"),
                    faults="NoRetracePass:hang,ChangeDtypePass:exit")
    assert proc.returncode == 1, proc.stderr[-3000:]
    hung, crashed = report(tmp_path / "out" / "gate.json")["passes"]
    assert hung["name"] == "NoRetracePass" and hung["verdict"] == "error", hung
    assert hung["reason"].startswith("<worker-timeout>") and "6 s" in hung["reason"], hung["reason"]
    assert 6 <= hung["seconds"] < 60, hung["seconds"]
    assert crashed["verdict"] == "error" and crashed["reason"].startswith("<worker-crash: exit 3>")  # went on
    assert not processes_mentioning(str(tmp_path / "out" / "workers")), "a worker outlived the gate"
    assert time.monotonic() - started < 120


def test_a_pass_not_started_within_max_seconds_is_reported_not_run(tmp_path):
    """--max-seconds: the first check starts (its worker hangs until --pass-timeout), the budget
    ends meanwhile, so the second is never started and is `unexercised`, saying it was not run."""
    proc = run_gate(gate_command(tmp_path, ["NoRetracePass", "ChangeDtypePass"], "-j", "1", "--pass-timeout", "4",
                                 "--max-seconds", "2"), faults="NoRetracePass:hang")
    assert proc.returncode == 1, proc.stderr[-3000:]
    hung, not_run = report(tmp_path / "out" / "gate.json")["passes"]
    assert hung["verdict"] == "error" and hung["reason"].startswith("<worker-timeout>"), hung
    assert not_run["name"] == "ChangeDtypePass" and not_run["verdict"] == "unexercised", not_run
    assert not_run["reason"].startswith("not run: the --max-seconds budget") and not_run["examples"] == 0
    assert not (tmp_path / "out" / "workers" / "001-ChangeDtypePass.job.json").exists()


def test_a_crash_costs_one_pass_and_the_verdicts_do_not_depend_on_the_number_of_workers(tmp_path):
    """The same three passes with -j 1 and -j 2 (fixed Hypothesis seed, pinned hash seed): the
    same verdicts and evidence in the same order, table and JSON; in both, the worker of the
    second pass crashes (exit 3): that pass is an `error` naming the crash, the others still
    get their own verdicts."""
    names = ["InsertBeforeRetracePass", "ChangeDtypePass", "NoRetracePass"]
    results = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"out-j{jobs}"
        proc = run_gate(gate_command(tmp_path, names, "-j", jobs, "--junit", str(out / "gate.xml"), out=out.name),
                        faults="ChangeDtypePass:exit")
        assert proc.returncode == 1, proc.stderr[-3000:]  # the error fails the gate
        document = report(out / "gate.json")
        assert document["run"]["jobs"] == int(jobs) and document["run"]["complete"] is True
        passes = document["passes"]
        assert [p["name"] for p in passes] == names  # the order given, whichever worker finished first
        sound, crashed, unexercised = passes
        assert crashed["verdict"] == "error", crashed
        assert crashed["reason"].startswith(f"<worker-crash: exit {FAULT_EXIT_STATUS}>"), crashed["reason"]
        assert "injected fault 'exit' for ChangeDtypePass" in crashed["reason"]  # the log's last line
        assert (sound["verdict"], unexercised["verdict"]) == ("sound", "unexercised"), passes
        assert sound["examples"] >= 1 and unexercised["examples"] >= 1
        suite = ET.parse(out / "gate.xml").getroot()
        assert suite.get("errors") == "1" and suite.get("tests") == "3"
        # progress: one line per finished pass; the workers' own records relayed, live
        assert all(f"/3] {name}: " in proc.stderr for name in names), proc.stderr[-3000:]
        assert "injected fault 'exit' for ChangeDtypePass" in proc.stderr
        assert "InsertBeforeRetracePass [skip] example 1/1" in proc.stderr
        results[jobs] = [(p["name"], p["verdict"], p["examples"], p["evidence"]) for p in passes]
        results[jobs + " table"] = [line.split()[:2] for line in proc.stdout.splitlines()
                                    if line.split()[:1] in ([n] for n in names)]
    assert results["1"] == results["2"]
    assert results["1 table"] == results["2 table"] and len(results["1 table"]) == 3


def test_ctrl_c_kills_the_workers_and_writes_what_finished(tmp_path):
    """-j 1: the first pass's worker crashes (a finished error verdict), the second hangs; Ctrl-C
    then stops the run: the hung worker's group is killed, the report holds the one finished
    verdict and says the run was stopped; exit 128 + SIGINT."""
    names = ["ChangeDtypePass", "NoRetracePass"]
    env = dict(os.environ, **{FAULT_VARIABLE: "ChangeDtypePass:exit,NoRetracePass:hang"})
    out = tmp_path / "out"
    proc = subprocess.Popen(gate_command(tmp_path, names, "-j", "1", "--junit", str(tmp_path / "gate.xml")),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        events = out / "workers" / "001-NoRetracePass.events.jsonl"
        deadline = time.monotonic() + 240
        while not (events.exists() and "injected fault" in events.read_text()):  # the second worker hangs now
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
            time.sleep(0.5)
        assert processes_mentioning(str(out / "workers"))
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGINT, stderr[-3000:]
    assert "stopped by SIGINT" in stderr
    document = report(out / "gate.json")
    assert document["run"]["complete"] is False and document["run"]["stopped_by"] == "SIGINT"
    assert [(p["name"], p["verdict"]) for p in document["passes"]] == [("ChangeDtypePass", "error")]
    assert ET.parse(tmp_path / "gate.xml").getroot().get("tests") == "1"
    assert not processes_mentioning(str(out / "workers")), "a worker outlived the stop"


def test_a_stop_ends_the_registry_stage_search_and_keeps_its_evidence(tmp_path):
    """The registry run's stage searches run in the gate process: once the run is stopped
    (verify.launcher.stop_all, what SIGINT/SIGTERM call under stop_on_signals) no further graph
    is lowered, the top-up and later stages are skipped, and the evidence gathered is returned.
    The stop is triggered by the search's own progress record of its first graph."""
    import logging

    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import run
    from verify.launcher import reset_after_stop, stop_all, stop_signal

    sign = "executorch.backends.arm._passes.decompose_sign_pass.DecomposeSignPass"
    direct = "executorch.backends.arm._passes.decompose_gru_pass.DecomposeGruPass"  # no pipeline runs it
    with check.quiet():
        registry = gp.annotated_passes()
    classes = {sign: registry[sign], direct: registry[direct]}

    class StopAtFirstGraph(logging.Handler):
        def emit(self, record):
            if "graph 1/" in record.getMessage():
                stop_all(signal.SIGINT)

    handler = StopAtFirstGraph()
    logger = logging.getLogger("verify.gate.run")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    started = time.monotonic()
    try:
        verdicts = run.gate_registry(classes, 40, ["edge-fp", "quantized"], tmp_path, seed=1, max_ops=2,
                                     shrink_seconds=15, ops=["sign", "abs"], direct_examples=3, min_evidence=3,
                                     top_up=40, top_up_seconds=900)
        assert stop_signal() == signal.SIGINT
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        reset_after_stop()
    (v,) = verdicts  # the direct pass, never checked, is not reported
    assert v.qualname == sign
    assert v.examples == 1, v.examples  # the graph lowered before the stop, and no other
    assert v.stage == "edge-fp"  # the second stage never started
    assert v.evidence[Feature.COPY].examples == 1
    assert time.monotonic() - started < 120
