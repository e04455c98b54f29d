"""verify/report: the one JUnit writer (counts agree with the elements they count) and the one
reproducer format: a reproducer of each producer (fuzz, gate, crosscheck) round-trips through
save/load with its manifest, and `python -m verify replay FILE` replays it, saying divergent
while the fault is there (with the first divergent pass) and identical once it is gone."""

from __future__ import annotations

import copy
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from verify.cli import main as verify_main
from verify.report import reproducer
from verify.report.junit import CaseEnd, JunitCase, JunitSuite, to_xml, write_junit
from verify.report.reproducer import Manifest, Producer, ReproducerError

ROOT = Path(__file__).resolve().parents[1]


# ---- JUnit ------------------------------------------------------------------------------------

def test_junit_counts_are_counted_from_the_cases(tmp_path):
    suite = JunitSuite("s", [
        JunitCase("c", "ok", 1.25, properties={"verdict": "sound", "examples": 3}),
        JunitCase("c", "bad", 2.0, CaseEnd.FAILURE, "differs at p", text="details", kind="unsound-copy"),
        JunitCase("c", "broken", 0.0, CaseEnd.ERROR, "boom"),
        JunitCase("c", "thin", 0.0, CaseEnd.SKIPPED, "unexercised: 0 of 2"),
    ], seconds=5.5)
    write_junit(suite, tmp_path / "j.xml")
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert root.attrib == {"name": "s", "tests": "4", "failures": "1", "errors": "1", "skipped": "1",
                           "time": "5.500"}
    ok, bad, broken, thin = root.findall("testcase")
    assert ok.get("time") == "1.250" and list(ok) == [ok.find("properties")]
    assert {p.get("name"): p.get("value") for p in ok.find("properties")} == {"verdict": "sound", "examples": "3"}
    failure = bad.find("failure")
    assert failure.attrib == {"type": "unsound-copy", "message": "differs at p"} and failure.text == "details"
    assert broken.find("error").attrib == {"message": "boom"} and broken.find("error").text is None
    assert thin.find("skipped").get("message") == "unexercised: 0 of 2"
    assert to_xml(suite).startswith(b"<?xml")


def test_run_and_gate_write_through_the_one_writer(tmp_path, monkeypatch):
    """Both commands' JUnit files are made by verify.report.junit (a fault injected there shows in both)."""
    from fastpass.annotations import ProofStatus
    from verify.gate.verdict import PassVerdict
    from verify.report import files, gate, junit

    written = []
    monkeypatch.setattr(junit, "write_bytes", lambda path, data: written.append((path, data)))
    files.write_junit([], tmp_path / "run.xml", unfinished=[("tiny", "tosa-int")])
    gate.write_junit([PassVerdict("m.P", "P", "m:P", ProofStatus.UNTESTED, "no pipeline")], tmp_path / "g.xml", 1.0, 5)
    (_, run_xml), (_, gate_xml) = written
    run_case = ET.fromstring(run_xml).find("testcase")
    assert run_case.get("classname") == "verify.tosa-int" and run_case.find("error") is not None
    gate_root = ET.fromstring(gate_xml)
    assert gate_root.get("skipped") == "1" and gate_root.find("testcase/skipped") is not None


# ---- the reproducer format --------------------------------------------------------------------

def test_save_load_round_trip_keeps_manifest_and_payload(tmp_path):
    manifest = Manifest(Producer.GATE, "edge-fp", ("copy",), "pass 3 FooPass", "unsound-copy of m.Foo",
                        hash_seed="0", pass_ref="m:Foo", annotation={"targeted_ops": ["aten.relu.default"]},
                        graph={"ops": []}, settings={"how": "direct", "exclude": None})
    payload = b"\x00\x01binary\n# reproducer: not the manifest\n"
    saved = reproducer.save(tmp_path / "r.bin", manifest, payload, notes=["two\nlines", ""])
    loaded = reproducer.load(saved.path)
    assert loaded.manifest == manifest and loaded.payload == payload
    assert "-m verify replay" in loaded.command


@pytest.mark.parametrize("content, message", [
    (b"not a reproducer", "no '# reproducer:' line"),
    (b"# reproducer: {not json\n", "bad manifest"),
    (b'# reproducer: {"format": 99}\n', "format 99"),
])
def test_load_refuses_what_is_not_a_reproducer(tmp_path, content, message):
    path = tmp_path / "r.py"
    path.write_bytes(content)
    with pytest.raises(ReproducerError, match=message):
        reproducer.load(path)


def test_replay_command_refuses_bad_input_with_exit_2(tmp_path, capsys):
    assert verify_main(["replay", str(tmp_path / "missing.py")]) == 2
    (tmp_path / "foreign.py").write_text("print('hello')\n")
    assert verify_main(["replay", str(tmp_path / "foreign.py")]) == 2
    err = capsys.readouterr().err
    assert "verify replay: no such reproducer" in err and "verify replay: cannot read reproducer" in err


