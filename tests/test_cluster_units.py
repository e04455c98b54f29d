"""The parts of verify.cluster that need no cluster: a job's files there and back
(verify.cluster.shipping), which cluster a command asks for (verify.cluster.connect), the
projection's arithmetic (verify.cluster.plan), and a node task's cleanup when its process is
killed (verify.cluster.node). Each runs in a few seconds at most."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from verify.cluster import referenced_files
from verify.cluster.connect import resolve
from verify.cluster.node import TEMPORARY_PREFIX
from verify.cluster.plan import Campaign, Stragglers, project, simulate_once
from verify.cluster.shipping import deliver, pack, unpack
from verify.jobs.launcher import JobFiles
from verify.usage import UsageError

ROOT = str(Path(__file__).resolve().parent.parent)


def test_a_job_travels_to_a_node_folder_and_its_output_comes_back_where_a_local_worker_writes_it(tmp_path, monkeypatch):
    """The job names its folder relatively (as `--out verify-out/x` does) and a model file
    outside it; on the node both are re-spelled in the job description, and what the worker
    writes comes back under the folder here with the node's paths spelled as here."""
    monkeypatch.chdir(tmp_path)
    folder, model = Path("out/case"), tmp_path / "models" / "m.py"
    folder.mkdir(parents=True)
    model.parent.mkdir()
    model.write_text("def make(): ...\n")
    (folder / "old.log").write_text("an earlier run's: not sent\n")
    job = {"out_dir": str(folder), "program": str(folder / "program.pt2"), "model": f"{model}:make",
           "note": f"x {folder}", "name": "pinned", "lowerings": [["stock", "stock", []]]}
    (folder / "pinned.job.json").write_text(json.dumps(job))
    files = JobFiles(folder, (folder / "pinned.job.json", *referenced_files(job["model"]), Path("out/absent")))

    node = tmp_path / "node"
    layout = unpack(pack(files), node)
    shipped = json.loads((layout.folder / "pinned.job.json").read_text())
    assert shipped["out_dir"] == str(layout.folder) and shipped["program"] == str(layout.folder / "program.pt2")
    node_model = Path(shipped["model"].rpartition(":")[0])
    assert shipped["model"].endswith(":make") and node_model.name == "m.py" and node_model.read_text() == model.read_text()
    assert node_model.is_relative_to(node) and shipped["note"] == job["note"]  # only a path at a string's start
    assert not (layout.folder / "old.log").exists()
    assert layout.relocate(str(folder / "pinned.log")) == str(layout.folder / "pinned.log")

    (layout.folder / "pinned.log").write_text(f"lowering {node_model}, writing {layout.folder}/program.pt2\n")
    (layout.folder / "program.pt2").write_bytes(str(layout.folder).encode() + b"\x00\xff")
    (layout.folder / "sub").mkdir()
    (layout.folder / "sub" / "result.json").write_text(json.dumps({"reproducer": str(layout.folder / "r.py")}))
    changed = layout.changed()
    assert set(changed) == {"pinned.log", "program.pt2", "sub/result.json"}  # not the job it was sent
    deliver(changed, folder)
    assert (folder / "pinned.log").read_text() == f"lowering {model}, writing {folder}/program.pt2\n"
    assert json.loads((folder / "sub" / "result.json").read_text()) == {"reproducer": str(folder / "r.py")}
    assert (folder / "program.pt2").read_bytes() == str(layout.folder).encode() + b"\x00\xff"  # binary: as is


def test_references_name_their_files_and_modules_none(tmp_path):
    script = tmp_path / "p.py"
    script.write_text("")
    assert referenced_files(f"{script}:Pass") == (script,)
    assert referenced_files(f"graphspec:{script}") == (script,)
    assert referenced_files("executorch.backends.arm._passes:SomePass") == ()
    assert referenced_files("resnet8") == ()


