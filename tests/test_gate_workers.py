"""`verify gate` runs each pass's check, and each stage search of a registry run, in a worker
(verify.gate.workers, started by verify.jobs.launcher), -j N at a time: a worker that crashes, hangs
past --pass-timeout or is stopped by Ctrl-C costs that pass (or stage) an `error` verdict (or,
when stopped, its place in an incomplete report), never the run; the verdicts do not depend on N.

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
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.waiting import wait_for
from verify.gate import run
from verify.gate.verdict import Evidence, PassVerdict
from verify.gate.worker import FAULT_EXIT_STATUS, FAULT_VARIABLE
from fastpass.annotations import ProofStatus
from verify.vocabulary import Ending, Feature, Route

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
    v = PassVerdict("m.P", "P", "m:P", ProofStatus.UNSOUND_COPY, "unsound-copy: graph differs", Route.DIRECT,
                    "edge-fp", annotation={"targeted_ops": ["aten.relu.default"], "skip_sound": True,
                                           "copy_sound": True, "source": "test"},
                    reproducers={"unsound-copy": "/x/P-unsound-copy.py"}, examples=8,
                    evidence={Feature.SKIP: skip, Feature.COPY: copy},
                    waived={Feature.SKIP: "why not"}, modes={"copy": {"diverged": True, "where": "pass output"}},
                    seconds=1.5)
    rebuilt = PassVerdict.from_json(json.loads(json.dumps(v.to_json())))
    assert rebuilt == v
    assert rebuilt.verdict is ProofStatus.UNSOUND_COPY and rebuilt.evidence[Feature.COPY].feature is Feature.COPY


def test_a_worker_past_the_pass_timeout_is_killed_and_its_pass_an_error(tmp_path):
    names = ["NoRetracePass", "ChangeDtypePass"]
    proc = run_gate(gate_command(tmp_path, names, "-j", "1", "--pass-timeout", "6"),
                    faults="NoRetracePass:hang,ChangeDtypePass:exit")
    assert proc.returncode == 1, proc.stderr[-3000:]
    hung, crashed = report(tmp_path / "out" / "gate.json")["passes"]
    assert hung["name"] == "NoRetracePass" and hung["verdict"] == "error", hung
    assert hung["reason"].startswith("<worker-timeout>") and "6 s" in hung["reason"], hung["reason"]
    assert 6 <= hung["seconds"] < 60, hung["seconds"]  # as the gate measured it: killed at the timeout, not after
    assert crashed["verdict"] == "error" and crashed["reason"].startswith("<worker-crash: exit 3>")  # went on
    assert not processes_mentioning(str(tmp_path / "out" / "workers")), "a worker outlived the gate"


def test_a_pass_not_started_within_max_seconds_is_an_error_not_green(tmp_path):
    """--max-seconds: the first check starts (its worker hangs until --pass-timeout), the budget
    ends meanwhile, so the second is never started: an `error` saying so (an unfinished check is
    never green), in the JSON (`ok: false`) and as a JUnit error; exit 1."""
    proc = run_gate(gate_command(tmp_path, ["NoRetracePass", "ChangeDtypePass"], "-j", "1", "--pass-timeout", "4",
                                 "--max-seconds", "2", "--junit", str(tmp_path / "gate.xml")),
                    faults="NoRetracePass:hang")
    assert proc.returncode == 1, proc.stderr[-3000:]
    document = report(tmp_path / "out" / "gate.json")
    hung, not_run = document["passes"]
    assert hung["verdict"] == "error" and hung["reason"].startswith("<worker-timeout>"), hung
    assert not_run["name"] == "ChangeDtypePass" and not_run["verdict"] == "error", not_run
    assert not_run["reason"].startswith("not started: the --max-seconds budget") and not_run["examples"] == 0
    assert not_run["unfinished"] == "not-started" and document["ok"] is False
    assert not (tmp_path / "out" / "workers" / "001-ChangeDtypePass.job.json").exists()
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert (suite.get("tests"), suite.get("errors")) == ("2", "2")
    error = suite.find("testcase[@name='ChangeDtypePass']/error")
    assert error is not None and error.get("message").startswith("not started:"), ET.tostring(suite)[:2000]


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
        sound, crashed, inert = passes
        assert crashed["verdict"] == "error", crashed
        assert crashed["reason"].startswith(f"<worker-crash: exit {FAULT_EXIT_STATUS}>"), crashed["reason"]
        assert "injected fault 'exit' for ChangeDtypePass" in crashed["reason"]  # the log's last line
        assert (sound["verdict"], inert["verdict"]) == ("sound", "inert"), passes  # NoRetracePass never retraces
        assert sound["examples"] >= 1 and inert["examples"] >= 1
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
        wait_for(lambda: events.exists() and "injected fault" in events.read_text(), 240,
                 "the second worker hangs (its injected fault is in its event file)", proc=proc, interval=0.5)
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
    assert document["ok"] is False
    assert [(p["name"], p["verdict"], p["unfinished"]) for p in document["passes"]] == [
        ("ChangeDtypePass", "error", None), ("NoRetracePass", "error", "stopped")]
    assert document["passes"][1]["reason"] == "not run: stopped by SIGINT before its check finished"
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert (suite.get("tests"), suite.get("errors")) == ("2", "2")
    assert not processes_mentioning(str(out / "workers")), "a worker outlived the stop"


def test_a_stop_ends_the_registry_stage_search_and_keeps_its_evidence(tmp_path):
    """With gate_registry's default runner the stage searches run in this process (the CLI's run
    each in a worker: see the tests below); once the run is stopped
    (verify.jobs.launcher.stop_all, what SIGINT/SIGTERM call under stop_on_signals) no further graph
    is lowered, the top-up and later stages are skipped, and the evidence gathered is returned
    -- in an `error` verdict: the check did not finish. The direct pass, never checked, is an
    error too. The stop is triggered by the search's own progress record of its first graph."""
    import logging

    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import run
    from verify.jobs.launcher import reset_after_stop, stop_all, stop_signal

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
    logger = logging.getLogger("verify.gate.search")  # the stage search's progress records
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        verdicts = run.gate_registry(classes, 40, ["edge-fp", "quantized"], tmp_path, seed=1, max_ops=2,
                                     shrink_seconds=15, ops=["sign", "abs"], direct_examples=3, min_evidence=3,
                                     top_up=40, top_up_seconds=900)
        assert stop_signal() == signal.SIGINT
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        reset_after_stop()
    v, never = verdicts
    assert v.qualname == sign
    assert v.examples == 1, v.examples  # the graph lowered before the stop, and no other
    assert v.stage == "edge-fp"  # the second stage never started
    assert v.evidence[Feature.COPY].examples == 1
    assert v.verdict is ProofStatus.ERROR and v.unfinished is Ending.STOPPED, (v.verdict, v.reason)
    assert v.reason == ("not run: stopped by SIGINT before its search of stage(s) edge-fp, quantized finished "
                        "(evidence so far kept)"), v.reason
    assert never.qualname == direct and never.verdict is ProofStatus.ERROR and never.examples == 0
    assert never.unfinished is Ending.STOPPED and never.reason.startswith("not run: stopped by SIGINT")


