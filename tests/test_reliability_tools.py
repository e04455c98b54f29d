"""The tools around the harness never lose a result either (issue 32, defects 7-13): the
bench and verify.peer stopped by a signal, peer killed outright, two peers in one second, the
hash seed of peer's modes, the pytest plugin's output paths and lost xdist workers, replay of
files that are not (or are malformed) reproducers, and the launcher's memory limit.

Each test reproduces one defect first; the numbers are the issue's. Nothing here lowers a
model: the suites are tiny test files of our own, and the bench's lowerings are scripted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent


def alive(pid: int) -> bool:
    """Running (a zombie, which holds nothing, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def group_alive(group: int) -> list[int]:
    """The live (not zombie) processes of process group `group`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(entry.name))
    return found


# ---- the launcher's memory limit ------------------------------------------------------------

GROWS = ("import subprocess, sys, time\n"
         # a child of the worker holds the memory: the limit is on the whole group
         "child = subprocess.Popen([sys.executable, '-c', 'import time; b = bytearray(400 << 20); b[::4096] = b\"x\" * len(b[::4096]); time.sleep(600)'])\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(600)\n")


def test_a_worker_group_over_the_memory_limit_is_killed_and_the_limit_named(tmp_path):
    from verify.jobs.launcher import MIB, WorkerMemoryExceeded, launch_command

    log = tmp_path / "log"
    # Not WorkerTimeout: the limit stopped the group, not the 120 s (the group sleeps for 600).
    with pytest.raises(WorkerMemoryExceeded) as caught:
        launch_command([sys.executable, "-c", GROWS], log_path=log, timeout=120, memory_limit=200 * MIB)
    assert caught.value.limit == 200 * MIB and caught.value.resident > 200 * MIB
    assert "memory limit" in str(caught.value) and "over the limit of 200 MiB" in str(caught.value)
    child = int(log.read_text().split()[0])
    wait_for(lambda: not alive(child), 5, "the child holding the memory killed")
    assert "memory limit exceeded" in log.read_text().splitlines()[-1]


def test_the_memory_limit_is_on_by_default_and_spares_a_small_worker(tmp_path):
    from verify.jobs.launcher import DEFAULT_MEMORY_LIMIT, GIB, launch, launch_command

    assert 8 * GIB <= DEFAULT_MEMORY_LIMIT <= 64 * GIB
    assert launch.__kwdefaults__["memory_limit"] == DEFAULT_MEMORY_LIMIT
    assert launch_command.__kwdefaults__["memory_limit"] == DEFAULT_MEMORY_LIMIT
    code = launch_command([sys.executable, "-c", "b = bytearray(50 << 20); b[::4096] = b'x' * len(b[::4096])"],
                          log_path=tmp_path / "log", timeout=60)
    assert code == 0


def test_launch_command_runs_any_command_and_its_group_dies_with_the_launcher(tmp_path):
    """The command's whole group (a child it started too) goes when the process that launched it
    is killed outright: what verify.peer's pytest processes rely on."""
    script = tmp_path / "holder.py"
    script.write_text(
        "import sys, threading\n"
        "from pathlib import Path\n"
        "from verify.jobs.launcher import launch_command\n"
        "threading.Thread(target=launch_command, daemon=True, kwargs=dict(command=[sys.executable, '-c', "
        "'import os, subprocess, sys, time; c = subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(600)\"]); "
        "print(os.getpid(), c.pid, flush=True); time.sleep(600)'], log_path=Path(sys.argv[1]), timeout=None)).start()\n"
        "threading.Event().wait()\n")
    log = tmp_path / "log"
    holder = subprocess.Popen([sys.executable, str(script), str(log)], env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        wait_for(lambda: log.exists() and len(log.read_text().split()) == 2, 60, "the command started",
                 proc=holder)
        command, child = map(int, log.read_text().split())
        assert os.getpgid(command) == os.getpgid(child) != os.getpgid(holder.pid)
        holder.kill()
        holder.wait()
        wait_for(lambda: not alive(command) and not alive(child), 5, "the command and its child gone")
    finally:
        holder.kill()


# ---- 7. bench stopped by a signal -----------------------------------------------------------

class StoppedDuringPair:
    """A scripted bench lowering (the `lowering` seam of run_bench): pairs before `stop_at` lower
    (synthetic runs), then the signal arrives while a lowering runs, as verify.jobs.launcher sees it:
    the handler stops the run and the launch in flight raises RunStopped."""

    def __init__(self, stop_at: int, signum: int = signal.SIGINT):
        self.stop_at, self.signum, self.calls = stop_at, signum, 0

    def __call__(self, options, case, mode, features, tag):
        from tests.test_bench_results import worker_run
        from verify.jobs.launcher import RunStopped

        self.calls += 1
        if int(tag.split("-")[0].removeprefix("pair")) == self.stop_at:
            os.kill(os.getpid(), self.signum)  # the handler installed by stop_on_signals runs here
            raise RunStopped("stopped")
        return worker_run(mode, 2.0, 1.0)


@pytest.fixture
def fresh_launcher():
    from verify.jobs import launcher

    launcher.reset_after_stop()
    yield launcher
    launcher.reset_after_stop()


def test_a_stopped_bench_returns_the_pairs_it_finished_marked_incomplete(tmp_path, fresh_launcher):
    from verify.bench.run import BenchOptions, run_bench
    from verify.report.bench.table import format_table

    options = BenchOptions(models=("random3:1",), targets=("tosa-int", "ethos-u55"), pairs=3,
                           work_dir=tmp_path / "work")
    with fresh_launcher.stop_on_signals():
        result = run_bench(options, lowering=StoppedDuringPair(stop_at=1))
    assert [len(case.pairs) for case in result.cases] == [1, 1]
    assert result.stopped_by == "SIGINT" and not result.complete
    document = result.to_json()
    assert document["complete"] is False and document["stopped_by"] == "SIGINT"
    assert "INCOMPLETE: stopped by SIGINT after 2 finished pair(s) of 6" in format_table(result)


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_bench_interrupted_in_pair_2_writes_json_and_table_of_pair_1(tmp_path, monkeypatch, capsys, fresh_launcher,
                                                                     signum, status):
    """Issue 32 #7: SIGINT during pair 2 gave exit 130 and no --json."""
    import functools

    from verify.bench import run as bench_run
    from verify.cli import main

    script = StoppedDuringPair(stop_at=1, signum=signum)
    monkeypatch.setattr(bench_run, "run_bench", functools.partial(bench_run.run_bench, lowering=script))
    out = tmp_path / "bench.json"
    code = main(["bench", "--model", "random3:1", "--target", "tosa-int", "--pairs", "3", "--json", str(out),
                 "--work-dir", str(tmp_path / "work")])
    assert code == status
    document = json.loads(out.read_text())
    assert document["complete"] is False and document["stopped_by"] == signal.Signals(signum).name
    (case,) = document["cases"]
    assert case["pairs"] == 1 and case["pair_runs"][0]["identical"]
    captured = capsys.readouterr()
    assert "lower() s" in captured.out and f"INCOMPLETE: stopped by {signal.Signals(signum).name}" in captured.out
    assert f"stopped by {signal.Signals(signum).name}" in captured.err and "Traceback" not in captured.err


def test_bench_memory_limit_reaches_every_lowering_and_a_breach_fails_the_case(tmp_path, monkeypatch, capsys):
    from verify.jobs import launcher
    from verify.bench import run as bench_run
    from verify.bench.run import BenchCase, BenchError, BenchOptions, lower_in_fresh_process
    from verify.bench.models import BenchModel
    from verify.cli import main
    from verify.lowering.mode import Mode

    assert main(["bench", "--memory-limit", "-1", "--work-dir", str(tmp_path)]) == 2
    assert "--memory-limit must be 0 (no limit) or more GiB" in capsys.readouterr().err
    chosen = []

    def capture(options, progress):
        chosen.append(options.memory_limit)
        raise BenchError("captured")

    monkeypatch.setattr(bench_run, "run_bench", capture)
    for given, limit in (([], launcher.DEFAULT_MEMORY_LIMIT), (["--memory-limit", "0.5"], launcher.GIB // 2),
                         (["--memory-limit", "0"], None)):
        assert main(["bench", *given, "--work-dir", str(tmp_path)]) == 1
        assert chosen.pop() == limit

    def over_the_limit(module, args, **kwargs):
        raise launcher.WorkerMemoryExceeded(kwargs["memory_limit"], 3 * launcher.GIB)

    monkeypatch.setattr(launcher, "launch", over_the_limit)
    options = BenchOptions(memory_limit=2 * launcher.GIB, work_dir=tmp_path)
    with pytest.raises(BenchError, match=r"pair0: memory limit exceeded: .* 3 GiB .* limit of 2 GiB"):
        lower_in_fresh_process(options, BenchCase(BenchModel("m", "m"), "tosa-int"), Mode.STOCK, (), "pair0")


# ---- 8-10. verify.peer: killed, interrupted, two in one second, the hash seed ---------------

# A suite of our own for peer (it takes any test file path): each test run appends what it saw
# to $PEER_PROBE; with $PEER_HANG set, the run whose number (counted in $PEER_PROBE) reaches it
# writes its pid and process group to $PEER_HANG.ready and sleeps.
SUITE = '''
import os, time
from pathlib import Path

def test_probe():
    probe = Path(os.environ["PEER_PROBE"])
    with probe.open("a") as f:
        f.write(f"{os.environ.get('PYTHONHASHSEED')} {hash('fastpass')}\\n")
    hang = os.environ.get("PEER_HANG")
    if hang and len(probe.read_text().splitlines()) >= int(os.environ["PEER_HANG_AT"]):
        Path(hang).write_text(f"{os.getpid()} {os.getpgrp()}")
        time.sleep(600)
'''


def peer_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite" / "test_peer_probe.py"
    suite.parent.mkdir()
    suite.write_text(SUITE)
    return suite


def start_peer(tmp_path: Path, *args: str, hang_at: int) -> tuple[subprocess.Popen, Path]:
    suite = peer_suite(tmp_path)
    ready = tmp_path / "hang.ready"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PEER_PROBE=str(tmp_path / "probe"), PEER_HANG=str(ready),
               PEER_HANG_AT=str(hang_at))
    process = subprocess.Popen([sys.executable, "-m", "verify", "peer", str(suite), "-n", "0", "--out",
                                str(tmp_path / "out"), *args], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    return process, ready


def test_peer_killed_outright_leaves_no_pytest_behind(tmp_path):
    """Issue 32 #8: SIGKILL to peer left its pytest child running under pid 1."""
    peer, ready = start_peer(tmp_path, "--modes", "stock", hang_at=1)
    try:
        wait_for(ready.exists, 120, "the suite's test started", proc=peer)
        test_pid, group = map(int, ready.read_text().split())
        assert group != os.getpgid(peer.pid)
        peer.kill()
        peer.wait()
        wait_for(lambda: not alive(test_pid), 5, "pytest gone with peer")
        wait_for(lambda: not group_alive(group), 5, "its whole process group gone")
    finally:
        peer.kill()
        if ready.exists() and group_alive(int(ready.read_text().split()[1])):
            os.killpg(int(ready.read_text().split()[1]), signal.SIGKILL)


@pytest.mark.slow
def test_peer_interrupted_summarizes_the_finished_modes_and_exits_130(tmp_path):
    """Issue 32 #8: SIGINT gave a traceback and no summary."""
    peer, ready = start_peer(tmp_path, "--modes", "stock,fastpass", hang_at=2)  # the fastpass mode hangs
    try:
        wait_for(ready.exists, 300, "the second mode's test started", proc=peer)
        test_pid = int(ready.read_text().split()[0])
        peer.send_signal(signal.SIGINT)
        out, err = peer.communicate(timeout=60)
    finally:
        peer.kill()
    assert peer.returncode == 130, out + err
    assert "Traceback" not in err and "stopped by SIGINT" in err
    assert "outcomes per mode:" in out and "STOPPED by SIGINT" in out and "not finished: fastpass" in out
    (run,) = (tmp_path / "out").iterdir()
    document = json.loads((run / "peer.json").read_text())
    assert document["complete"] is False and document["stopped_by"] == "SIGINT"
    assert document["unfinished_modes"] == ["fastpass"] and document["outcome_counts"] == {"stock": {"passed": 1}}
    wait_for(lambda: not alive(test_pid), 5, "the hanging mode's pytest killed")


def test_two_peers_in_one_second_get_their_own_folders_and_one_pinned_hash_seed(tmp_path, monkeypatch, capsys):
    """Issue 32 #9: two peers in the same second shared one folder; #10: with PYTHONHASHSEED=random
    in the environment, each mode ran under a random seed of its own."""
    from verify.commands.peer import main as peer_main
    from verify.jobs import launcher

    launcher.reset_after_stop()
    suite = peer_suite(tmp_path)
    probe = tmp_path / "probe"
    monkeypatch.setenv("PEER_PROBE", str(probe))
    monkeypatch.setenv("PYTHONHASHSEED", "random")
    monkeypatch.setattr(time, "strftime", lambda *args: "20261205-060000")  # the same second, twice
    out = tmp_path / "out"
    assert peer_main([str(suite), "-n", "0", "--modes", "stock,stock", "--out", str(out)]) == 0
    assert peer_main([str(suite), "-n", "0", "--modes", "stock", "--out", str(out), "--hash-seed", "7"]) == 0
    runs = sorted(out.iterdir())
    assert len(runs) == 2 and all(r.name.startswith("20261205-060000-") for r in runs)
    assert all(json.loads((r / "peer.json").read_text())["outcome_counts"]["stock"] == {"passed": 1} for r in runs)
    seeds = [line.split() for line in probe.read_text().splitlines()]
    assert [seed for seed, _ in seeds] == ["0", "0", "7"]
    assert seeds[0][1] == seeds[1][1], "one seed, one string hash in every mode"
    assert "hash seed 0" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        peer_main([str(suite), "--hash-seed", "random"])
    assert refused.value.code == 2
    assert "'random' would give each mode a seed of its own" in capsys.readouterr().err


# ---- 11. the pytest plugin: output paths up front, lost xdist workers ------------------------

def run_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(ini), "-p", "no:cacheprovider", "-q", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="0"))


def test_plugin_refuses_an_unwritable_json_before_any_test_runs(tmp_path):
    """Issue 32 #11: every test ran, then a traceback at the end and no summary."""
    ran = tmp_path / "ran"
    (tmp_path / "test_one.py").write_text(f"def test_one():\n    open({str(ran)!r}, 'w').close()\n")
    (tmp_path / "a_file").write_text("")
    done = run_pytest(tmp_path, "-p", "no:xdist", "--fastpass-json", str(tmp_path / "a_file" / "r.json"),
                      "test_one.py")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert not ran.exists(), "a test ran before the output path was refused"
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert errors == [f"ERROR: --fastpass-json {tmp_path / 'a_file' / 'r.json'}: {tmp_path / 'a_file'} is a file, "
                      "not a folder"], done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_plugin_names_a_lost_xdist_worker_in_the_summary_and_json(tmp_path):
    """Issue 32 #11: a worker that died made the totals smaller without a word."""
    (tmp_path / "test_crash.py").write_text("import os, signal\n\n"
                                            "def test_dies():\n    os.kill(os.getpid(), signal.SIGKILL)\n\n"
                                            "def test_lives():\n    pass\n")
    report = tmp_path / "r.json"
    done = run_pytest(tmp_path, "-n", "1", "--fastpass-json", str(report), "test_crash.py")
    assert done.returncode == 1, done.stdout + done.stderr
    (lost,) = json.loads(report.read_text())["lost_workers"]
    assert lost["worker"] == "gw0" and lost["error"]
    assert f"lost xdist workers: 1 (gw0: {lost['error']})" in done.stdout, done.stdout


def test_peer_fails_on_a_lost_worker_and_a_mode_that_failed(capsys):
    from tests.test_pytest_plugin import mode_run
    from verify.peer.campaign import ModeRun, summarize

    same = {"t::a": "passed"}
    lost = mode_run("fastpass", same)
    lost.report["lost_workers"] = [{"worker": "gw1", "error": "Not properly terminated"}]
    assert summarize([mode_run("stock", same), lost]) == 1
    assert "LOST WORKER fastpass: xdist worker gw1 went down (Not properly terminated)" in capsys.readouterr().out
    killed = ModeRun.failed("crosscheck", "memory limit exceeded: ... 16 GiB", 3.0, -9)
    assert summarize([mode_run("stock", same), killed]) == 1
    assert "FAILED crosscheck: memory limit exceeded" in capsys.readouterr().out


# ---- 12-13. replay: files that are not reproducers, code in reproducers, malformed ones ------

class MakesFolder:
    """Unpickled, it makes a folder: the stand-in for any code a crafted pickle runs."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (str(self.path),)


def crafted_xcheck(tmp_path: Path, marker: Path) -> Path:
    import pickle

    from verify.report import reproducer
    from verify.report.reproducer import Manifest, Producer

    path = tmp_path / "crafted.xcheck"
    reproducer.save(path, Manifest(Producer.CROSSCHECK, "", (), None, hash_seed=None),
                    pickle.dumps({"entry_point": MakesFolder(marker), "call": b""}))
    return path


def gate_reproducer(tmp_path: Path, pass_ref, graph=None) -> Path:
    from verify.bench.models import random_graph
    from verify.report import reproducer
    from verify.report.reproducer import Manifest, Producer

    path = tmp_path / "gate-repro.py"
    graph = random_graph(2, 1).to_dict() if graph is None else graph
    reproducer.save(path, Manifest(Producer.GATE, "edge-fp", ("copy",), None, hash_seed=None, pass_ref=pass_ref,
                                   graph=graph), "print('graph source')\n")
    return path


def test_replay_runs_no_code_from_a_file_without_trust_and_says_what_it_would_run(tmp_path, capsys):
    """Issue 32 #12: a crafted .xcheck was unpickled (code ran) and a gate reproducer's pass_ref
    imported, without a word."""
    from verify.cli import main

    marker = tmp_path / "code-ran"
    crafted = crafted_xcheck(tmp_path, marker)
    assert main(["replay", str(crafted)]) == 2
    assert not marker.exists(), "the pickle ran"
    err = capsys.readouterr().err
    assert "replay would: unpickles the saved call" in err and "posix.mkdir" in err
    assert err.strip().splitlines()[-1].endswith("replay only files you trust, with --trust")
    # ... also when it asks for crosscheck's own options
    assert main(["replay", str(crafted), "--features", "copy", "--reference-sets", "0"]) == 2 and not marker.exists()
    # a gate reproducer whose pass lives in a file: the file is not imported
    module = tmp_path / "evil_pass.py"
    module.write_text(f"import os\nos.mkdir({str(marker)!r})\n")
    gate = gate_reproducer(tmp_path, f"{module}:EvilPass")
    assert main(["replay", str(gate)]) == 2 and not marker.exists()
    assert f"imports (executes) the Python file {module} for the pass EvilPass" in capsys.readouterr().err
    # with --trust it runs (and then says, in one line, that the file names no such pass: #13)
    assert main(["replay", str(gate), "--trust"]) == 2 and marker.is_dir()
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"verify replay: malformed gate reproducer {gate}: ") and "EvilPass" in last, err
    assert "Traceback" not in err


def test_replay_refuses_a_pickle_that_is_not_a_reproducer_before_unpickling(tmp_path, capsys):
    import pickle

    from verify.cli import main

    marker = tmp_path / "code-ran"
    bare = tmp_path / "bare.xcheck"
    bare.write_bytes(pickle.dumps(MakesFolder(marker)))
    assert main(["replay", str(bare), "--trust"]) == 2 and not marker.exists()
    assert "not a reproducer saved by verify" in capsys.readouterr().err


@pytest.mark.parametrize("pass_ref, graph, message", [
    ("no reference at all", None, "bad pass reference 'no reference at all'"),
    (None, None, "bad pass reference None"),
    ("m:Foo", {"ops": "garbage"}, "bad graph"),
    ("m:Foo", {"input_shapes": [[1, 2]], "ops": [{"op": "no_such_op", "inputs": [0], "params": [], "shape": [1]}],
               "outputs": [1]}, "bad graph"),
])
def test_a_malformed_gate_reproducer_is_one_line_and_exit_2(tmp_path, capsys, pass_ref, graph, message):
    """Issue 32 #13: a bad graph or pass reference was a traceback with exit 1."""
    from verify.cli import main

    path = gate_reproducer(tmp_path, pass_ref, graph)
    assert main(["replay", str(path), "--trust"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"verify replay: malformed gate reproducer {path}: {message}"), err


def test_a_fuzz_reproducer_needs_no_trust(tmp_path):
    from verify.bench.models import random_graph
    from verify.report.trust import authorize
    from verify.report import reproducer
    from verify.report.reproducer import Manifest, Producer

    path = tmp_path / "graph.py"
    saved = reproducer.save(path, Manifest(Producer.FUZZ, "tosa-int", (), None, graph=random_graph(2, 1).to_dict()),
                            "import os\n")
    execution = authorize(reproducer.load(path), trust=False)
    assert not execution.runs_code_from_file and "runs no code from the file" in execution.what[0]
    assert saved.path == path


def test_a_gate_worker_over_the_memory_limit_is_an_error_naming_it(tmp_path, monkeypatch):
    """The limit is on every launch; the gate must turn a breach into a verdict, not a traceback."""
    from verify.jobs import launcher
    from verify.gate import workers
    from verify.jobs import JobKind

    def over_the_limit(module, args, **kwargs):
        raise launcher.WorkerMemoryExceeded(launcher.DEFAULT_MEMORY_LIMIT, 17 * launcher.GIB)

    monkeypatch.setattr(launcher, "launch", over_the_limit)
    launched = workers._launch_worker(JobKind.GATE_PASS, {"out": str(tmp_path / "out")}, tmp_path / "job", 60, 0)
    assert launched.document is None and launched.failure.startswith("<worker-crash: memory limit>: memory limit")
    assert "limit of 16 GiB" in launched.failure


def test_verify_run_worker_over_the_memory_limit_is_an_error_naming_it(tmp_path):
    """`verify run --memory-limit`: a worker group over the limit is killed and its case is an error
    verdict naming the limit (it was a harness error, and the run had no such option)."""
    from tests.test_reliability import CHEAP, TINY, run_verify

    report = tmp_path / "r.json"
    done = run_verify("run", "--models", "none", "--model", TINY, "--targets", "tosa-int", *CHEAP,
                      "--memory-limit", "0.05", "--out", str(tmp_path / "out"), "--json", str(report))
    assert done.returncode == 1, done.stdout + done.stderr
    [case] = json.loads(report.read_text())["cases"]
    assert case["verdict"] == "error"
    assert "memory limit exceeded" in case["error"] and "51.2 MiB" in case["error"], case["error"]
    usage = run_verify("run", "--models", "none", "--model", TINY, "--memory-limit", "-1")
    assert usage.returncode == 2 and "--memory-limit must be 0" in usage.stderr