def replay_in_process(path: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = verify_main(["replay", str(path), "--any-hash-seed", "--trust",  # our own reproducers: trusted
                        "--out", str(path.parent / "replay-out")])
    return code, capsys.readouterr().out


def test_fuzz_reproducer_round_trips_and_replays(tmp_path, capsys):
    from executorch.backends.arm._passes import FoldAndAnnotateQParamsPass
    from executorch.exir.dialects._ops import ops as exir_ops

    from generators.random import interpret
    from tests.test_fuzz import wrong_annotation
    from verify.fuzz.search import save_reproducer, verify_graph

    spec = interpret([(1, 2, 4, 4)], [("relu", 0, 0)])
    with wrong_annotation(FoldAndAnnotateQParamsPass, {exir_ops.edge.aten.cosh.default}):
        verdict = verify_graph(spec, "tosa-int", ("skip",))
        assert verdict.failed
        path = save_reproducer(spec, tmp_path, verdict.explain(), "tosa-int", features=("skip",),
                               first_divergent_pass=verdict.first_divergent_pass)
        saved = reproducer.load(path)
        assert saved.manifest.producer is Producer.FUZZ and saved.manifest.features == ("skip",)
        assert saved.manifest.first_divergent_pass == verdict.first_divergent_pass
        assert saved.graph_spec() == spec and b"def make_model" in saved.payload
        code, out = replay_in_process(path, capsys)
        assert code == 1, out
        assert f"divergent: first divergent pass {verdict.first_divergent_pass}" in out
    code, out = replay_in_process(path, capsys)
    assert code == 0 and out.splitlines()[-1] == "identical", out


def test_gate_reproducer_round_trips_and_replays_with_the_one_command(tmp_path):
    from verify.gate import passes as gp
    from verify.gate import run
    from verify.vocabulary import Route

    pass_ref = "tests/passes/gate_passes.py:UndeclaredRewritePass"
    cls = gp.resolve(str(ROOT / pass_ref))
    v = run.gate_pass(cls, pass_ref, 6, "edge-fp", tmp_path, seed=0, how=Route.DIRECT, max_ops=3, shrink_seconds=10,
                      ops=["relu", "neg"], min_evidence=2)
    path = Path(v.reproducers["unsound-copy"])
    saved = reproducer.load(path)
    m = saved.manifest
    assert (m.producer, m.target, m.features, m.pass_ref) == (Producer.GATE, "edge-fp", ("copy",), pass_ref)
    assert m.first_divergent_pass == v.modes["copy"]["where"] and m.annotation == v.annotation
    assert saved.graph_spec().describe() == v.modes["copy"]["graph"]
    proc = subprocess.run([sys.executable, "-m", "verify", "replay", str(path), "--trust"], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert f"divergent: first divergent pass {m.first_divergent_pass}" in proc.stdout


def test_crosscheck_reproducer_round_trips_and_replays(tmp_path, capsys):
    from tests.test_crosscheck import ClampModel, clamp_pass, fastpass_only_fault, rename_first_clamp, transform
    from verify.crosscheck import crosscheck
    from verify.crosscheck.reproducer import load_call

    import torch
    from executorch.exir import to_edge

    program = to_edge(torch.export.export(ClampModel(), (torch.randn(2, 3),))).exported_program()
    with fastpass_only_fault(clamp_pass(), rename_first_clamp):
        with crosscheck(features=("skip", "copy"), reproducer_dir=tmp_path) as session:
            session.context = "tests/test_report.py::crosscheck"
            transform(copy.deepcopy(program))
        [record] = session.records
        path = record.reproducer.path
        assert record.reproducer.command.endswith(f"-m verify replay {path}")
        saved = reproducer.load(path)
        m = saved.manifest
        assert (m.producer, m.features) == (Producer.CROSSCHECK, ("skip", "copy"))
        assert m.first_divergent_pass == record.first_divergence.label
        assert load_call(saved).context == "tests/test_report.py::crosscheck"
        code, out = replay_in_process(path, capsys)
        assert code == 1, out
        assert out.splitlines()[-1].startswith("divergent: first divergent pass") and "ConvertToClampPass" in out
    code, out = replay_in_process(path, capsys)
    assert code == 0 and out.splitlines()[-1] == "identical", out


def test_replay_runs_under_the_saved_hash_seed(tmp_path, monkeypatch):
    """A divergence found under PYTHONHASHSEED=S is replayed in a child under S, not this process's seed."""
    import types

    from verify.commands import replay

    from generators.random import GraphSpec

    # a well-formed fuzz reproducer (replay checks the file before anything else): one input, no ops
    graph = GraphSpec(input_shapes=((1, 4),), ops=(), outputs=(0,), seed=0).to_dict()
    path = reproducer.save(tmp_path / "r.py", Manifest(Producer.FUZZ, "tosa-int", (), None, hash_seed="12345",
                                                       graph=graph), "").path
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    calls = []
    monkeypatch.setattr(replay.subprocess, "run", lambda command, env: calls.append((command, env))
                        or types.SimpleNamespace(returncode=1))
    assert verify_main(["replay", str(path)]) == 1
    [(command, env)] = calls
    assert command[-3:] == ["replay", str(path), "--any-hash-seed"] and env["PYTHONHASHSEED"] == "12345"


def test_progress_writes_to_the_stderr_of_the_call_not_of_the_import(monkeypatch):
    """A default bound at import sent progress lines to whatever sys.stderr was when
    verify.report.table loaded: under pytest-xdist, an earlier test's closed capture ('I/O
    operation on closed file' in 10 run tests); for a caller, a redirect made later was missed."""
    import io

    from verify.report.case import Case
    from verify.report.table import progress

    later = io.StringIO()
    monkeypatch.setattr(sys, "stderr", later)
    progress("start", Case(model="m.py:make", target="tosa-int"), None)
    assert later.getvalue() == "… m.py:make on tosa-int\n"
