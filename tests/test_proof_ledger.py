"""The proof ledger (fastpass/annotations/proofs.json): fastpass uses an annotation under its
default trust only when the ledger proves it sound for exactly its current claim, machinery and
versions; every lowering says what it rested on; and the checked-in ledger holds for every
annotation in effect (what CI checks in seconds)."""

from __future__ import annotations

import json
import warnings

import pytest

import fastpass
from fastpass.annotations import Entry, _proofs, lookup, overridden
from tests.models.tiny import make
from verify import export_program, get_target, lower

# A pass of the tiny model's TOSA INT lowering that fastpass copies nodes in (its annotation is
# copy-sound): the one the tests below prove, withhold and edit.
PASS = "executorch.backends.arm._passes.decompose_linear_pass.DecomposeLinearPass"


@pytest.fixture(scope="module")
def target():
    return get_target("tosa-int")


@pytest.fixture(scope="module")
def program(target):
    model, inputs = make()
    return export_program(model, inputs, target)


@pytest.fixture
def ledger_file(tmp_path):
    """A ledger of the test's own (fastpass reads it instead of the checked-in one), restored after."""
    path = tmp_path / "proofs.json"
    yield path
    _proofs.reload()


def write_ledger(path, passes: dict, against: _proofs.ProvenAgainst | None = None) -> None:
    against = against or _proofs.ProvenAgainst.now()
    path.write_text(json.dumps({"format": _proofs.LEDGER_FORMAT, "gated_at": "test", "proven_against": against.to_json(),
                                "gate": {}, "counts": {}, "passes": passes}))
    _proofs.reload(path)


def sound_entry(cls) -> dict:
    return {"verdict": "sound", "claim": _proofs.claim_digest(lookup(cls))}


def copied_in(stats: dict, name: str) -> int:
    return sum(r["copied"] for r in stats["per_pass"] if r["qualname"] == name)


def lowered(program, target, trust="proven"):
    result = lower(program, target, "fastpass", trust=trust, reference_sets=0, snapshots=False, serialize=False)
    assert result.ok, result.error
    return result.fastpass_stats


def pass_class():
    return _proofs.class_named(PASS)


def test_an_annotation_without_proof_is_used_only_under_trust_all(program, target, ledger_file):
    write_ledger(ledger_file, {})  # proves nothing
    assert copied_in(lowered(program, target), PASS) == 0
    stats = lowered(program, target, trust="all")
    assert copied_in(stats, PASS) > 0
    assert stats["relied_on"][PASS] == "unproven"  # ... and the lowering says it rested on no proof
    # a skip rests on an annotation as much as a copy does: both are named
    skipped = {r["qualname"] for r in stats["per_pass"] if r["skipped"] and r["skip_reason"] == "no-targeted-ops"}
    assert skipped and skipped <= set(stats["relied_on"]), skipped - set(stats["relied_on"])


def test_a_proven_annotation_is_used_and_named_with_its_status(program, target, ledger_file):
    write_ledger(ledger_file, {PASS: sound_entry(pass_class())})
    stats = lowered(program, target)
    assert copied_in(stats, PASS) > 0
    assert stats["relied_on"] == {PASS: "sound"}  # the only proven annotation is the only one relied on


