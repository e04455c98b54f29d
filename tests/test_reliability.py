"""A harness that never loses a result (issue 14): interrupts, concurrent runs, bad paths,
processes a model leaves behind, honest null checks, exit codes and messages.

Each test reproduces one way results were lost or mislabelled; the numbers are the issue's.
End-to-end runs use the tiny model with the cheap settings (--null-seed -1 --reference-sets 0)
wherever the null check is not what is tested.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
TINY = "tests/models/tiny.py:make"
CHEAP = ("--null-seed", "-1", "--reference-sets", "0")


def verify_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "verify", *args]


def environment(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), **extra)


def run_verify(*args: str, cwd: Path = ROOT, timeout: float = 900, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(verify_command(*args), cwd=cwd, env=environment(**env), capture_output=True, text=True,
                          timeout=timeout)


def start_verify(*args: str, cwd: Path = ROOT) -> subprocess.Popen:
    """A run in a session of its own, so the test can signal it (and clean up) like a terminal would."""
    return subprocess.Popen(verify_command(*args), cwd=cwd, env=environment(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for a (container's) init to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def finished_cases(run_dir: Path) -> list[dict]:
    journal = run_dir / "journal.jsonl"
    if not journal.exists():
        return []
    records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return [r for r in records if r["record"] == "case"]


def cases_started(run_dir: Path) -> int:
    """Case folders in a run folder: when the second appears, the first case has finished."""
    return sum(1 for p in run_dir.iterdir() if p.is_dir() and p.name != "random-graphs") if run_dir.exists() else 0


def sleeper_pids(run_dir: Path) -> tuple[int, int] | None:
    """(worker, child) pids that tests/models/faulty.py:spawns_sleeper logs."""
    for log in run_dir.glob("*/pinned.log"):
        found = re.search(r"faulty.spawns_sleeper: worker (\d+) child (\d+)", log.read_text(errors="replace"))
        if found:
            return int(found[1]), int(found[2])
    return None


def cli_main(*args: str) -> int:
    """The CLI in this process: bad usage is refused before any work, so this is cheap."""
    from verify.cli import main

    return main(list(args))


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# 1. Two runs started in the same second shared one folder (and one report.json).

@pytest.mark.slow
def test_two_runs_started_together_get_their_own_folders(tmp_path):
    args = ("run", "--models", "none", "--model", str(ROOT / TINY), "--targets", "tosa-int",
            "--second-mode", "stock", *CHEAP)
    procs = [start_verify(*args, cwd=tmp_path) for _ in range(2)]
    try:
        outputs = [proc.communicate(timeout=900)[0] for proc in procs]
    finally:
        for proc in procs:
            stop(proc)
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    run_dirs = sorted((tmp_path / "verify-out").iterdir())
    assert len(run_dirs) == 2, run_dirs
    for run_dir in run_dirs:
        (case,) = json.loads((run_dir / "report.json").read_text())["cases"]
        assert case["verdict"] == "identical" and case["error"] is None
        assert Path(case["artifacts"]).parent.name == run_dir.name
    # 10. a stock-vs-stock run says so (it said "features all")
    assert all("stock vs stock" in out for out in outputs)


def test_run_folders_are_never_reused(tmp_path, monkeypatch):
    from verify.usage.output_paths import new_run_dir

    monkeypatch.chdir(tmp_path)
    folders = {new_run_dir() for _ in range(20)}  # same second, same pid
    assert len(folders) == 20 and all(f.is_dir() for f in folders)


# 2. Ctrl-C after a finished case lost every report; SIGTERM left hung workers running.

@pytest.mark.slow
def test_sigint_writes_reports_of_finished_cases_and_resume_finishes_the_run(tmp_path):
    run_dir, report, junit = tmp_path / "run", tmp_path / "report.json", tmp_path / "junit.xml"
    proc = start_verify("run", "--models", "none", "--model", TINY, "--targets", "tosa-int,tosa-fp",
                        "--second-mode", "stock", *CHEAP, "--out", str(run_dir), "--json", str(report),
                        "--junit", str(junit))
    try:
        wait_for(lambda: cases_started(run_dir) >= 2, 600, "the first case finished", proc=proc)
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=60)[0]
    finally:
        stop(proc)
    assert proc.returncode == 130, output
    assert "stopped by SIGINT" in output and f"--resume {run_dir}" in output
    for path in (report, run_dir / "report.json"):
        document = json.loads(path.read_text())
        assert [(c["target"], c["verdict"]) for c in document["cases"]] == [("tosa-int", "identical")]
        assert document["run"]["complete"] is False and document["run"]["stopped_by"] == "SIGINT"
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "2" and suite.get("errors") == "1"  # the unfinished case is not a pass

    resumed = run_verify("run", "--resume", str(run_dir), "--json", str(report))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 finished before, resumed" in resumed.stderr
    document = json.loads(report.read_text())
    assert [(c["target"], c["verdict"]) for c in document["cases"]] == [("tosa-int", "identical"),
                                                                        ("tosa-fp", "identical")]
    assert document["run"]["complete"] is True
    assert len(finished_cases(run_dir)) == 2, "the finished case was not run again"


@pytest.mark.slow
def test_sigterm_kills_a_hung_worker_group_and_writes_reports(tmp_path):
    run_dir = tmp_path / "run"
    proc = start_verify("run", "--models", "none", "--model", "tests/models/faulty.py:spawns_sleeper",
                        "--targets", "tosa-int", *CHEAP, "--out", str(run_dir))
    try:
        worker, child = wait_for(lambda: sleeper_pids(run_dir), 300, "the model started its child", proc=proc)
        proc.send_signal(signal.SIGTERM)
        try:  # the model sleeps for 600 s: a run that ends within this bound did not wait for it
            output = proc.communicate(timeout=120)[0]
        except subprocess.TimeoutExpired:
            pytest.fail("the stop waited for the worker")
    finally:
        stop(proc)
    assert proc.returncode == 143, output
    wait_for(lambda: not alive(worker) and not alive(child), 10, "worker and its child gone")
    document = json.loads((run_dir / "report.json").read_text())
    assert document["cases"] == [] and document["run"]["stopped_by"] == "SIGTERM"


@pytest.mark.slow
def test_sigkill_leaves_a_journal_the_reports_are_rebuilt_from_and_no_orphans(tmp_path):
    run_dir = tmp_path / "run"
    proc = start_verify("run", "--models", "none", "--model", TINY, "--model",
                        "tests/models/faulty.py:spawns_sleeper", "--targets", "tosa-int", *CHEAP,
                        "--out", str(run_dir))
    try:
        # The second case's model running: the first case has finished.
        worker, child = wait_for(lambda: sleeper_pids(run_dir), 600, "the second case's model started", proc=proc)
        os.kill(proc.pid, signal.SIGKILL)  # the harness alone: its workers must notice
        proc.wait(timeout=30)
    finally:
        stop(proc)
    wait_for(lambda: not alive(worker) and not alive(child), 15, "the orphaned worker group killed itself")

    rebuilt = run_verify("report", "--from", str(run_dir), "--json", str(tmp_path / "r.json"),
                         "--junit", str(tmp_path / "j.xml"))
    assert rebuilt.returncode == 1, rebuilt.stdout + rebuilt.stderr  # incomplete is not a pass
    assert "1 of 2 case(s) finished" in rebuilt.stderr
    for path in (tmp_path / "r.json", run_dir / "report.json"):
        document = json.loads(path.read_text())
        assert [(c["model"], c["verdict"]) for c in document["cases"]] == [(TINY, "identical")]
    assert ET.parse(tmp_path / "j.xml").getroot().get("tests") == "2"


def test_a_torn_journal_line_is_skipped(tmp_path):
    from verify.report.case import Case
    from verify.run.journal import Journal, read_journal
    from verify.vocabulary import Verdict
    from verify.report.case import CaseReport

    journal = Journal(tmp_path)
    journal.start({}, [Case("m", "tosa-int"), Case("n", "tosa-int")], {})
    report = CaseReport("m", "tosa-int", Verdict.IDENTICAL, wall_seconds=1.5)
    journal.case(report.to_json())
    with open(journal.path, "a") as f:
        f.write('{"record": "case", "model": "n", "tar')  # killed mid-write
    contents = read_journal(tmp_path)
    assert [CaseReport.from_json(c) for c in contents.cases] == [report]


# 3. Two factories named `make` in different files shared one artifact folder.

def test_same_factory_name_in_two_files_gets_two_folders(tmp_path):
    from verify.report.case import Case
    from verify.run.runner import _new_case_dir

    a, b = Case("tests/models/tiny.py:make", "tosa-int"), Case("tests/models/faulty.py:make", "tosa-int")
    assert a.slug != b.slug and a.slug.startswith("make-tosa-int")
    assert Case("resnet8", "tosa-int").slug == "resnet8-tosa-int"
    first = _new_case_dir(tmp_path, a.slug)
    (first / "pinned.log").write_text("kept")
    assert _new_case_dir(tmp_path, a.slug) != first and (first / "pinned.log").read_text() == "kept"


# 4. Output paths were checked only after the run.

@pytest.mark.parametrize("args, message", [
    (("run", "--json", "/proc/x.json"), "--json /proc/x.json: cannot write in /proc"),
    (("run", "--junit", "{file}/junit.xml"), "is a file, not a folder"),
    (("run", "--out", "{file}/run"), "is a file, not a folder"),
    (("run", "--out", "{file}"), "is a file, expected a folder"),
    (("run", "--json", "{tmp}"), "is a folder, expected a file name"),
    (("bench", "--json", "/proc/x.json"), "cannot write in /proc"),
    (("bench", "--plot", "{file}/p.png"), "is a file, not a folder"),
    (("bench", "--work-dir", "{file}"), "is a file, expected a folder"),
])
def test_bad_output_paths_are_refused_before_any_work(tmp_path, monkeypatch, capsys, args, message):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    args = tuple(a.format(file=a_file, tmp=tmp_path) for a in args)
    tiny = str(ROOT / TINY)
    model = ("--models", "none", "--model", tiny, "--targets", "tosa-int") if args[0] == "run" else (
        "--model", tiny, "--target", "tosa-int")
    monkeypatch.chdir(tmp_path)
    assert cli_main(*args, *model) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "verify-out").exists(), "work started"


# 5. An unseeded factory was blamed on the hash seed, and could turn a divergence into
#    "nondeterministic" at the recheck.

@pytest.mark.slow
def test_an_unseeded_factory_is_named_and_not_blamed_on_the_hash_seed(tmp_path):
    proc = run_verify("run", "--models", "none", "--model", "tests/models/faulty.py:unseeded", "--model",
                      "tests/models/faulty.py:unseeded_renamed_in_second_lowering", "--targets", "tosa-int",
                      "--second-mode", "stock", "--reference-sets", "0", "--out", str(tmp_path / "run"),
                      "--json", str(tmp_path / "report.json"))
    output = proc.stdout + proc.stderr
    unseeded, renamed = json.loads((tmp_path / "report.json").read_text())["cases"]
    assert unseeded["verdict"] == "identical", output
    assert unseeded["null_check"]["identical"] is True, unseeded["null_check"]  # the same program, another seed
    assert renamed["verdict"] == "divergent", output  # the recheck lowered the same program
    assert unseeded["null_outcome"] == "identical"
    assert unseeded["factory"]["deterministic"] is False
    assert any(k.startswith("state_dict[") for k in unseeded["factory"]["differs_in"])
    assert "factory is not deterministic" in output
    assert proc.returncode == 1


# 6. A crashed null-check worker showed "err" in one column and exit 0.

@pytest.mark.slow
def test_a_null_check_that_failed_to_run_is_counted(tmp_path):
    proc = run_verify("run", "--models", "none", "--model", "tests/models/faulty.py:plain", "--targets",
                      "tosa-int", "--second-mode", "stock", "--reference-sets", "0", "--out", str(tmp_path / "run"),
                      "--json", str(tmp_path / "report.json"), "--junit", str(tmp_path / "junit.xml"),
                      FAULTY_CRASH_AT_HASH_SEED="1")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    (case,) = json.loads((tmp_path / "report.json").read_text())["cases"]
    assert case["verdict"] == "identical" and case["null_outcome"] == "failed"
    assert "IDENTICAL, NULL CHECK FAILED" in proc.stderr and "null check failed to run" in proc.stderr
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("errors") == "1"
    assert "null check failed to run" in suite.find("testcase/error").get("message")


# 7. Bad usage exited 1, like a divergence.

@pytest.mark.parametrize("args, message", [
    (("run", "--models", "none", "--model", TINY, "--features", "skip,warp"), "unknown fastpass feature(s) warp"),
    (("run", "--models", "none", "--model", TINY, "--targets", "tosa-int,bogus"), "unknown target(s) bogus"),
    (("run", "--models", "resnet8,nonet", "--targets", "tosa-int"), "unknown model 'nonet'"),
    (("run", "--models", "none", "--model", "tests/models/nowhere.py:make"), "no such file"),
    (("run", "--models", "none", "--model", TINY, "--timeout", "-5"), "--timeout must be a positive number"),
    (("run", "--models", "none"), "no models selected"),
    (("bench", "--model", TINY, "--target", "nope"), "unknown target 'nope'"),
    (("bench", "--model", TINY, "--pairs", "0"), "--pairs must be at least 1"),
    (("bench", "--model", TINY, "--timeout", "-5"), "--timeout must be a positive number"),
    (("bench", "--model", "nonet"), "unknown model 'nonet'"),
    (("report", "--from", "{tmp}"), "no run journal"),
])
def test_bad_usage_exits_2_with_one_line(tmp_path, monkeypatch, capsys, args, message):
    args = tuple(a.format(tmp=tmp_path) for a in args)
    monkeypatch.chdir(ROOT)
    assert cli_main(*args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_bad_usage_exit_status_reaches_the_shell(tmp_path):
    proc = run_verify("bench", "--model", TINY, "--pairs", "0", timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == "verify bench: --pairs must be at least 1, got 0"


def test_resume_refuses_other_run_options(tmp_path, capsys):
    assert cli_main("run", "--resume", str(tmp_path), "--targets", "tosa-fp") == 2
    assert "drop --targets" in capsys.readouterr().err


# 9. Processes a model started survived the per-case timeout.

@pytest.mark.slow
def test_a_timed_out_model_leaves_no_process_behind(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_verify("run", "--models", "none", "--model", "tests/models/faulty.py:spawns_sleeper",
                      "--targets", "tosa-int", *CHEAP, "--timeout", "25", "--out", str(run_dir))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (case,) = json.loads((run_dir / "report.json").read_text())["cases"]
    assert case["verdict"] == "error" and "timed out" in case["error"]
    worker, child = sleeper_pids(run_dir)
    wait_for(lambda: not alive(worker) and not alive(child), 5, "worker and the model's child gone")


def test_launcher_kills_the_group_a_worker_leaves_behind(tmp_path):
    """A worker that exits normally but left a child running: the child goes too."""
    from verify.jobs.launcher import launch

    script = tmp_path / "leaves_child.py"
    script.write_text("import subprocess, sys\n"
                      "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                      "print(child.pid, flush=True)\n")
    code = launch("leaves_child", [], log_path=tmp_path / "log", timeout=60, env={"PYTHONPATH": str(tmp_path)})
    assert code == 0
    child = int((tmp_path / "log").read_text().split()[0])
    wait_for(lambda: not alive(child), 5, "the left-behind child killed")


# 10. Messages.

@pytest.mark.parametrize("factory, message", [
    ("three_items", "got a tuple of 3 items"),
    ("string_inputs", "example_inputs must be a tensor or a tuple of them, got str"),
])
def test_factory_results_are_described_exactly(factory, message):
    from verify.cases import ModelError, build_model

    with pytest.raises(ModelError, match=re.escape(message)):
        build_model(f"tests/models/faulty.py:{factory}")


def test_an_export_failure_is_called_an_export_failure():
    from tests.models.faulty import not_exportable
    from verify import export_program, get_target
    from verify.lowering.quantize import PrepareError

    with pytest.raises(PrepareError, match="^export failed for target tosa-int"):
        export_program(*not_exportable(), get_target("tosa-int"))


def test_a_harness_error_reports_the_time_it_took(monkeypatch, tmp_path):
    """The runner's clock is a fake one that the broken case moves on by 75 s: the report says
    75 s, exactly (a wall time is the case's, from its start to its error)."""
    import types

    from verify.run import runner
    from verify.report.case import Case
    from verify.vocabulary import Verdict

    now = [1000.0]

    def broken(case, options):
        now[0] += 75.0
        raise FileNotFoundError("pinned.stock.pkl")

    monkeypatch.setattr(runner, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))  # runner's name only
    monkeypatch.setattr(runner, "run_case", broken)
    (report,) = runner.run_cases([Case(TINY, "tosa-int")], runner.RunOptions(out_dir=tmp_path))
    assert report.verdict is Verdict.ERROR and "harness error" in report.error
    assert report.wall_seconds == 75.0
