"""The annotation gate (`python -m verify gate` / `infer`): deliberately wrong passes are rejected
with the right verdict and a reproducer that exists, runs and replays; sound passes are accepted;
`infer` finds the hand-checked targeted ops of real ARM passes.

Graphs are tiny (a handful of ops from a small vocabulary) and searches short, so the file runs
in a few minutes on 2 cores. Passes live in tests/passes/gate_passes.py.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from verify.usage import UsageError

from verify.gate import passes as gp
from verify.gate import run
from verify.report.reproducer import load
from verify.report.trust import authorize
from verify.commands.replay import replay_reproducer
from fastpass.annotations import ProofStatus
from verify.vocabulary import AnnotationFit, Feature, FeatureSet, Route

ROOT = Path(__file__).resolve().parents[1]
PASSES = "tests/passes/gate_passes.py"


def ref(name: str) -> str:
    return f"{PASSES}:{name}"


def gate(name: str, tmp_path: Path, ops: list[str], examples: int = 8, max_ops: int = 5, min_evidence: int = 2):
    cls = gp.resolve(str(ROOT / PASSES) + ":" + name)
    return run.gate_pass(cls, ref(name), examples, "edge-fp", tmp_path, seed=0, how=Route.DIRECT, max_ops=max_ops,
                         shrink_seconds=10, ops=ops, min_evidence=min_evidence)


def assert_reproducer(verdict, kind: str) -> Path:
    assert verdict.verdict == kind, (verdict.verdict, verdict.reason, verdict.modes)
    path = Path(verdict.reproducers[kind])
    assert path.is_file() and path.name == f"{verdict.name}-{kind}.py"
    text = path.read_text()
    assert f"python -m verify replay {path} --trust --pass " in text
    # runnable on its own (needs only torch) ...
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # ... it runs nothing it names without trust (its pass reference is code) ...
    with pytest.raises(UsageError, match="--trust"):
        authorize(load(path), False)
    # ... and, trusted, it replays the divergence (`verify replay`'s replay)
    assert replay_reproducer(load(path)).exit_status == 1
    return path


def test_undeclared_rewrite_is_unsound_copy(tmp_path):
    v = gate("UndeclaredRewritePass", tmp_path, ["relu", "neg"])
    assert_reproducer(v, "unsound-copy")
    assert "skip" not in v.modes  # skip_sound=False: nothing to check there


def test_acting_without_targets_is_unsound_skip(tmp_path):
    v = gate("ActsWithoutTargetsPass", tmp_path, ["relu", "neg"])
    assert_reproducer(v, "unsound-skip")
    assert v.modes["copy"]["diverged"] is False  # the clone is inserted before the retrace: copy is fine


def test_cross_node_state_is_unsound_copy(tmp_path):
    v = gate("CountingStatePass", tmp_path, ["relu", "abs"], examples=10)
    path = assert_reproducer(v, "unsound-copy")
    assert v.modes["skip"]["diverged"] is False
    assert "relu" in path.read_text()


def test_dtype_change_of_targeted_node_is_sound(tmp_path):
    v = gate("ChangeDtypePass", tmp_path, ["relu", "abs", "neg"], examples=4)
    assert v.verdict is ProofStatus.SOUND, v.reason
    assert v.copied_nodes > 0 and v.skipped_calls > 0  # both features were really exercised
    # sound rests on evidence: at least K (=2) examples per claimed feature in which fastpass acted
    skip, copy = v.evidence[Feature.SKIP], v.evidence[Feature.COPY]
    assert skip.examples_with_action >= 2 and copy.examples_with_action >= 2
    assert skip.examples_with_action <= skip.examples and copy.examples_with_action <= copy.examples
    # the ops fastpass copied nodes of are drawn from the non-targeted ops of the pass's input
    assert copy.ops_maybe_copied and "aten.relu.default" not in copy.ops_maybe_copied
    assert set(copy.ops_maybe_copied) <= {"aten.abs.default", "aten.neg.default"}
    assert not (tmp_path / "reproducers").exists()


def test_no_copy_ever_is_inert_not_sound(tmp_path):
    """A copy-sound pass in which fastpass never copies a node (it does not retrace), on graphs
    without its targeted op: no divergence, but nothing proves the claim; its code never
    retraces, so the gate names it inert."""
    v = gate("NoRetracePass", tmp_path, ["abs", "neg"], examples=3)
    assert v.verdict is ProofStatus.INERT, (v.verdict, v.reason)
    assert v.ok and not v.verdict.fails  # does not fail CI
    assert v.evidence[Feature.COPY].examples_with_action == 0 and v.copied_nodes == 0
    assert "copy: 0 of 3 examples copied nodes" in v.reason
    assert Feature.SKIP not in v.evidence  # skip_sound=False: nothing claimed there


def test_min_evidence_decides_between_sound_and_unexercised(tmp_path):
    """The same search is sound with K=2 and unexercised with K above the examples drawn."""
    low = gate("ChangeDtypePass", tmp_path / "low", ["relu", "abs", "neg"], examples=3, min_evidence=1)
    assert low.verdict is ProofStatus.SOUND, low.reason
    high = gate("ChangeDtypePass", tmp_path / "high", ["relu", "abs", "neg"], examples=3, min_evidence=4)
    assert high.verdict is ProofStatus.UNEXERCISED
    assert "4 needed" in high.reason and "of 3 examples" in high.reason


def test_call_override_inserting_nodes_is_sound(tmp_path):
    v = gate("InsertBeforeRetracePass", tmp_path, ["sigmoid", "abs", "neg"], examples=4)
    assert v.verdict is ProofStatus.SOUND, v.reason
    assert v.copied_nodes > 0 and v.evidence[Feature.COPY].examples_with_action >= 2  # copy really exercised


def test_cli_gate_exit_status_json_and_junit(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "verify", "gate", "--pass", ref("UndeclaredRewritePass"), "--examples", "6",
           "--ops", "relu,neg", "--max-ops", "3", "--shrink-seconds", "10", "--out", str(out),
           "--json", str(tmp_path / "gate.json"), "--junit", str(tmp_path / "gate.xml")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "UndeclaredRewritePass [copy] example 1/6" in proc.stderr  # progress lines
    assert "unsound-copy" in proc.stdout
    report = json.loads((tmp_path / "gate.json").read_text())
    assert report["ok"] is False and report["counts"]["unsound-copy"] == 1
    (entry,) = report["passes"]
    assert entry["verdict"] == "unsound-copy" and Path(entry["reproducers"]["unsound-copy"]).is_file()
    assert entry["evidence"]["copy"]["examples"] >= 1 and "examples_with_evidence" in entry
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert suite.get("failures") == "1" and suite.find("testcase/failure") is not None
    props = {p.get("name"): p.get("value") for p in suite.find("testcase/properties")}
    assert props["verdict"] == "unsound-copy" and "examples_with_evidence" in props
    assert (out / "hypothesis-db").is_dir()
    # the reproducer replays with `verify replay`: refused without --trust (it imports its pass)
    untrusted = subprocess.run([sys.executable, "-m", "verify", "replay", entry["reproducers"]["unsound-copy"]],
                               capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert untrusted.returncode == 2 and "replay would: " in untrusted.stderr and "DIVERGES" not in untrusted.stdout
    replayed = subprocess.run([sys.executable, "-m", "verify", "replay", entry["reproducers"]["unsound-copy"],
                               "--trust"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert replayed.returncode == 1 and "DIVERGES" in replayed.stdout, replayed.stderr[-2000:]
    assert replayed.stdout.splitlines()[-1].startswith("divergent: first divergent pass"), replayed.stdout[-2000:]
    # ... with the pass and stage named (what `gate --pass REF --stage S --replay` did)
    again = subprocess.run([sys.executable, "-m", "verify", "replay", entry["reproducers"]["unsound-copy"], "--trust",
                            "--pass", ref("UndeclaredRewritePass"), "--stage", "edge-fp"],
                           capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert again.returncode == 1 and "DIVERGES" in again.stdout, again.stderr[-2000:]


def test_cli_unproven_exits_0_and_is_named(tmp_path):
    """CI contract: a pass neither sound nor failing (here inert) does not fail the gate (exit 0),
    but the summary names it with why, and the JSON and JUnit carry the evidence it lacks."""
    cmd = [sys.executable, "-m", "verify", "gate", "--pass", ref("NoRetracePass"), "--examples", "2",
           "--ops", "abs,neg", "--max-ops", "2", "--min-evidence", "2", "--out", str(tmp_path / "out"),
           "--json", str(tmp_path / "gate.json"), "--junit", str(tmp_path / "gate.xml")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "inert: 1 (fastpass cannot act in it): NoRetracePass" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("NoRetracePass"))
    assert "inert" in row and "copy 0/2" in row
    report = json.loads((tmp_path / "gate.json").read_text())
    (entry,) = report["passes"]
    assert report["ok"] is True and entry["verdict"] == "inert"
    assert entry["evidence"]["copy"] == dict(entry["evidence"]["copy"], examples=2, examples_with_action=0)
    case = ET.parse(tmp_path / "gate.xml").getroot().find("testcase")
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert props["examples_with_evidence"] == "0" and props["verdict"] == "inert"
    assert props["min_evidence"] == "2"
    assert case.find("skipped").get("message").startswith("inert: fastpass cannot copy in it: its call() "
                                                          "(NoRetracePass.call) edits the graph in place")


@pytest.mark.parametrize("content, ref_suffix, message", [
    ("class Broken(:\n", ":Broken", "SyntaxError: invalid syntax"),
    # (the file defines P: a reference to a class its source lacks is refused before it is run)
    ("import no_such_module_anywhere\nclass P:\n    pass\n", ":P",
     "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
    ("raise RuntimeError('boom at import')\nclass P:\n    pass\n", ":P", "RuntimeError: boom at import"),
])
def test_cli_bad_pass_file_is_one_line_exit_2(tmp_path, content, ref_suffix, message):
    path = tmp_path / "user_passes.py"
    path.write_text(content)
    proc = subprocess.run([sys.executable, "-m", "verify", "gate", "--pass", f"{path}{ref_suffix}",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("verify gate")]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and message in lines[0] and "user_passes.py" in lines[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_cli_refuses_a_class_that_is_not_a_pass_before_any_work(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "verify", "gate", "--pass", "collections:OrderedDict",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 2
    assert "collections.OrderedDict, not an ExportPass subclass" in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("verify gate")]
    assert len(lines) == 1 and not any(line.startswith("gate:") for line in proc.stderr.splitlines())
    assert not (tmp_path / "out" / "gate.json").exists()


def test_cli_bad_usage():
    proc = subprocess.run([sys.executable, "-m", "verify", "gate", "--pass", "no_such_module:Nope"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 2 and "cannot import" in proc.stderr
    for extra, message in ((["--since-gated", "--changed-since", "HEAD"], "two different bases"),
                           (["-j", "0"], "-j must be at least 1"),
                           (["--pass-timeout", "0"], "--pass-timeout must be positive")):
        proc = subprocess.run([sys.executable, "-m", "verify", "gate", *extra],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-500:]


# ---- infer ---------------------------------------------------------------------------------

_AP = "executorch.backends.arm._passes."


@pytest.mark.parametrize("pass_ref, vocab_op, expected", [
    # hand-checked: each call_operator rewrites only its edge op on FP graphs (the aten.* entries
    # of target_ops never occur in edge graphs); the clamp/abs guards the generator puts in front
    # of sinh/expm1/sqrt are cold and must not be proposed
    (_AP + "decompose_sqrt_pass:DecomposeSqrtPass", "sqrt", ["aten.sqrt.default"]),
    (_AP + "decompose_gelu_pass:DecomposeGeluPass", "gelu", ["aten.gelu.default"]),
    (_AP + "decompose_sinh_pass:DecomposeSinhPass", "sinh", ["aten.sinh.default"]),
    (_AP + "decompose_atan_pass:DecomposeAtanPass", "atan", ["aten.atan.default"]),
    (_AP + "decompose_sign_pass:DecomposeSignPass", "sign", ["aten.sign.default"]),
    (_AP + "decompose_expm1_pass:DecomposeExpm1Pass", "expm1", ["aten.expm1.default"]),
])
def test_infer_matches_hand_checked_arm_passes(pass_ref, vocab_op, expected):
    from verify.gate.infer import infer

    result = infer(gp.resolve(pass_ref), examples=4, max_ops=3, ops=[vocab_op, "abs", "neg"])
    assert result.graphs_failed == 0, result.errors
    assert list(result.inferred) == expected
    assert result.fit is AnnotationFit.EQUAL


@pytest.mark.parametrize("name, expected, comparison", [
    ("UndeclaredRewritePass", ["aten.neg.default", "aten.relu.default"], AnnotationFit.TOO_SMALL),
    # downstream nodes only get a new val (float64 input): not a rewrite
    ("ChangeDtypePass", ["aten.relu.default"], AnnotationFit.EQUAL),
    # the clone is inserted in call() before the retrace: the sigmoid's args change there
    ("InsertBeforeRetracePass", ["aten.sigmoid.default"], AnnotationFit.EQUAL),
])
def test_infer_on_test_passes(name, expected, comparison):
    from verify.gate.infer import infer

    vocab = {"UndeclaredRewritePass": ["relu", "neg", "abs"], "ChangeDtypePass": ["relu", "abs", "add"],
             "InsertBeforeRetracePass": ["sigmoid", "abs", "add"]}[name]
    result = infer(gp.resolve(str(ROOT / PASSES) + ":" + name), examples=5, max_ops=4, ops=vocab)
    assert list(result.inferred) == expected
    assert result.fit is comparison


# ---- which passes: --changed-since ---------------------------------------------------------

TRANSPOSE = "executorch.exir.passes.normalize_transpose_pass.NormalizeTransposePass"
NOOP = "executorch.backends.arm._passes.remove_noop_pass.RemoveNoopPass"
SCALAR = "executorch.exir.passes.scalar_to_tensor_pass.ScalarToTensorPass"
SYM = "executorch.exir.passes.sym_to_tensor_pass.SymToTensorPass"


def test_changed_since_compares_entries_not_source_lines(tmp_path):
    """A copy of the real annotation package in a scratch repository: what is gated is what the
    entries claim (op sets, flags) and what lookup answers, not which lines changed."""
    from fastpass.annotations import lookup

    folder = tmp_path / "fastpass" / "annotations"
    folder.mkdir(parents=True)
    for path in (ROOT / "fastpass" / "annotations").glob("*.py"):
        (folder / path.name).write_text(path.read_text())
    (tmp_path / "fastpass" / "_copy.py").write_text("Y = 1\n")  # a core module
    git = lambda *a: subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *a],  # noqa: E731
                                    cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "base")
    registry, lookup_py, discover_py = folder / "arm_registry.py", folder / "_lookup.py", folder / "_discover.py"
    text = registry.read_text()
    assert gp.changed_since("HEAD", repo=tmp_path) == (set(), False)

    # whitespace, comments, a reworded `why` and keyword-vs-positional arguments: nothing to gate
    reformatted = (text.replace("REGISTRY: dict[str, Entry] = {\n", "# a comment\n\nREGISTRY: dict[str, Entry] = {\n\n")
                   .replace("UPSTREAM, skip_sound=False, copy_sound=True,", "UPSTREAM ,  False,  True ,")
                   .replace("not skip-sound for fastpass", "so fastpass must not skip it"))
    assert reformatted != text
    registry.write_text(reformatted)
    assert gp.changed_since("HEAD", repo=tmp_path) == (set(), False)

    # one pass's op set changes (through its helper function): exactly that pass
    registry.write_text(text.replace("frozenset({torch.ops.aten.t.default})",
                                     "frozenset({torch.ops.aten.t.default, torch.ops.aten.permute.default})"))
    assert gp.changed_since("HEAD", repo=tmp_path) == ({TRANSPOSE}, False)
    # one pass's flag changes: exactly that pass
    registry.write_text(text.replace("UPSTREAM, skip_sound=False, copy_sound=True,",
                                     "UPSTREAM, skip_sound=False, copy_sound=False,"))
    assert gp.changed_since("HEAD", repo=tmp_path) == ({NOOP}, False)
    # a rule-based entry claims its rule's code: a changed call rule names no op, but gates its
    # pass, and a changed helper gates every rule that calls it
    registry.write_text(text.replace("isinstance(value, (float, int, bool))", "isinstance(value, (float, int))"))
    assert gp.changed_since("HEAD", repo=tmp_path) == ({SCALAR}, False)
    registry.write_text(text.replace("elif not argument.kwarg_only and i < len(args):",
                                     "elif i < len(args):"))
    assert gp.changed_since("HEAD", repo=tmp_path) == ({SCALAR, SYM}, False)
    registry.write_text(text)

    # lookup and discovery are compared by what they answer: a comment moves nothing; discovery
    # no longer reading upstream's target_ops moves exactly the passes annotated through it
    lookup_text, discover_text = lookup_py.read_text(), discover_py.read_text()
    lookup_py.write_text(lookup_text + "\n# a comment\n")
    assert gp.changed_since("HEAD", repo=tmp_path) == (set(), False)
    lookup_py.write_text(lookup_text)
    discover_py.write_text(discover_text.replace('return ops, "upstream:target_ops"', "return None"))
    names, everything = gp.changed_since("HEAD", repo=tmp_path)
    assert names and not everything
    for name in names:
        module, _, cls_name = name.rpartition(".")
        assert lookup(getattr(importlib.import_module(module), cls_name)).source == "upstream:target_ops"
    discover_py.write_text(discover_text)

    # a package that does not load, and a change to the copy machinery: everything
    registry.write_text(text + "\nraise RuntimeError('broken')\n")
    assert gp.changed_since("HEAD", repo=tmp_path) == (set(), True)
    registry.write_text(text)
    (tmp_path / "fastpass" / "_copy.py").write_text("Y = 2\n")
    assert gp.changed_since("HEAD", repo=tmp_path) == (set(), True)


def test_the_gated_revision_is_the_ledgers(tmp_path):
    """One store: `--since-gated` reads the revision the proof ledger was gated at (its
    `gated_at`, written with the proofs by a registry run's `--record-gated`); a ledger that names
    none, or cannot be read, is a one-line refusal; recording needs fastpass committed."""
    from fastpass.annotations import _proofs

    folder = tmp_path / "fastpass" / "annotations"
    folder.mkdir(parents=True)
    (folder / "arm_registry.py").write_text("REGISTRY: dict = {}\n")
    ledger = {"format": _proofs.LEDGER_FORMAT, "gated_at": "0123abc",
              "proven_against": {"machinery": "0" * 16, "executorch": "1", "torch": "2"}, "passes": {}}
    (folder / "proofs.json").write_text(json.dumps(ledger))
    git = lambda *a: subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *a],  # noqa: E731
                                    cwd=tmp_path, check=True, capture_output=True, text=True)
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "base")
    assert gp.gated_at(repo=tmp_path) == "0123abc"
    (folder / "arm_registry.py").write_text("REGISTRY: dict = {'x': 1}\n")
    with pytest.raises(gp.PassRefError, match="uncommitted"):
        gp.head_if_fastpass_committed(repo=tmp_path)  # the tree's fastpass is not HEAD's: nothing to record
    git("commit", "-qam", "change")
    assert gp.head_if_fastpass_committed(repo=tmp_path) == git("rev-parse", "HEAD").stdout.strip()
    (folder / "proofs.json").write_text(json.dumps({**ledger, "gated_at": ""}))
    with pytest.raises(gp.PassRefError, match="names no gated revision"):
        gp.gated_at(repo=tmp_path)
    (folder / "proofs.json").write_text(json.dumps(ledger)[:30])
    with pytest.raises(gp.PassRefError, match="cannot read the gated revision.*not valid JSON"):
        gp.gated_at(repo=tmp_path)


def test_the_ledger_records_the_gated_revision_for_a_registry_run_only(tmp_path):
    """ledger.record: a registry run writes its commit as `gated_at`; a `--pass` run (partial)
    leaves the one there."""
    from verify.gate import ledger as gate_ledger

    path = tmp_path / "proofs.json"
    gate_ledger.record([], {}, {}, "aaa", [], path=path)
    assert json.loads(path.read_text())["gated_at"] == "aaa"
    gate_ledger.record([], {}, {}, "bbb", [], path=path, partial=True)
    assert json.loads(path.read_text())["gated_at"] == "aaa"
    gate_ledger.record([], {}, {}, "ccc", [], path=path)
    assert json.loads(path.read_text())["gated_at"] == "ccc"


def test_repository_records_a_gated_revision():
    rev = gp.gated_at()
    assert len(rev) == 40 and int(rev, 16) >= 0


# ---- verdicts and their evidence (no lowering) -----------------------------------------------

def test_evidence_counts_only_identical_examples_in_which_fastpass_acted():
    from verify.gate.verdict import Evidence, PassVerdict

    copy = Evidence(Feature.COPY)
    copy.add(2, 0, 3, True, {"aten.abs.default"})  # acted, identical: evidence
    copy.add(1, 0, 4, False, {"aten.neg.default"})  # acted, but the results differed: none
    copy.add(1, 0, 0, True)  # invoked, nothing copied: none
    copy.add(0, 0, 0, True)  # not invoked
    assert (copy.examples, copy.examples_invoked, copy.examples_with_action, copy.copied_nodes) == (4, 3, 1, 7)
    assert copy.ops_maybe_copied == {"aten.abs.default": 1}
    v = PassVerdict("m.P", "P", "m:P", evidence={Feature.COPY: copy})
    v.judge(2)
    assert v.verdict is ProofStatus.UNEXERCISED
    assert v.reason == "copy: 1 of 4 examples copied nodes (pass invoked in 3; 2 needed)"
    v.verdict = ProofStatus.SOUND
    v.judge(1)
    assert v.verdict is ProofStatus.SOUND and v.examples_with_evidence == 1
    found = PassVerdict("m.Q", "Q", "m:Q", verdict=ProofStatus.UNSOUND_COPY, evidence={Feature.COPY: Evidence(Feature.COPY)})
    found.judge(5)
    assert found.verdict is ProofStatus.UNSOUND_COPY and found.verdict.fails  # evidence never hides a divergence


def test_claims_waive_skip_only_where_fastpass_cannot_skip():
    from types import SimpleNamespace

    from fastpass.annotations import lookup
    from verify.gate.verdict import Claim

    no_ops = Claim.of(SimpleNamespace(skip_sound=True, copy_sound=True, targeted_ops=frozenset()))
    assert no_ops.features == (Feature.COPY,) and "without targeted ops" in no_ops.waived[Feature.SKIP]
    both = Claim.of(SimpleNamespace(skip_sound=True, copy_sound=True, targeted_ops=frozenset({"x"})))
    assert both.features == (Feature.SKIP, Feature.COPY) and not both.waived
    # an ARM op-targeted pass: upstream's should_run_pass already skips it without its target ops
    sign = gp.resolve(_AP + "decompose_sign_pass:DecomposeSignPass")
    assert gp.upstream_skip_covers(sign)
    covered = Claim.of(lookup(sign), gp.upstream_skip_covers(sign))
    assert Feature.SKIP not in covered.features and "should_run_pass" in covered.waived[Feature.SKIP]
    toy = gp.resolve(str(ROOT / PASSES) + ":ChangeDtypePass")
    assert not gp.upstream_skip_covers(toy)  # a plain ExportPass: fastpass's skip is the only one


def test_an_override_of_should_run_pass_that_only_adds_reasons_to_skip_still_covers_fastpass_skip():
    """DecomposePermuteForU55Pass: `if not U55: return False; return super().should_run_pass(gm)`
    skips in every call ArmOpTargetedPass's own test skips, so fastpass's skip never applies; an
    override that may run the pass where upstream's test would not (returns True) does not cover."""
    from executorch.backends.arm._passes import DecomposePermuteForU55Pass

    from fastpass.annotations import Entry, overridden

    assert gp.upstream_skip_covers(DecomposePermuteForU55Pass)

    class Widens(DecomposePermuteForU55Pass):
        def should_run_pass(self, graph_module):
            if graph_module is None:
                return True
            return super().should_run_pass(graph_module)

    class Narrows(DecomposePermuteForU55Pass):
        def should_run_pass(self, graph_module):
            if not graph_module.graph.nodes:
                return False
            return super().should_run_pass(graph_module)

    class NarrowsByConjunction(DecomposePermuteForU55Pass):
        def should_run_pass(self, graph_module):
            return bool(graph_module.graph.nodes) and super().should_run_pass(graph_module)

    class WidensByDisjunction(DecomposePermuteForU55Pass):
        def should_run_pass(self, graph_module):
            return graph_module is None or super().should_run_pass(graph_module)

    ops = frozenset(DecomposePermuteForU55Pass.target_ops)
    entry = Entry(ops, True, True, why="test")
    with overridden({Widens: entry, Narrows: entry, NarrowsByConjunction: entry, WidensByDisjunction: entry}):
        assert not gp.upstream_skip_covers(Widens)
        assert gp.upstream_skip_covers(Narrows)
        assert gp.upstream_skip_covers(NarrowsByConjunction)
        assert not gp.upstream_skip_covers(WidensByDisjunction)
    # the real one: `return fp and not int and super().should_run_pass(gm)`
    from executorch.backends.arm._passes.cast_int_comparison_inputs_pass import CastIntComparisonInputsPass

    assert gp.upstream_skip_covers(CastIntComparisonInputsPass)


def test_biased_graphs_reach_passes_that_target_edge_forms():
    """A pass that targets an op in the form to_edge gives it (`expand_copy`, not `expand`) must
    still get graphs biased toward it: the split matches every form an op presents to a pass."""
    from executorch.exir.dialects._ops import ops as exir_ops

    from verify.gate.graphs import vocabulary_split

    hit, miss = vocabulary_split([exir_ops.edge.aten.expand_copy.default])
    assert hit, "no vocabulary op presents expand_copy"
    assert not set(hit) & set(miss)


def test_graphs_put_the_ops_a_pass_names_but_its_annotation_misses_in_front_of_it():
    """An annotation that misses an op its pass rewrites must still meet that op: the gate also
    draws the ops the pass's code names (`ops_named_by`), each with a share of the copy-biased
    graphs. Here DecomposeMeanDimPass annotated without mean: mean must still have a route."""
    from executorch.backends.arm._passes.decompose_meandim_pass import DecomposeMeanDimPass

    from fastpass.annotations import lookup
    from generators.random import ops_in_vocabulary
    from verify.gate.graphs import suspect_routes, vocabulary_split
    from verify.gate.passes import op_name, ops_named_by

    named = ops_named_by(DecomposeMeanDimPass)
    assert {"aten.mean.dim", "aten.sum.dim_IntList"} <= named  # the op it matches, one it emits
    wrong = frozenset(o for o in lookup(DecomposeMeanDimPass).targeted_ops if "mean" not in op_name(o))
    miss = vocabulary_split(wrong)[1] if wrong else list(ops_in_vocabulary())
    routes = suspect_routes(wrong, named, miss)
    assert "mean" in routes["aten.mean.dim"]
    assert not suspect_routes(wrong, (), miss)  # without the pass's code, nothing steers toward mean


def test_copy_graphs_present_the_form_a_pass_acts_on():
    """A pass that acts on one form of its op only (DecomposeAddSubAlphaPass: add/sub with
    alpha != 1) gets copy graphs with that form behind a cold op (`reach.FORM_ROUTES`); without
    the route, biasing by targeted ops (add, sub) draws alpha != 1 as one add/sub form among many."""
    from executorch.backends.arm._passes import DecomposeAddSubAlphaPass
    from hypothesis import HealthCheck, given, settings

    from fastpass.annotations import lookup
    from verify.gate.graphs import form_route, strategy_for

    forms = form_route(DecomposeAddSubAlphaPass)
    assert forms == ["add_alpha"]
    targeted = lookup(DecomposeAddSubAlphaPass).targeted_ops
    drawn: list[list[str]] = []

    @settings(max_examples=40, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy_for(targeted, 4, want=FeatureSet.COPY, forms=forms))
    def draw(spec):
        drawn.append(spec.op_names())

    draw()
    with_form_behind_cold = [n for n in drawn if "add_alpha" in n and n[0] != "add_alpha"]
    assert len(with_form_behind_cold) >= 6, drawn

    drawn.clear()
    strategy = strategy_for(targeted, 4, want=FeatureSet.COPY)
    given(strategy)(settings(max_examples=40, database=None, derandomize=True, deadline=None,
                             suppress_health_check=list(HealthCheck))(lambda spec: drawn.append(spec.op_names())))()
    without_route = [n for n in drawn if "add_alpha" in n and n[0] != "add_alpha"]
    assert len(with_form_behind_cold) >= 2 * len(without_route), (len(with_form_behind_cold), len(without_route))


def test_biased_strategy_does_not_follow_evidence_gathered_while_it_draws():
    """A top-up round's strategy reads what each pass lacks once: Hypothesis re-draws to replay
    and shrink, and a strategy that changed with the evidence gathered meanwhile drew
    differently (FlakyStrategyDefinition killed a whole-registry run in the ethos-u85 top-up)."""
    from executorch.backends.arm._passes import DecomposeAddSubAlphaPass
    from hypothesis import HealthCheck, given, seed, settings

    from verify.gate.search import _biased

    lacking = {"p": FeatureSet.COPY}
    strategy = _biased({"p": DecomposeAddSubAlphaPass}, 4, None, lambda qn: lacking[qn])(["p"])
    lacking["p"] = FeatureSet.SKIP  # evidence arrived after the strategy was built

    def draws() -> list[list[str]]:
        out: list[list[str]] = []

        @seed(7)
        @settings(max_examples=8, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(strategy)
        def draw(spec):
            out.append(spec.op_names())

        draw()
        return out

    first = draws()
    assert any("add_alpha" in names for names in first), first  # still the copy-biased mix it was built for
    assert draws() == first


def test_a_failing_search_is_an_error_verdict_not_a_lost_run(tmp_path, monkeypatch):
    """When the graph search itself fails (here: injected; in the field, Hypothesis's
    FlakyStrategyDefinition), the stage's search ends with an `error` verdict that CI fails on,
    and the verdicts and evidence gathered so far are kept for the report."""
    from executorch.backends.arm._passes import DecomposeAddSubAlphaPass

    from verify.gate import search

    def broken_search(*args, **kwargs):
        raise RuntimeError("Inconsistent data generation!")

    monkeypatch.setattr(search, "hypothesis_search", broken_search)
    qn = "executorch.backends.arm._passes.DecomposeAddSubAlphaPass"
    reg = search._Registry({qn: DecomposeAddSubAlphaPass}, tmp_path, 0, 4, 1.0, None, 5)
    done = reg.search("edge-fp", {qn}, lambda names: None, 3, ":top-up")
    assert done == 0
    error = reg.verdicts["<search-error:edge-fp:top-up>"]
    assert error.verdict is ProofStatus.ERROR and error.verdict.fails
    assert "Inconsistent data generation" in error.reason
    assert qn in reg.verdicts  # the pass's own verdict is still there to report


def test_stock_nondeterminism_is_vacuous_not_unsound_and_a_fault_behind_it_is_not_excused(tmp_path):
    """Before an example counts against a pass, stock is relowered under two opposite node-set
    orders (verify.lowering.node_order): a difference one of them reproduces is stock's own."""
    v = gate("TagsInNodeSetOrderPass", tmp_path / "g", ["neg", "relu", "abs"], examples=3)
    # Every example is vacuous here (not comparable): the gate cannot decide, which is an error
    # (it fails CI and says why), never "unsound" -- and never "sound".
    assert v.verdict is ProofStatus.ERROR, (v.verdict, v.reason)
    assert "every example was vacuous" in v.reason and "node-set iteration order" in v.reason, v.reason
    assert "gives exactly fastpass's result" in v.reason
    faulty = gate("TagsInNodeSetOrderWithFaultPass", tmp_path / "h", ["neg", "relu", "abs"], examples=3)
    assert faulty.verdict is ProofStatus.UNSOUND_COPY, (faulty.verdict, faulty.reason)