def test_the_cluster_asked_for():
    assert resolve(None, {}) is None  # the local pool
    assert resolve(None, {"RAY_ADDRESS": ""}) is None
    env = resolve(None, {"RAY_ADDRESS": "10.0.0.5:6379"})
    assert (env.host, env.port, env.source) == ("10.0.0.5", 6379, "RAY_ADDRESS")
    option = resolve("ray://head:10001", {"RAY_ADDRESS": "10.0.0.5:6379"})  # the option wins
    assert (option.address, option.host, option.port, option.source) == ("ray://head:10001", "head", 10001, "--cluster")
    with pytest.raises(UsageError, match=r"^--cluster 'head': expected HOST:PORT"):
        resolve("head", {})


def test_the_projection_is_exact_where_it_can_be_checked_by_hand():
    none = Stragglers(rate=0.0, node_spread=0.0)
    rng = random.Random(0)
    # 8 jobs of 10 s on 4 nodes, 1 s per job besides: two rounds of 11 s
    assert simulate_once((10.0,) * 8, 4, overhead=0.5, startup=0.5, stragglers=none, rng=rng) == pytest.approx(22.0)
    # one long job bounds the wall time however many nodes there are
    assert simulate_once((100.0, 1.0, 1.0), 128, 0.0, 0.0, none, rng) == pytest.approx(100.0)
    # on one node: the sum
    assert simulate_once((3.0, 4.0), 1, 0.0, 0.0, none, rng) == pytest.approx(7.0)
    campaign = Campaign("c", tuple(float(s) for s in range(1, 101)))
    few, many = (project(campaign, n, overhead=0.0, startup=0.0, trials=50) for n in (8, 64))
    assert many.median < few.median and few.p90 >= few.median
    assert 0 < few.efficiency <= 1.0


def test_stragglers_cost_time():
    campaign = Campaign("c", (10.0,) * 200)
    calm = project(campaign, 16, overhead=0.0, startup=0.0, stragglers=Stragglers(rate=0.0, node_spread=0.0), trials=20)
    rough = project(campaign, 16, overhead=0.0, startup=0.0, stragglers=Stragglers(rate=0.2), trials=20)
    assert calm.median == pytest.approx(130.0) and rough.median > calm.median * 1.2


def test_the_gate_projection_takes_its_jobs_from_a_gate_json(tmp_path):
    """Direct checks as measured; the rest of the workers' time shared among the stage searches."""
    from verify.cluster.measure import fuzz_campaign, gate_campaigns

    document = {"run": {"wall_seconds": 100.0, "jobs": 2},
                "passes": [{"how": "direct", "seconds": 10.0, "stage": "edge-fp", "examples": 8},
                           {"how": "direct", "seconds": 30.0, "stage": "edge-fp", "examples": 8},
                           {"how": "batch", "seconds": 0.0, "stage": "edge-fp,quantized", "examples": 16}]}
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(document))
    (today, sharded), note = gate_campaigns(path)
    assert today.job_seconds == (80.0, 80.0, 10.0, 30.0)  # (2 x 100 - 40) / 2 stages
    assert len(sharded.job_seconds) == 16 + 2 and sharded.job_seconds[-2:] == (10.0, 30.0)
    assert "2 direct checks" in note
    fuzz, _ = fuzz_campaign(10, 4, 1.0, measured=[2.0])
    assert fuzz.job_seconds == (8.0, 8.0, 8.0)  # 3 shards of 4 graphs (the last one rounded up)