def test_a_proof_of_other_machinery_is_stale_not_used_and_warned_once(program, target, ledger_file, monkeypatch):
    now = _proofs.ProvenAgainst.now()
    write_ledger(ledger_file, {PASS: sound_entry(pass_class())},
                 _proofs.ProvenAgainst("0" * 16, now.executorch, now.torch))
    assert _proofs.status_of(pass_class()) is _proofs.ProofStatus.STALE
    monkeypatch.setattr(fastpass._patches, "_warned_stale", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = lowered(program, target)
        lowered(program, target)
    assert copied_in(stats, PASS) == 0
    [warning] = [w for w in caught if "changed since" in str(w.message)]  # once, not per enable
    assert "1 annotation(s)" in str(warning.message)


def test_an_edited_claim_is_stale(ledger_file):
    cls = pass_class()
    write_ledger(ledger_file, {PASS: sound_entry(cls)})
    assert _proofs.status_of(cls) is _proofs.ProofStatus.SOUND
    edited = Entry(frozenset(), skip_sound=True, copy_sound=True, why="claims more than was proven (test)")
    with overridden({cls: edited}):
        assert _proofs.status_of(cls) is _proofs.ProofStatus.STALE
    assert _proofs.status_of(cls) is _proofs.ProofStatus.SOUND


def test_trust_is_checked():
    with pytest.raises(ValueError, match="unknown trust"):
        fastpass.enable(trust="some")
    assert not fastpass.is_enabled()


def unproven_annotations() -> dict[str, str]:
    """Every annotated pass whose annotation in effect the checked-in ledger does not prove as it is
    now (stale, or no entry): an annotation, fastpass's machinery or executorch/torch changed
    without a recorded gate run. Of the passes this process knows: see `product_unproven`."""
    from verify.gate.passes import annotated_passes

    _proofs.reload()
    found = {}
    for name, cls in annotated_passes().items():
        status = _proofs.status_of(cls)
        if status in (_proofs.ProofStatus.STALE, _proofs.ProofStatus.UNPROVEN):
            found[name] = status.value
    return found


def product_unproven() -> dict[str, str]:
    """`unproven_annotations` in a fresh process: the passes a user's process has, not the toy
    passes other tests of this worker loaded from files."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = "import json; from tests.test_proof_ledger import unproven_annotations; print(json.dumps(unproven_annotations()))"
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_checked_in_ledger_proves_every_annotation_as_it_is():
    """CI's check: an annotation changed without a gate run is found here in seconds."""
    found = product_unproven()
    assert not found, (f"{len(found)} annotation(s) have no current proof ({', '.join(sorted(found)[:5])}...): "
                       f"run `python -m verify gate --since-gated --record-gated` and commit the ledger")


def test_the_ledger_check_finds_an_annotation_edited_without_a_proof():
    """The check above, shown to fail: one annotation edited, nothing re-proven."""
    cls = pass_class()
    edited = Entry(frozenset(), skip_sound=True, copy_sound=True, why="edited without a gate run (test)")
    before = unproven_annotations()  # this process's toy passes (other tests') have no proof: not the point
    with overridden({cls: edited}):
        assert unproven_annotations() == {**before, PASS: "stale"}
    assert PASS not in before


def test_a_pass_run_records_its_passes_and_keeps_the_rest_of_the_ledger(ledger_file):
    """`verify gate --pass X --record-gated`: X's entry is replaced (the others' proofs still hold:
    the machinery is the same), the revision whose every annotation was proven stays."""
    from verify.gate import ledger
    from verify.gate.verdict import Evidence, PassVerdict
    from fastpass.annotations import ProofStatus
    from verify.vocabulary import Feature

    cls = pass_class()
    other = "some.other.Pass"
    path = ledger_file  # fastpass reads it during the test; the fixture puts the checked-in one back
    write_ledger(path, {PASS: {"verdict": "unexercised", "claim": _proofs.claim_digest(lookup(cls)), "reason": "few"},
                        other: {"verdict": "sound", "claim": "abc"}})
    document = json.loads(path.read_text())
    document["gated_at"] = "whole-run-revision"
    path.write_text(json.dumps(document))
    verdict = PassVerdict(PASS, "DecomposeLinearPass", "ref", ProofStatus.SOUND, stage="ethos-u55",
                          evidence={Feature.COPY: Evidence(Feature.COPY, examples=30, examples_with_action=12)})
    counts = ledger.record([verdict], {PASS: cls}, {"examples": 30}, "pass-run-revision", [PASS, other], path,
                           partial=True)
    written = json.loads(path.read_text())
    assert counts == {"sound": 2}
    assert written["gated_at"] == "whole-run-revision"
    assert written["passes"][PASS]["verdict"] == "sound" and written["passes"][PASS]["proven_at"] == "pass-run-revision"
    assert written["passes"][PASS]["gate"] == {"examples": 30}
    assert written["passes"][other] == {"verdict": "sound", "claim": "abc"}
    assert _proofs.reload(path).status(PASS, lookup(cls)) is _proofs.ProofStatus.SOUND
    with pytest.raises(ValueError, match="no pass is unsound"):
        ledger.record([PassVerdict(PASS, "x", "ref", ProofStatus.UNSOUND_COPY)], {PASS: cls}, {}, "r", [PASS], path)
    # a later focused run that proved less (unexercised, 1 example) does not take the proof back
    weaker = PassVerdict(PASS, "DecomposeLinearPass", "ref", ProofStatus.UNEXERCISED, stage="edge-fp",
                         evidence={Feature.COPY: Evidence(Feature.COPY, examples=30, examples_with_action=1)})
    ledger.record([weaker], {PASS: cls}, {"examples": 30}, "later-revision", [PASS, other], path, partial=True)
    kept = json.loads(path.read_text())["passes"][PASS]
    assert kept["verdict"] == "sound" and kept["proven_at"] == "pass-run-revision"
    # ... nor does a whole run: the proof stays, with the settings of the run that made it
    ledger.record([weaker], {PASS: cls}, {"examples": 60}, "whole-run", [PASS, other], path)
    kept = json.loads(path.read_text())["passes"][PASS]
    assert kept["verdict"] == "sound" and kept["proven_at"] == "pass-run-revision" and kept["gate"] == {"examples": 30}
    # a whole run that proves more replaces it, and a changed claim is recorded whatever it found
    stronger = PassVerdict(PASS, "DecomposeLinearPass", "ref", ProofStatus.SOUND, stage="edge-fp",
                           evidence={Feature.COPY: Evidence(Feature.COPY, examples=60, examples_with_action=20)})
    ledger.record([stronger], {PASS: cls}, {"examples": 60}, "whole-run-2", [PASS, other], path)
    assert json.loads(path.read_text())["passes"][PASS]["proven_at"] == "whole-run-2"
    document = json.loads(path.read_text())
    document["passes"][PASS]["claim"] = "an-older-claim"
    path.write_text(json.dumps(document))
    ledger.record([weaker], {PASS: cls}, {"examples": 60}, "whole-run-3", [PASS, other], path)
    assert json.loads(path.read_text())["passes"][PASS]["verdict"] == "unexercised"
