"""A registry search's divergence that no annotated pass is first to show (`<unattributed>`,
e.g. in the delegate bytes after every pass agreed) leaves a reproducer `verify replay` can
replay: it names no pass (NO_PASS), so the replay imports nothing from the file (no --trust)
and lowers with the registry's annotations but the ones fastpass was off for. A difference
stock makes itself (Vela's command stream for one TOSA graph of a vector_norm differs between
two compilations in one process) replays as `nondeterministic`, never as `identical`."""

from __future__ import annotations

from pathlib import Path

from verify.gate import check, reproducer
from verify.gate import passes as gp
from verify.gate.verdict import PassVerdict
from verify.report.reproducer import NO_PASS
from verify.report.trust import authorize, inspect, read
from fastpass.annotations import ProofStatus
from verify.vocabulary import FeatureSet, Route, Verdict


def _spec():
    from generators.random import GraphSpec

    return GraphSpec.from_dict({"format": 1, "input_shapes": [[1, 4]], "seed": 0, "outputs": [1],
                                "ops": [{"inputs": [0], "op": "relu", "params": {}, "shape": [1, 4]}]})


def _saved(tmp_path: Path, excluded: list[str]) -> Path:
    verdict = PassVerdict("<unattributed>", "unattributed", NO_PASS, ProofStatus.ERROR, "divergence at delegate0",
                          Route.BATCH, "ethos-u55")
    outcome = check.Outcome(True, ["payload"], "payload: delegate0 differs", where="delegate0")
    return reproducer.write_reproducer(tmp_path, verdict, ProofStatus.ERROR, FeatureSet.BOTH, _spec(), outcome,
                                       Route.PIPELINE, "ethos-u55", excluded, per_stage=True)


def test_an_unattributed_reproducer_runs_no_code_from_its_file(tmp_path):
    saved = read(_saved(tmp_path, ["a.B"]))
    execution = authorize(saved, trust=False)  # no UsageError: nothing from the file is imported
    assert not execution.runs_code_from_file and inspect(saved) == execution
    assert "registry" in execution.what[0]
    assert f"python -m verify replay {saved.path}\n" in saved.path.read_text()


def test_its_replay_lowers_with_the_registry_but_the_excluded_passes(tmp_path, monkeypatch):
    with check.quiet():
        annotated = gp.annotated_passes()
    excluded = sorted(annotated)[:3]
    calls = []

    def pipeline_example(spec, cls, enabled, stage, keep=None, copy_only=()):
        calls.append((cls, enabled, stage, keep))
        return check.Outcome(True, ["payload"], "payload differs", where="delegate0")

    monkeypatch.setattr(check, "pipeline_example", pipeline_example)
    replayed = reproducer.replay_saved(read(_saved(tmp_path, excluded)))
    assert replayed.verdict is Verdict.DIVERGENT and replayed.first_divergent_pass == "delegate0"
    ((cls, enabled, stage, keep),) = calls
    assert cls is None and enabled is FeatureSet.BOTH and stage == "ethos-u55"
    assert set(keep) == {c for qn, c in annotated.items() if qn not in excluded} and keep


def test_a_difference_stock_makes_itself_replays_as_nondeterministic(tmp_path, monkeypatch):
    monkeypatch.setattr(check, "pipeline_example", lambda *a, **k: check.Outcome(
        False, vacuous="not comparable: stock lowered again differs", stocks_own=True))
    replayed = reproducer.replay_saved(read(_saved(tmp_path, [])))
    assert replayed.verdict is Verdict.NONDETERMINISTIC and replayed.exit_status == 1
    monkeypatch.setattr(check, "pipeline_example", lambda *a, **k: check.Outcome(False))
    assert reproducer.replay_saved(read(_saved(tmp_path, []))).verdict is Verdict.IDENTICAL