# ---------------------------------------------------------------------------------------------
# the registry run's stage searches in workers (verify.gate.workers.registry_runner)

SIGN = "executorch.backends.arm._passes.decompose_sign_pass.DecomposeSignPass"
MINMAX = "executorch.backends.arm._passes.convert_minmax_pass.ConvertMinMaxPass"


def _stage_verdict(stage: str, verdict: ProofStatus = ProofStatus.SOUND, *, examples: int, acted: int,
                   reproducers: dict | None = None, reason: str = "") -> PassVerdict:
    copy = Evidence(Feature.COPY, examples=examples, examples_invoked=examples, invocations=examples,
                    examples_with_action=acted, copied_nodes=2 * acted, ops_maybe_copied={"aten.abs.default": acted})
    return PassVerdict("m.P", "P", "m:P", verdict, reason, Route.PIPELINE if verdict.fails else Route.BATCH, stage,
                       annotation={"targeted_ops": ["aten.sign.default"]}, reproducers=dict(reproducers or {}),
                       examples=examples, evidence={Feature.COPY: copy},
                       modes={"copy": {"diverged": True}} if verdict.fails else {}, seconds=1.0)


def test_merging_stages_sums_evidence_and_a_later_stages_unsound_verdict_wins():
    """Each stage searches apart (in its worker); per pass, verdict.merge_stages sums the
    evidence, keeps every reproducer, lists the stages in stage order, and a failing verdict in
    any stage wins over sound evidence elsewhere (the first in stage order)."""
    from verify.gate.verdict import merge_stages

    sound = _stage_verdict("edge-fp", examples=3, acted=2)
    unsound = _stage_verdict("quantized", ProofStatus.UNSOUND_COPY, examples=2, acted=1,
                             reproducers={"unsound-copy": "/r/P-unsound-copy-quantized.py"},
                             reason="unsound-copy at P: graph differs")
    later = _stage_verdict("ethos-u55", ProofStatus.ERROR, examples=1, acted=0,
                           reproducers={"unsound-copy": "/r/P-unsound-copy-ethos-u55.py"}, reason="only with others")
    merged = merge_stages([sound, unsound, later])
    merged.judge(1)  # evidence enough for sound: judging must not undo the unsound verdict
    assert merged.verdict is ProofStatus.UNSOUND_COPY
    assert merged.reason.startswith("unsound-copy at P: graph differs") and "also error on ethos-u55" in merged.reason
    assert merged.stage == "edge-fp,quantized,ethos-u55" and merged.how is Route.PIPELINE
    assert merged.reproducers == {"unsound-copy": "/r/P-unsound-copy-quantized.py",
                                  "unsound-copy:ethos-u55": "/r/P-unsound-copy-ethos-u55.py"}
    copy = merged.evidence[Feature.COPY]
    assert (copy.examples, copy.examples_with_action, copy.copied_nodes) == (6, 3, 6)
    assert copy.ops_maybe_copied == {"aten.abs.default": 3} and merged.examples == 6 and merged.seconds == 3.0
    assert merged.modes == {"copy": {"diverged": True}}
    # sound in both stages: the summed evidence decides (neither stage alone has 3 examples)
    both = merge_stages([_stage_verdict("edge-fp", examples=2, acted=2), _stage_verdict("quantized", examples=2,
                                                                                         acted=1)])
    both.judge(3)
    assert both.verdict is ProofStatus.SOUND and both.examples_with_evidence == 3 and both.stage == "edge-fp,quantized"
    short = merge_stages([_stage_verdict("edge-fp", examples=2, acted=2), _stage_verdict("quantized", examples=2,
                                                                                          acted=1)])
    short.judge(4)
    assert short.verdict is ProofStatus.UNEXERCISED and "copy: 3 of 4 examples" in short.reason
    # the inputs are not changed by the merge
    assert sound.evidence[Feature.COPY].examples == 3 and sound.stage == "edge-fp"


