"""The fuzz campaign and the peer suites on a Ray cluster (issue 34): a real two-node cluster on
loopback, one CPU per node, started and stopped here (verify.cluster.loopback).

What must hold, each asserted by a test that fails without it:
- `verify fuzz --cluster`: every cell is a job (cells on both nodes), each cell's coverage lines
  merged into the campaign's coverage folder exactly once, also when a node dies with a cell in
  flight (it runs again on the other), and the campaign's one coverage summary printed;
- a failure found on a node (a fault planted in fastpass's lowering there,
  tests/cluster_node_plugin.py) is saved as a reproducer in the campaign's reproducers folder,
  naming that folder, and its Hypothesis database entries come back to the campaign's database;
- a campaign stopped (SIGINT) on the cluster: exit 130, the cells that finished merged and
  summarized, the others named and merged never, nothing left on the nodes;
- `verify peer --cluster`: each mode's shards are jobs (on both nodes), their reports come back
  to the run's folder and each mode's outcomes are merged as locally;
- an address nothing answers at: exit 2, one line, before any work (fuzz and peer).
Every job's pytest is checked to read and write in its node folder only (the loopback cluster's
nodes share this machine's files, which would hide a job handed the harness's paths).
The campaigns are the cheapest there are: tosa-fp (two cells), one graph each, of one or two ops;
peer over a suite of our own (two files of two trivial tests, as tests/test_peer_share.py's)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.cluster_node_plugin import NODE_FOLDER_VARIABLE, PLANTED_VARIABLE
from tests.test_cluster import free_port, remove_the_second_node_once_busy
from tests.waiting import wait_for
from verify.cluster.loopback import LoopbackCluster
from verify.cluster.node import TEMPORARY_PREFIX

ROOT = Path(__file__).resolve().parents[1]
TINY_CAMPAIGN = ("--targets", "tosa-fp", "--shards", "1", "--examples", "1")
CELLS = ("tosa-fp-shard0of2", "tosa-fp-shard1of2")


@contextlib.contextmanager
def environment(**values: str):
    previous = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def cluster():
    # The nodes' pytest processes load the tests' plugin, its checks armed only in a job whose
    # environment asks for them (their variables travel with the job from the harness).
    with environment(PYTEST_PLUGINS="tests.cluster_node_plugin"):
        started = LoopbackCluster(2).__enter__()
    try:
        yield started
    finally:
        started.__exit__(None, None, None)


def harness_environment(**env: str) -> dict[str, str]:
    """The harness's environment: no cluster but the one given, every job's pytest checked to read
    and write in its node folder only (tests/cluster_node_plugin.py), and `env`."""
    kept = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", PLANTED_VARIABLE)}
    return {**kept, NODE_FOLDER_VARIABLE: "1", **env}


def verify(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify", *args], cwd=ROOT, env=harness_environment(**env),
                          capture_output=True, text=True, timeout=600)


def fuzz_on(cluster, tmp_path: Path, *extra: str, **env: str) -> subprocess.CompletedProcess:
    return verify("fuzz", *TINY_CAMPAIGN, *extra, "--coverage", str(tmp_path / "coverage"), "--reproducers",
                  str(tmp_path / "reproducers"), "--database", str(tmp_path / "database"), "--cluster",
                  cluster.address, **env)


def progress(stdout: str) -> dict[str, tuple[str, int, int]]:
    """The finished cells' progress lines: cell -> (node, graphs, divergences)."""
    found = re.findall(r"^fuzz: \[\d+/\d+\] (\S+) on node (\w+) \(.*\): [\d.]+ s, (\d+) graph\(s\), (\d+) divergence",
                       stdout, re.M)
    return {cell: (node, int(graphs), int(divergences)) for cell, node, graphs, divergences in found}


def node_folders(node: str) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"{TEMPORARY_PREFIX}{node[:12]}-*"))


