"""Campaigns on a Ray cluster (issue 34): a real two-node cluster on loopback, one CPU per node,
started and stopped by these tests (verify.cluster.loopback), against the local pool.

What must hold, each asserted by a test that fails without it:
- `verify run` and `verify gate` on the cluster give the local pool's verdicts, with the same
  files in the run folder (the nodes share this machine's file system, but nothing relies on it:
  every job runs in a node folder of its own and its files travel, verify.cluster.shipping);
- a node killed while it runs a job: the job runs again on the other node, every case is
  journaled once, the verdicts stand;
- an address nothing answers at: exit 2, one line, before any work (no run folder);
- a job past its timeout on a node: an error verdict, and its process gone;
- a run stopped on the cluster: its node's worker and what the model started killed, the
  finished cases journaled, `--resume` (on the cluster) runs the rest;
- the whole cluster gone mid-job: the run stops, the job in flight stays to do for `--resume`.
The runs are the cheapest there are (the tiny model, gate graphs of one or two ops); the local
and the cluster run of a comparison go side by side."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from tests.test_gate_workers import processes_mentioning
from tests.waiting import wait_for
from verify.gate.worker import FAULT_VARIABLE
from verify.cluster.loopback import LoopbackCluster
from verify.cluster.node import TEMPORARY_PREFIX

ROOT = Path(__file__).resolve().parents[1]
TINY = "tests/models/tiny.py"
GATE_PASSES = "tests/passes/gate_passes.py"


@pytest.fixture(scope="module")
def cluster():
    with LoopbackCluster(2) as started:
        yield started


def verify(*args: str, **env: str) -> subprocess.Popen:
    environment = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.Popen([sys.executable, "-m", "verify", *args], cwd=ROOT, env={**environment, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 400) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def journal_cases(run_dir: Path) -> list[dict]:
    records = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in records if r["record"] == "case"]


def verdicts(run_dir: Path) -> dict[str, tuple]:
    return {c["model"]: (c["verdict"], c["null_outcome"], tuple(sorted(c["checks"].items())))
            for c in json.loads((run_dir / "report.json").read_text())["cases"]}


def case_files(run_dir: Path) -> set[str]:
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file() and p.parent != run_dir}


def node_folders(node: str) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"{TEMPORARY_PREFIX}{node[:12]}-*"))


def remove_the_second_node_once_busy(cluster: LoopbackCluster, proc: subprocess.Popen, seconds: float) -> str:
    """Kill the cluster's second node as soon as a job of `proc`'s runs there (its folder in the
    temporary directory); its id. The caller adds a node back for the next test."""
    second = cluster.nodes[1]
    wait_for(lambda: node_folders(second), seconds, "a job on the second node", proc=proc)
    cluster.remove(1)
    return second


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("command", ["run", "gate"])
@pytest.mark.parametrize("how", ["option", "RAY_ADDRESS"])
def test_an_unreachable_cluster_is_exit_2_before_any_work(tmp_path, command, how):
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    out = tmp_path / "out"
    args = ["--models", "none", "--model", f"{TINY}:make"] if command == "run" else ["--pass", f"{GATE_PASSES}:NoRetracePass"]
    started = time.monotonic()
    if how == "option":
        proc = verify(command, *args, "--out", str(out), "--cluster", address)
    else:
        proc = verify(command, *args, "--out", str(out), RAY_ADDRESS=address)
    code, stdout, err = finish(proc, timeout=120)
    source = "--cluster" if how == "option" else "RAY_ADDRESS"
    assert code == 2, err
    assert err.splitlines() == [f"verify{'' if command == 'run' else ' gate'}: {source} {address}: cannot reach a "
                                f"Ray cluster there (Connection refused); nothing was run"], err
    assert not out.exists() and stdout == ""
    assert time.monotonic() - started < 60


def test_run_on_the_cluster_gives_the_local_verdicts_even_when_a_node_dies_mid_run(cluster, tmp_path):
    """Two cases (the tiny model, identical with its null check; a broken factory, an error whose
    null worker waits for a program that never comes and is cancelled), locally and on the
    cluster side by side. The second node is killed as soon as it runs a job: that job runs
    again on the head; every case is journaled once; verdicts and case files are the local ones."""
    args = ["run", "--models", "none", "--model", f"{TINY}:make", "--model", f"{TINY}:broken", "--targets", "tosa-int",
            "--reference-sets", "0"]
    local = verify(*args, "--out", str(tmp_path / "local"))
    remote = verify(*args, "--out", str(tmp_path / "cluster"), "--cluster", cluster.address, "-v")
    second = remove_the_second_node_once_busy(cluster, remote, 240)
    try:
        code, _, err = finish(remote)
        local_code, _, local_err = finish(local)
    finally:
        cluster.add()  # two nodes again for the next test
    assert code == local_code == 1, err[-3000:] + local_err[-3000:]  # the broken factory is an error case
    assert verdicts(tmp_path / "cluster") == verdicts(tmp_path / "local")
    assert [v[0] for v in verdicts(tmp_path / "local").values()] == ["identical", "error"]
    assert sorted(c["model"] for c in journal_cases(tmp_path / "cluster")) == [f"{TINY}:broken", f"{TINY}:make"]
    assert case_files(tmp_path / "cluster") == case_files(tmp_path / "local")
    ran = [line for line in err.splitlines() if line.startswith("cluster: ") and " ran on node " in line]
    assert ran and not any(f"ran on node {second[:12]}" in line for line in ran), ran  # its job came back from the head
    assert not processes_mentioning(f"{TEMPORARY_PREFIX}{second[:12]}")
    for folder in node_folders(second):  # what the lost machine's disk held: not ours to leave in /tmp
        shutil.rmtree(folder, ignore_errors=True)  # its janitor may have been quicker


def test_gate_on_the_cluster_gives_the_local_verdicts(cluster, tmp_path):
    args = ["gate", "--examples", "1", "--ops", "abs,neg", "--max-ops", "2", "--min-evidence", "1", "--seed", "0",
            "--shrink-seconds", "5",
            "--pass", f"{GATE_PASSES}:UndeclaredRewritePass", "--pass", f"{GATE_PASSES}:ChangeDtypePass"]
    local = verify(*args, "--out", str(tmp_path / "local"), "-j", "2")
    remote = verify(*args, "--out", str(tmp_path / "cluster"), "--cluster", cluster.address, "-v")
    code, _, err = finish(remote)
    local_code, _, local_err = finish(local)
    assert code == local_code == 1, err[-3000:] + local_err[-3000:]

    def summary(out: Path) -> list[tuple]:
        passes = json.loads((out / "gate.json").read_text())["passes"]
        return [(p["name"], p["verdict"], p["examples"], sorted(Path(r).relative_to(out).as_posix()
                                                                for r in p["reproducers"].values()))
                for p in passes]

    assert summary(tmp_path / "cluster") == summary(tmp_path / "local")
    assert [s[1] for s in summary(tmp_path / "local")] == ["unsound-copy", "sound"]
    reproducer = tmp_path / "cluster" / "reproducers" / "UndeclaredRewritePass-unsound-copy.py"
    assert reproducer.is_file() and TEMPORARY_PREFIX not in reproducer.read_text()
    ran = {line.split(" ran on node ")[1][:12] for line in err.splitlines() if " ran on node " in line}
    assert ran == {node[:12] for node in cluster.nodes}, ran  # one job on each node: -j is the cluster's 2 CPUs
    assert "2 worker(s) at a time" in err
    # the worker's records were relayed to the gate's terminal, as from a local worker
    assert "UndeclaredRewritePass [copy] example 1/1" in err


def test_a_job_past_its_timeout_on_a_node_is_an_error_and_its_processes_are_gone(cluster, tmp_path):
    """A gate worker that hangs (its test-only fault point, before it imports torch; the variable
    travels with the job as the harness's own settings do) is killed on its node at
    --pass-timeout: an error verdict naming the timeout, the other pass's verdict kept."""
    out = tmp_path / "out"
    code, _, err = finish(verify("gate", "--examples", "1", "--ops", "abs,neg", "--max-ops", "2", "--min-evidence", "1",
                                 "--seed", "0", "--pass-timeout", "6", "--out", str(out), "--cluster", cluster.address,
                                 "--pass", f"{GATE_PASSES}:NoRetracePass", "--pass", f"{GATE_PASSES}:ChangeDtypePass",
                                 **{FAULT_VARIABLE: "NoRetracePass:hang,ChangeDtypePass:exit"}))
    assert code == 1, err[-3000:]
    hung, crashed = json.loads((out / "gate.json").read_text())["passes"]
    assert hung["verdict"] == "error" and hung["reason"].startswith("<worker-timeout>: no verdict within 6 s"), hung
    assert TEMPORARY_PREFIX not in hung["reason"]  # the log it names is the one here
    assert (out / "workers" / "000-NoRetracePass.log").is_file()
    assert crashed["verdict"] == "error" and crashed["reason"].startswith("<worker-crash: exit 3>"), crashed
    assert not [pid for node in cluster.nodes for pid in processes_mentioning(f"{TEMPORARY_PREFIX}{node[:12]}")]


def test_a_run_stopped_on_the_cluster_resumes_on_the_cluster(cluster, tmp_path):
    """SIGINT while a job runs on a node: its worker and what the model started are killed there,
    the finished case is journaled, exit 130; `--resume` on the cluster runs only the missing case."""
    marker = f"verify-cluster-stop-{os.getpid()}-{time.time_ns()}"
    started, hangs = tmp_path / "started", tmp_path / "hang-this-time"  # the test's switches, not the harness's
    model = tmp_path / "stops.py"
    model.write_text(textwrap.dedent(f"""
        import subprocess, sys, time
        from pathlib import Path

        def quick():
            raise RuntimeError("broken on purpose")

        def hangs():
            if Path({str(hangs)!r}).exists():
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", {marker!r}])
                Path({str(started)!r}).touch()
                time.sleep(600)
            raise RuntimeError("broken on purpose, this time at once")
        """))
    hangs.touch()
    run_dir = tmp_path / "run"
    before = set(Path(tempfile.gettempdir()).glob(f"{TEMPORARY_PREFIX}*"))
    proc = verify("run", "--models", "none", "--model", f"{model}:quick", "--model", f"{model}:hangs",
                  "--targets", "tosa-int", "--null-seed", "-1", "--reference-sets", "0", "--out", str(run_dir),
                  "--cluster", cluster.address, "-j", "1")  # one case at a time: the quick one has finished
    wait_for(started.exists, 180, "the second case started", proc=proc)
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc, timeout=120)
    assert code == 130, err[-3000:]
    assert [c["model"] for c in journal_cases(run_dir)] == [f"{model}:quick"]
    # the node's launcher kills the group as the cancelled task unwinds
    wait_for(lambda: not processes_mentioning(marker), 10, "the stopped job's processes gone")

    def leftovers():  # this run's node folders (an earlier run's, left in /tmp, are not this test's)
        return [f for f in Path(tempfile.gettempdir()).glob(f"{TEMPORARY_PREFIX}*")
                if f not in before and any(f.rglob(model.name))]

    # the node removes it as the task unwinds: slower on busy cores
    wait_for(lambda: not leftovers(), 30, "the stopped job's node folder removed", interval=0.5)

    hangs.unlink()
    code, _, err = finish(verify("run", "--resume", str(run_dir), "--cluster", cluster.address, "-v"))
    assert code == 1, err[-3000:]  # both cases are errors (broken factories)
    assert "1 finished before, resumed" in err and " ran on node " in err
    assert [(c["model"], c["verdict"]) for c in journal_cases(run_dir)] == [(f"{model}:quick", "error"),
                                                                            (f"{model}:hangs", "error")]