def test_stage_results_merge_in_stage_order_whatever_order_they_finished_in():
    from verify.gate import plan

    classes = {"m.P": object}
    stage_error = PassVerdict("<worker-crash>", "worker crash", "-", ProofStatus.ERROR, "<worker-crash: exit 3>",
                              Route.BATCH, "quantized")
    results = [plan.StageResult("edge-fp", {"m.P": _stage_verdict("edge-fp", examples=1, acted=1)}),
               plan.StageResult("quantized", {"<worker-crash:quantized>": stage_error})]
    merged = plan.merge_stage_results(classes, results)
    assert list(merged) == ["m.P", "<worker-crash:quantized>"]
    assert merged["m.P"].stage == "edge-fp" and merged["<worker-crash:quantized>"] is stage_error


def test_stage_seeds_and_budgets_do_not_depend_on_the_other_stages():
    from verify.gate import plan

    assert plan.stage_seed(7, "quantized") == plan.stage_seed(7, "quantized") != plan.stage_seed(7, "edge-fp")
    assert plan.stage_seed(None, "edge-fp") is None
    # --max-seconds 3600 less the direct runs' sixth: 4 stages in 2 rounds at -j 2, 4 at -j 1
    assert plan.stage_shares(3600, 600, 4, 2) == 1500
    assert plan.stage_shares(3600, 600, 4, 1) == 750
    assert plan.stage_shares(3600, 0, 1, 2) == 3600 and plan.stage_shares(None, 0, 4, 2) is None