def node_folders_left(cluster) -> list[Path]:
    return [folder for node in cluster.nodes for folder in node_folders(node)]


def lines_of(folder: Path) -> list[str]:
    return sorted(line for path in folder.glob("coverage-*.jsonl") for line in path.read_text().splitlines() if line)


def test_a_fuzz_campaign_on_the_cluster_merges_every_cell_once_even_when_a_node_dies(cluster, tmp_path):
    """The second node is killed as soon as a cell runs there: that cell runs again on the head,
    and every cell's coverage lines are merged exactly once (the lost attempt's never come back)."""
    coverage = tmp_path / "coverage"
    proc = subprocess.Popen([sys.executable, "-m", "verify", "fuzz", *TINY_CAMPAIGN, "--max-ops", "2", "--seed", "0",
                             "--coverage", str(coverage), "--reproducers", str(tmp_path / "reproducers"),
                             "--database", str(tmp_path / "database"), "--cluster", cluster.address],
                            cwd=ROOT, env=harness_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = remove_the_second_node_once_busy(cluster, proc, 120)
    try:
        stdout, stderr = proc.communicate(timeout=400)
    finally:
        cluster.add()  # two nodes again for the next test
    for folder in node_folders(second):  # what the lost machine's disk held: not ours to leave in /tmp
        shutil.rmtree(folder, ignore_errors=True)  # its janitor may have been quicker
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    cells = progress(stdout)
    assert sorted(cells) == list(CELLS), stdout[-3000:]
    assert {node for node, _, _ in cells.values()} == {cluster.nodes[0][:12]}  # the lost cell came back from the head
    cell_lines = sorted(line for cell in CELLS for line in lines_of(coverage / "cells" / cell / "coverage"))
    assert len(cell_lines) == sum(graphs for _, graphs, _ in cells.values()) == 2  # one graph per cell
    assert lines_of(coverage) == cell_lines  # every graph of every cell merged, once
    graphs = len(cell_lines)
    assert f"pass coverage, tosa-fp: {graphs} graphs" in stdout
    (verdict,) = [line for line in stdout.splitlines() if line.startswith("coverage verdict: ")]
    assert f"{graphs} graphs on tosa-fp" in verdict
    assert "fuzz: 2 of 2 cells finished on the cluster" in stdout
    assert not list((tmp_path / "reproducers").glob("*.py")) and not node_folders_left(cluster)


def test_a_failure_found_on_a_node_is_a_reproducer_here_and_its_examples_come_back(cluster, tmp_path):
    """Not seeded: Hypothesis neither reads nor writes the database of a seeded test."""
    done = fuzz_on(cluster, tmp_path, "--max-ops", "1", **{PLANTED_VARIABLE: "1"})
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    cells = progress(done.stdout)
    assert sorted(cells) == list(CELLS) and all(d == 1 for _, _, d in cells.values()), done.stdout[-3000:]
    assert {node for node, _, _ in cells.values()} == {node[:12] for node in cluster.nodes}  # one cell on each node
    reproducers = sorted((tmp_path / "reproducers").glob("graph-*.py"))
    assert 1 <= len(reproducers) <= 2  # one per cell (the same minimal graph, shrunk twice, is one file)
    for reproducer in reproducers:
        text = reproducer.read_text()
        assert "payload" in text and f"--model {reproducer}:make_model" in text, text[:2000]
        assert TEMPORARY_PREFIX not in text and "/cells/" not in text
        assert f"minimal reproducer: {reproducer}" in done.stdout or reproducer.name in done.stdout
    for cell in CELLS:  # each cell's failing example, saved on its node, is in the campaign's database
        entries = [p for p in (tmp_path / "database" / cell).rglob("*") if p.is_file()]
        assert entries, f"no database entry of {cell} came back"
    assert not node_folders_left(cluster)


def test_a_campaign_stopped_on_the_cluster_keeps_and_summarizes_the_cells_that_finished(cluster, tmp_path):
    """Four cells on two CPUs, SIGINT once the first has returned: the others are running or waiting."""
    coverage = tmp_path / "coverage"
    proc = subprocess.Popen([sys.executable, "-m", "verify", "fuzz", "--targets", "tosa-fp", "--shards", "2",
                             "--examples", "1", "--max-ops", "1", "--seed", "0", "--coverage", str(coverage),
                             "--reproducers", str(tmp_path / "reproducers"), "--database", str(tmp_path / "database"),
                             "--cluster", cluster.address], cwd=ROOT, env=harness_environment(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    printed = []
    for line in proc.stdout:  # the progress line of the first cell back
        printed.append(line)
        if line.startswith("fuzz: [1/4] "):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    stdout = "".join(printed) + out
    assert proc.returncode == 130, stdout[-3000:] + err[-3000:]
    finished = progress(stdout)
    assert 1 <= len(finished) < 4, stdout[-3000:]
    unfinished = sorted(set(f"tosa-fp-shard{k}of4" for k in range(4)) - set(finished))
    assert f"fuzz: {len(finished)} of 4 cells finished on the cluster" in stdout
    assert f"not finished: {', '.join(unfinished)}" in stdout  # named, in cell order
    assert lines_of(coverage) == sorted(line for cell in finished for line in lines_of(coverage / "cells" / cell / "coverage"))
    assert f"pass coverage, tosa-fp: {len(lines_of(coverage))} graphs" in stdout
    assert "fuzz: stopped by SIGINT" in err
    # the nodes remove the stopped jobs' folders as they unwind
    wait_for(lambda: not node_folders_left(cluster), 30, "the stopped jobs' node folders removed", interval=0.5)


@pytest.mark.parametrize("command", ["fuzz", "peer"])
@pytest.mark.parametrize("how", ["option", "RAY_ADDRESS"])
def test_an_unreachable_cluster_is_exit_2_before_any_work(tmp_path, command, how):
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    out = tmp_path / "out"
    args = (["fuzz", *TINY_CAMPAIGN, "--coverage", str(out)] if command == "fuzz" else ["peer", "--out", str(out)])
    if how == "option":
        done = verify(*args, "--cluster", address)
    else:
        done = verify(*args, RAY_ADDRESS=address)
    source = "--cluster" if how == "option" else "RAY_ADDRESS"
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"verify {command}: {source} {address}: cannot reach a Ray cluster there "
                                        "(Connection refused); nothing was run"], done.stderr
    assert not out.exists() and done.stdout == ""


def test_peer_on_the_cluster_runs_each_modes_shards_as_jobs_and_merges_their_reports(cluster, tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("one", "two"):
        (suite / f"test_{name}.py").write_text(f"def test_{name}_a():\n    pass\n\n\ndef test_{name}_b():\n    pass\n")
    out = tmp_path / "out"
    done = verify("peer", str(suite), "-n", "0", "--modes", "stock,fastpass", "--shards", "2", "--out", str(out),
                  "--cluster", cluster.address)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = out.iterdir()
    ran = dict(re.findall(r"^cluster: (\S+)\.log ran on node (\w+) ", done.stderr, re.M))
    jobs = [f"{mode}.shard{k}" for mode in ("stock", "fastpass") for k in (0, 1)]
    assert sorted(ran) == sorted(jobs), done.stderr[-3000:]  # the collection probe ran here
    assert set(ran.values()) == {node[:12] for node in cluster.nodes}  # the jobs spread over both nodes
    for job in jobs:  # what each pytest process wrote came back to the run's folder
        assert (run / f"{job}.json").is_file() and (run / f"{job}.log").is_file() and (run / f"{job}.xml").is_file()
    document = json.loads((run / "peer.json").read_text())
    assert document["complete"] and document["mismatches"] == []
    assert document["outcome_counts"] == {"stock": {"passed": 4}, "fastpass": {"passed": 4}}
    assert not node_folders_left(cluster)