def test_a_gate_stopped_on_the_cluster_keeps_the_evidence_its_node_gathered(cluster, tmp_path):
    """SIGINT while a pass check runs on a node: the job is asked to stop (not cancelled), its node
    kills the worker and sends back the evidence written so far, and the pass is an error that
    keeps it, as a local worker's is (tests/test_gate_interrupt.py). Fails when the driver only
    cancels the task: a cancelled task returns nothing."""
    out = tmp_path / "out"
    before = set(Path(tempfile.gettempdir()).glob(f"{TEMPORARY_PREFIX}*"))
    proc = verify("gate", "--examples", "40", "--ops", "abs,neg", "--max-ops", "2", "--min-evidence", "1", "--seed", "0",
                  "--out", str(out), "--cluster", cluster.address, "--pass", f"{GATE_PASSES}:InsertBeforeRetracePass")

    def evidence_on_a_node() -> bool:  # a loopback cluster's node folders are on this machine
        with contextlib.suppress(OSError, ValueError):  # a node folder going, a file being replaced
            return any(json.loads(partial.read_text()).get("examples", 0) >= 1
                       for folder in set(Path(tempfile.gettempdir()).glob(f"{TEMPORARY_PREFIX}*")) - before
                       for partial in folder.rglob("*.partial.json"))
        return False

    wait_for(evidence_on_a_node, 240, "evidence gathered on a node", proc=proc)
    assert proc.poll() is None, "the gate ended before it was stopped"
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc, timeout=120)
    assert code == 130, err[-3000:]
    (stopped,) = json.loads((out / "gate.json").read_text())["passes"]
    assert stopped["verdict"] == "error" and stopped["unfinished"] == "stopped", stopped
    assert 1 <= stopped["examples"] < 80, stopped  # the node's evidence so far, not the whole search
    assert list((out / "workers").glob("*.partial.json")), "the partial evidence did not come back"