def _registry_in_workers(tmp_path: Path, jobs: int, stages: list[str], stage_timeout: float | None = None):
    """Two registry passes, 2 graphs per stage, each stage's search in a worker (`jobs` at once)."""
    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import run
    from verify.gate.workers import SearchSettings, registry_runner

    with check.quiet():
        registry = gp.annotated_passes()
    classes = {SIGN: registry[SIGN], MINMAX: registry[MINMAX]}
    settings = SearchSettings(0, tmp_path, 3, 2, 15.0, ("sign", "amax"), 1)
    runner = registry_runner(classes, settings, parallel=jobs, pass_timeout=600, stage_timeout=stage_timeout)
    return run.gate_registry(classes, 2, stages, tmp_path, seed=3, max_ops=2, shrink_seconds=15,
                             ops=["sign", "amax"], direct_examples=0, min_evidence=1, top_up=0,
                             parallel=jobs, runner=runner)


def _summary(verdicts: list[PassVerdict]) -> list:
    return [(v.qualname, v.verdict.value, v.stage, v.examples, {f.value: e.to_json() for f, e in v.evidence.items()})
            for v in verdicts]


def test_stage_searches_in_workers_give_the_same_verdicts_whatever_the_number_of_workers(tmp_path, caplog):
    """Each stage's search in a worker of its own, -j 1 and -j 2 (fixed seed, per-stage seeds,
    pinned hash seed): the same verdicts, evidence and order; every pass's evidence is the sum
    over both stages and, both passes being ones the quantizer's pipeline invokes too, its check
    there (run.annotation_checks, 2 graphs per feature); the workers' progress lines reach this
    process's logging."""
    import logging

    caplog.set_level(logging.INFO)
    one = _registry_in_workers(tmp_path / "j1", 1, ["edge-fp", "quantized"])
    two = _registry_in_workers(tmp_path / "j2", 2, ["edge-fp", "quantized"])
    assert _summary(one) == _summary(two)
    assert [v.qualname for v in one] == [SIGN, MINMAX]
    for v in one:
        # the stages' 4 graphs, and the annotation check's 2 per feature it checks
        assert v.stage == f"edge-fp,quantized,{run.ANNOTATION_LABEL}" and v.examples == 4 + 2 * len(v.evidence), \
            (v.name, v.stage, v.examples)
        assert all(e.examples == 6 for e in v.evidence.values())
        assert v.verdict in (ProofStatus.SOUND, ProofStatus.UNEXERCISED), (v.name, v.verdict, v.reason)
    assert "[edge-fp] graph 1/2" in caplog.text and "[quantized] graph 2/2" in caplog.text
    assert "stage quantized: 2 pass(es) searched" in caplog.text  # the finished stage's line
    assert (tmp_path / "j2" / "workers" / "000-stage-edge-fp.result.json").is_file()


def test_a_crashed_stage_worker_is_an_error_entry_and_the_other_stages_verdicts_stand(tmp_path, monkeypatch):
    """The quantized stage's worker crashes (exit 3, injected): an error entry names the stage and
    the crash, the passes keep edge-fp's evidence (and list that stage only). A hung stage
    worker is killed at its timeout: `<worker-timeout:STAGE>`."""
    monkeypatch.setenv(FAULT_VARIABLE, "quantized:exit")
    verdicts = {v.qualname: v for v in _registry_in_workers(tmp_path / "crash", 2, ["edge-fp", "quantized"])}
    crash = verdicts["<worker-crash>"]
    assert crash.verdict is ProofStatus.ERROR and crash.stage == "quantized" and crash.verdict.fails
    assert crash.reason.startswith(f"<worker-crash: exit {FAULT_EXIT_STATUS}>"), crash.reason
    assert "injected fault 'exit' for quantized" in crash.reason and "gave no evidence for its 2 pass(es)" in crash.reason
    for qn in (SIGN, MINMAX):
        assert verdicts[qn].stage == "edge-fp" and verdicts[qn].examples == 2, verdicts[qn]
        assert all(e.examples == 2 for e in verdicts[qn].evidence.values())
    assert list(verdicts) == [SIGN, MINMAX, "<worker-crash>"]

    for qn in (SIGN, MINMAX):  # ... and, their quantized search not finished, are errors saying so
        assert verdicts[qn].verdict is ProofStatus.ERROR and verdicts[qn].unfinished is Ending.CUT_SHORT
        assert verdicts[qn].reason.startswith("not finished: its search of stage(s) quantized ended without")

    monkeypatch.setenv(FAULT_VARIABLE, "edge-fp:hang")
    (*passes, hung) = _registry_in_workers(tmp_path / "hang", 1, ["edge-fp"], stage_timeout=4)
    assert hung.qualname == "<worker-timeout>" and hung.verdict is ProofStatus.ERROR, hung
    assert hung.reason.startswith("<worker-timeout>: no verdict within 4 s"), hung.reason
    assert "gave no evidence for its 2 pass(es)" in hung.reason
    assert all(v.verdict is ProofStatus.ERROR and v.unfinished is Ending.CUT_SHORT and v.examples == 0
               for v in passes), passes
    assert 4 <= hung.seconds < 60, hung.seconds  # as the gate measured it: killed at the timeout, not after
    assert not processes_mentioning(str(tmp_path / "hang" / "workers")), "a stage worker outlived its timeout"