def test_measure_cluster_projects_from_given_costs_and_refuses_bad_numbers(tmp_path, capsys):
    """`verify measure-cluster` with the overhead given (no cluster started): the projection's table
    and its JSON for every node count asked; a bad number or node list is one line, exit 2, before
    anything is measured."""
    from verify.cli import main

    out = tmp_path / "projection.json"
    assert main(["measure-cluster", "--overhead", "0.1", "--startup", "5", "--gate-json", str(tmp_path / "none"),
                 "--fuzz-graphs", "60", "--nodes", "2,4", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "fuzz, 60 graphs (10 shards of 6)" in printed
    document = json.loads(out.read_text())
    assert [p["nodes"] for p in document["projections"]] == [2, 4]
    assert document["overhead"]["per_job"] == pytest.approx(0.1)
    for bad in (["--nodes", "0"], ["--nodes", "two"], ["--jobs", "0"], ["--fuzz-shard", "0"], ["--overhead", "-1"],
                ["--fuzz-coverage", str(tmp_path / "missing")], ["--json", str(out / "x.json")]):  # `out` is a file
        assert main(["measure-cluster", "--overhead", "0.1", *bad]) == 2, bad
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("verify measure-cluster: "), (bad, lines)


def test_a_node_task_killed_mid_job_leaves_no_folder_behind(tmp_path):
    """Ray kills a cancelled task's process when its driver disconnects, before the task's own
    `finally` runs (a stopped `verify run --cluster` left its node folder in a full test run):
    the node's janitor removes the folder whatever ends the task. Fails without the janitor."""
    from tests.test_gate_workers import processes_mentioning
    from tests.waiting import wait_for

    node_temp, folder = tmp_path / "node-tmp", tmp_path / "job"
    node_temp.mkdir()
    folder.mkdir()
    marker = f"verify-janitor-test-{os.getpid()}-{time.time_ns()}"
    task = textwrap.dedent(f"""
        from pathlib import Path
        from verify.cluster.node import run_job
        from verify.cluster.shipping import pack
        from verify.jobs.launcher import JobFiles, Worker

        folder = Path({str(folder)!r})
        marker = {marker[:8]!r} + {marker[8:]!r}  # whole only in the worker's command line
        sleeper = Worker("timeit", ("-n", "1", "-r", "1", "import time; time.sleep(120)  # " + marker), folder / "w.log")
        run_job(sleeper, pack(JobFiles(folder)))
        """)
    proc = subprocess.Popen([sys.executable, "-c", task], env=dict(os.environ, TMPDIR=str(node_temp), PYTHONPATH=ROOT))
    try:
        wait_for(lambda: processes_mentioning(marker), 60, "the job's worker started", proc=proc, interval=0.1)
        assert [f.name[:len(TEMPORARY_PREFIX)] for f in node_temp.iterdir()] == [TEMPORARY_PREFIX]
        proc.kill()  # as Ray kills it: no finally, no handler
        proc.wait()
        wait_for(lambda: not list(node_temp.iterdir()), 10, "the killed task's folder removed", interval=0.1)
    finally:
        proc.kill()
        for pid in processes_mentioning(marker):  # the worker: no die_with_parent in timeit
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_where_a_batch_job_ran_comes_back_with_it_whatever_the_log_level(tmp_path, caplog):
    """verify.cluster.batch read a job's node from the backend's INFO log line, so under `-q`
    (WARNING) every placement was unknown. The backend now tells the launcher (on_placed), and
    the job's result carries it. A stand-in backend runs the worker here and says where."""
    import logging

    from verify.cluster.batch import PytestJob, run_batch
    from verify.jobs import launcher

    class HereButNamed:
        def run(self, worker, files, cancel, on_placed=None):
            code = launcher.run_here(worker, cancel)
            if on_placed is not None:
                on_placed(launcher.Placement("0123456789ab", "node-a"))
            return code

    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    jobs = [PytestJob(f"job{i}", (str(tmp_path / "test_one.py"), "-q", "-p", "no:cacheprovider"),
                      JobFiles(tmp_path), tmp_path / f"job{i}.log", cwd=tmp_path) for i in range(2)]
    returned = []
    caplog.set_level(logging.WARNING)
    with launcher.using_backend(HereButNamed()):
        assert run_batch(jobs, 2, returned.append) == []
    assert sorted(r.job.name for r in returned) == ["job0", "job1"]
    assert all(r.returncode == 0 for r in returned), [r.job.log_path.read_text() for r in returned]
    assert {r.placement for r in returned} == {launcher.Placement("0123456789ab", "node-a")}