def test_a_cluster_that_goes_away_stops_the_run_and_resume_finishes_it(tmp_path):
    """The whole cluster gone mid-job is no case's fault: the job in flight is not journaled (not an
    error verdict that --resume would skip), the run stops with one line saying why, and
    `--resume` (here, locally) finishes it. A cluster of its own: the module's must stay up."""
    run_dir = tmp_path / "run"
    args = ["--models", "none", "--model", f"{TINY}:broken", "--targets", "tosa-int", "--null-seed", "-1",
            "--reference-sets", "0"]
    with LoopbackCluster(1) as doomed:
        proc = verify("run", *args, "--out", str(run_dir), "--cluster", doomed.address)
        wait_for(lambda: node_folders(doomed.nodes[0]), 120, "the job started on the node", proc=proc, interval=0.1)
    code, _, err = finish(proc, timeout=180)  # the cluster was shut down with the job in flight
    assert code == 1, err[-3000:]
    assert "cluster: the Ray cluster stopped answering" in err and "verify run --resume" in err, err[-3000:]
    assert journal_cases(run_dir) == []
    for folder in node_folders(doomed.nodes[0]):  # what the lost machine's disk held: not ours to leave in /tmp
        shutil.rmtree(folder, ignore_errors=True)  # its janitor may have been quicker
    code, _, err = finish(verify("run", "--resume", str(run_dir)))
    assert code == 1 and [c["verdict"] for c in journal_cases(run_dir)] == ["error"], err[-3000:]