def test_a_stop_kills_the_stage_workers_and_keeps_the_evidence_gathered(tmp_path, caplog):
    """-j 1: edge-fp's search finishes, then quantized's starts; its first graph's progress record
    (relayed from its worker) stops the run (verify.jobs.launcher.stop_all, what SIGINT/SIGTERM call
    under stop_on_signals): the quantized worker's group is killed. The verdicts returned hold
    edge-fp's evidence and the graph the quantized worker had checkpointed before it was killed
    (its `partial.json`), and are errors: the quantized search did not finish."""
    import logging

    from verify.jobs.launcher import reset_after_stop, stop_all, stop_signal

    class StopAtQuantizedGraph(logging.Handler):
        def emit(self, record):
            if "[quantized] graph 1/" in record.getMessage():
                stop_all(signal.SIGINT)

    caplog.set_level(logging.INFO)  # the workers log (and relay) progress at the gate's own level
    handler = StopAtQuantizedGraph()
    logger = logging.getLogger("verify.gate.search")  # the stage search's progress records
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        verdicts = _registry_in_workers(tmp_path, 1, ["edge-fp", "quantized"])
        assert stop_signal() == signal.SIGINT
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        reset_after_stop()
    assert [v.qualname for v in verdicts] == [SIGN, MINMAX]  # no error entry: a stop is not a crash
    for v in verdicts:
        # edge-fp's 2 graphs and the quantized graph checkpointed before its progress record
        assert v.stage == "edge-fp,quantized" and v.examples == 3, (v.name, v.stage, v.examples)
        assert all(e.examples == 3 for e in v.evidence.values())
        assert v.verdict is ProofStatus.ERROR and v.unfinished is Ending.STOPPED, (v.verdict, v.reason)
        assert v.reason.startswith("not run: stopped by SIGINT before its search of stage(s) quantized finished")
    assert not (tmp_path / "workers" / "001-stage-quantized.result.json").exists()
    assert (tmp_path / "workers" / "001-stage-quantized.partial.json").is_file()
    assert not processes_mentioning(str(tmp_path / "workers")), "a stage worker outlived the stop"


def test_the_cli_registry_run_searches_its_stages_in_workers(tmp_path):
    """`verify gate` without --pass, on a registry cut down to two passes (the one change made to
    the gate process under test): the stage's search runs in a worker, its verdicts come back as
    JSON into the reports, with its progress lines and its finished line on the terminal."""
    script = (
        "import sys\n"
        "from verify.gate import passes as gp\n"
        "full = gp.annotated_passes\n"
        f"gp.annotated_passes = lambda: {{qn: c for qn, c in full().items() if qn in ({SIGN!r}, {MINMAX!r})}}\n"
        "from verify.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", script, "gate", "--stage", "edge-fp", "--examples", "2",
                           "--top-up", "0", "--direct-examples", "0", "--ops", "sign,amax", "--max-ops", "2",
                           "--min-evidence", "1", "--seed", "3", "-j", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = report(out / "gate.json")
    assert [(p["qualname"], p["stage"], p["how"], p["examples"]) for p in document["passes"]] == [
        (MINMAX, "edge-fp", "batch", 2), (SIGN, "edge-fp", "batch", 2)]  # the registry's (sorted) order
    assert (out / "workers" / "000-stage-edge-fp.result.json").is_file()
    assert "[edge-fp] graph 2/2" in proc.stderr and "gate: [1/1] stage edge-fp: 2 pass(es) searched" in proc.stderr
