"""Bad usage is refused with one line on stderr and exit 2 *before any work*: no run folder, no
worker, no lowering (issue 47). Each refusal here once started work: a run folder of ERROR cases,
workers dying with "Fatal Python error: PYTHONHASHSEED", a traceback after collection, or an
empty run folder holding a lock.

Each command runs as a user runs it (`python -m verify ...`) in an empty folder: the default
run folder (verify-out/) must not appear."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def verify(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env_path = f"{ROOT}"
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env={**__import__("os").environ, "PYTHONPATH": env_path})


def refused(done: subprocess.CompletedProcess, prefix: str, *words: str) -> str:
    """The one line a refusal prints (its own, after whatever third-party import noise)."""
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    ours = [line for line in done.stderr.splitlines() if line.startswith(prefix)]
    assert len(ours) == 1, done.stderr[-3000:]
    assert all(word in ours[0] for word in words), ours[0]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return ours[0]


def nothing_made(folder: Path) -> None:
    assert not (folder / "verify-out").exists(), sorted(p.name for p in (folder / "verify-out").iterdir())


FACTORY = "def make():\n    raise RuntimeError('never called: refused before')\n"

RUN_REFUSALS = {
    "hash seed -1": (["--hash-seed", "-1"], ["--hash-seed", "0..4294967295"]),
    "hash seed too big": (["--hash-seed", "99999999999"], ["--hash-seed", "0..4294967295"]),
    "null seed -5": (["--null-seed", "-5"], ["--null-seed", "-1"]),
    "null seed too big": (["--null-seed", "4294967296"], ["--null-seed"]),
    "memory limit -1": (["--memory-limit", "-1"], ["--memory-limit"]),
    "no such module": (["--models", "none", "--model", "nosuch_mod_47:make"], ["nosuch_mod_47"]),
    "no such function in a module": (["--models", "none", "--model", "os:nosuchfn"], ["os", "nosuchfn"]),
    "no such function in a file": (["--models", "none", "--model", "factory.py:missing"], ["factory.py", "missing"]),
}


@pytest.mark.parametrize("case", sorted(RUN_REFUSALS))
def test_run_refuses_before_any_work(tmp_path, case):
    args, words = RUN_REFUSALS[case]
    (tmp_path / "factory.py").write_text(FACTORY)
    if "--models" not in args:  # should a number slip through, a case that fails at once, not the default job
        args = ["--models", "none", "--model", "factory.py:make", *args]
    done = verify("run", "--targets", "tosa-int", *args, cwd=tmp_path)
    refused(done, "verify: ", *words)
    nothing_made(tmp_path)


def test_a_model_file_that_binds_the_factory_is_accepted_on_its_face(tmp_path):
    """The check reads the file, not runs it: a factory bound by import or assignment is there."""
    from verify.cases import usage_problem

    model = tmp_path / "m.py"
    model.write_text("from os import path as imported\nif True:\n    assigned = 1\ndef made():\n    pass\n")
    for name in ("imported", "assigned", "made"):
        assert usage_problem(f"{model}:{name}") is None, name
    assert "missing" in usage_problem(f"{model}:missing")
    model.write_text("from os import *\n")  # cannot tell without running it: the worker finds out
    assert usage_problem(f"{model}:anything") is None
    assert usage_problem("tests.models.tiny:make") is None
    assert "nosuch" in usage_problem("tests.models.tiny:nosuch")


def test_bench_refuses_a_bad_hash_seed(tmp_path):
    (tmp_path / "factory.py").write_text(FACTORY)
    refused(verify("bench", "--hash-seed", "-1", "--model", "factory.py:make", "--pairs", "1", cwd=tmp_path), "verify bench: ", "--hash-seed", "0..4294967295")
    nothing_made(tmp_path)


@pytest.mark.parametrize("value", ["0", "-5"])
def test_peer_refuses_a_timeout_that_is_not_positive(tmp_path, value):
    refused(verify("peer", "--timeout", value, "--out", str(tmp_path / "peer"), cwd=tmp_path),
            "verify peer: ", "--timeout")
    assert not (tmp_path / "peer").exists()


def test_peer_names_the_one_option_that_is_wrong(tmp_path):
    line = refused(verify("peer", "-n", "-1", "--out", str(tmp_path / "peer"), cwd=tmp_path), "verify peer: ")
    assert "--workers" in line and "--shards" not in line, line


@pytest.mark.parametrize("command", [["-m", "fastpass", "run"], ["-m", "fastpass", "run", "--features", "skip"]])
def test_fastpass_run_without_a_script_names_the_script_alone(command):
    """Not argparse's "required: script, args": the script's own ARGS are optional."""
    done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2
    assert "no SCRIPT given" in done.stderr and "args" not in done.stderr.splitlines()[-1], done.stderr


def test_fastpass_run_help_lists_the_feature_names():
    done = subprocess.run([sys.executable, "-m", "fastpass", "run", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    import fastpass

    assert done.returncode == 0 and all(name in done.stdout for name in fastpass.FEATURES), done.stdout


def test_crosscheck_without_a_script_names_the_script_alone(tmp_path):
    line = refused(verify("crosscheck", cwd=tmp_path), "verify crosscheck: ", "no SCRIPT given")
    assert "args" not in line.replace("[ARGS]", ""), line


NO_TORCH = """
import sys
from verify.cli import main
code = main(sys.argv[1:])
assert "torch" not in sys.modules, "torch was imported to refuse a number"
sys.exit(code)
"""


@pytest.mark.parametrize("args", [["run", "--hash-seed", "-1"], ["run", "--null-seed", "-5"],
                                  ["run", "--memory-limit", "-1"], ["bench", "--hash-seed", "-1"],
                                  ["peer", "--timeout", "0"]])
def test_a_bad_number_is_refused_without_importing_torch(tmp_path, args):
    """A refusal that needs nothing but the number takes a fraction of a second, not torch's import."""
    done = subprocess.run([sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.splitlines()) == 1, done.stderr
    nothing_made(tmp_path)


GATE_REFUSALS = {
    "a pass reference without a class": (["gate", "--pass", "justgarbage"], "bad pass reference 'justgarbage'"),
    "no such module": (["gate", "--pass", "nosuch_mod_47:SomePass"], "No module named 'nosuch_mod_47'"),
    "no such module in a package": (["gate", "--pass", "executorch.exir.passes.nosuch_47:SomePass"],
                                    "No module named 'executorch.exir.passes.nosuch_47'"),
    "no such file": (["gate", "--pass", "nofile_47.py:SomePass"], "no such file 'nofile_47.py'"),
    "no such class in a file": (["gate", "--pass", "my_passes.py:Missing"], "'my_passes.py' has no attribute 'Missing'"),
    "no such class in executorch": (["gate", "--pass", "executorch.exir.passes:NoSuchPass47"],
                                    "'executorch.exir.passes' has no attribute 'NoSuchPass47'"),
    "a bad number": (["gate", "--examples", "0"], "--examples must be at least 1"),
    "infer: a pass reference without a class": (["infer", "justgarbage"], "bad pass reference"),
    "infer: no such class": (["infer", "executorch.exir.passes:NoSuchPass47"], "has no attribute 'NoSuchPass47'"),
    "infer: a bad number": (["infer", "--max-ops", "0", "executorch.exir.passes:NoSuchPass47"], "--max-ops"),
    "an op the vocabulary lacks": (["gate", "--ops", "relu,bogus47"], "unknown vocabulary op(s) bogus47 in --ops"),
    "infer: an op the vocabulary lacks": (["infer", "x:Y", "--ops", "bogus47"], "unknown vocabulary op(s) bogus47"),
    "a replay file that is no reproducer": (["replay", "not_a_reproducer.txt"],
                                            "not_a_reproducer.txt: no '# reproducer:' line"),
    "replay: --pass for another producer's reproducer": (
        ["replay", "--trust", "--pass", "x:Y", str(ROOT / "tests/data/known_divergences/"
                                                   "convert_int64_output_ops_argmax.xcheck")],
        "--pass and --stage replay a gate reproducer; "),
    "selftest: a bad number": (["selftest", "--mutants", "0"], "--mutants must be at least 1, got 0"),
    "selftest: no such resume file": (["selftest", "--resume", "no/such/st.json"], "--resume no/such/st.json: no such file"),
    "selftest: a gate option it shares": (["selftest", "--examples", "0"], "--examples must be at least 1"),
}


@pytest.mark.parametrize("case", sorted(GATE_REFUSALS))
def test_gate_and_infer_refuse_a_bad_argument_without_importing_torch(tmp_path, case):
    """Issue 47: `verify gate --pass justgarbage` took 12 s and printed torchao's, triton's and
    pytree's warnings before its one line; pass references are now read on their face
    (verify.gate.passes.reference_problem) before the lowering stack is imported."""
    args, words = GATE_REFUSALS[case]
    (tmp_path / "my_passes.py").write_text("class Other:\n    pass\n")
    (tmp_path / "not_a_reproducer.txt").write_text("# a comment, then no manifest line\nprint('never run')\n")
    done = subprocess.run([sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == [done.stderr.strip()] and words in done.stderr, done.stderr
    assert done.stderr.startswith(f"verify {args[0]}: "), done.stderr
    nothing_made(tmp_path)


def test_a_pass_reference_fine_on_its_face_is_left_to_the_import():
    """The reading refuses only what it can tell: a real class, a name a star import or a module
    `__getattr__` may bind, an extension module."""
    from verify.gate.passes import reference_problem

    for ref in ("executorch.backends.arm._passes.fuse_batch_norm2d_pass:FuseBatchNorm2dPass",
                "executorch.backends.arm._passes.FuseBatchNorm2dPass",  # bound by the package's import
                "executorch.exir.passes.remove_mixed_type_operators:RemoveMixedTypeOperators",
                f"{ROOT}/tests/passes/reach_passes.py:AliasNamedPass", "tests.passes.reach_passes:TwoHopPass", "os.path:join"):
        assert reference_problem(ref) is None, ref
    assert "has no attribute 'nosuch'" in reference_problem("os:nosuch")  # imported already: asked


@pytest.mark.parametrize("address", ["127.0.0.1:99999", "127.0.0.1:0", "ray://127.0.0.1:70000"])
def test_a_cluster_port_out_of_range_is_named_as_such(address):
    """Not "connection refused": the port cannot be one (nothing is tried)."""
    from verify.cluster.connect import resolve
    from verify.usage import UsageError

    with pytest.raises(UsageError, match=r"is not a TCP port \(1\.\.65535\)"):
        resolve(address, {})


def test_a_cluster_address_that_listens_but_never_answers_is_one_line_in_seconds(tmp_path):
    """Issue 47: at an address where something accepts connections but never answers, `ray.init`
    retried for minutes, printing Ray's warnings every few seconds (measured: over 10 minutes, 30+
    lines). A loopback socket that listens and never replies (the kernel completes the
    connection from its backlog; nothing reads it): one line naming the address and what happened,
    exit 2, in a few seconds, nothing made."""
    import os
    import socket
    import time

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("RAY_USE_TLS", None)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "verify", "run", "--models", "none", "--cluster", address],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
        took = time.monotonic() - started
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines() == [
        f"verify: --cluster {address}: no Ray cluster answers there (it accepted a connection but sent no "
        "answer within 2 s); nothing was run"], done.stderr[-3000:]
    assert took < 5, took
    nothing_made(tmp_path)


def test_a_cluster_address_that_closes_or_answers_otherwise_is_named_as_such():
    """The other ways an address that accepts is not a Ray head: it hangs up at once, or answers
    in another protocol (here: an HTTP/1 server's reply)."""
    import socket
    import threading

    from verify.cluster.connect import check_reachable, resolve
    from verify.usage import UsageError

    def serve(listener: socket.socket, reply: bytes) -> None:
        while True:  # check_reachable's TCP check connects and hangs up first: the probe is the one that speaks
            connection, _ = listener.accept()
            with connection:
                if connection.recv(64):
                    connection.sendall(reply)
                    return

    for reply, words in [(b"", "then closed it without an answer"),
                         (b"HTTP/1.1 400 Bad Request\r\n\r\n", "answered, but not as a Ray cluster")]:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            server = threading.Thread(target=serve, args=(listener, reply))
            server.start()
            try:
                cluster = resolve(f"127.0.0.1:{listener.getsockname()[1]}", {})
                with pytest.raises(UsageError, match=words):
                    check_reachable(cluster)
            finally:
                server.join(timeout=30)


@pytest.mark.parametrize("args", [["gate", "--ops", "bogus"], ["infer", "x:Y", "--ops", "bogus"],
                                  ["replay", "not_a_reproducer.txt"], ["selftest", "--mutants", "0"]])
def test_a_gate_usage_refusal_takes_less_than_3_seconds(tmp_path, args):
    """Issue 47's bound, as a user runs the command: `gate --ops bogus` took 3.9 s (the vocabulary's
    names imported torch) and `gate --replay NOT_A_REPRODUCER` (now `replay`) 4.4 s (the file was read
    after the lowering stack was imported); now the names are verify.gate.op_names' and the file is
    read first."""
    import time

    (tmp_path / "not_a_reproducer.txt").write_text("not a reproducer\n")
    started = time.monotonic()
    done = verify(*args, cwd=tmp_path)
    took = time.monotonic() - started
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr[-2000:]
    assert took < 3, took
    nothing_made(tmp_path)


def test_the_gates_op_names_are_the_vocabularys():
    """verify.gate.op_names copies generators.random's vocabulary names (which need torch) for the
    gate's usage check: the copy must be the vocabulary, in its order."""
    from generators.random import ops_in_vocabulary
    from verify.gate.op_names import VOCABULARY_OPS

    names = tuple(ops_in_vocabulary())
    assert VOCABULARY_OPS == names, (
        "generators.random's vocabulary changed: set VOCABULARY_OPS in verify/gate/op_names.py to\n"
        + repr(names))
