"""The gate's check in the quantizer's transform_for_annotation pipeline (verify.gate.check:
how "annotation"; verify.gate.run.annotation_checks).

fastpass acts in that pipeline whenever a user quantizes under it (`python -m fastpass run`), and
a pass both pipelines invoke has one annotation for both. The lowering stages quantize outside
fastpass, so the gate's self-test mutant "DecomposeGroupNormPass without aten.group_norm" (only
the quantizer's ATen graph holds that op) passed every stage as `unexercised`. These tests plant
that mutant: the annotation check must find it, and each part it rests on must matter."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from generators.random import interpret
from verify.gate import check, graphs as gg, passes as gp, reproducer, run
from verify.gate.verdict import make_verdict
from verify.report.reproducer import load
from fastpass.annotations import ProofStatus
from verify.vocabulary import FeatureSet, Route, Verdict

EXAMPLES = 60  # the gate's default, what CI draws


@pytest.fixture(scope="module")
def group_norm():
    from executorch.backends.arm._passes.decompose_groupnorm_pass import DecomposeGroupNormPass

    from fastpass.annotations import Entry, lookup

    cls = DecomposeGroupNormPass
    ann = lookup(cls)
    kept = frozenset(o for o in ann.targeted_ops if gp.op_name(o) != "aten.group_norm.default")
    assert kept and len(kept) < len(ann.targeted_ops)
    return cls, Entry(kept, ann.skip_sound, ann.copy_sound, why="test: aten.group_norm dropped")


def _no_affine(first: str):
    """`first` -> group_norm without weight and bias (parameters are get_attr nodes, and a graph
    with one is never a retrace fixed point: fastpass skips nothing in it)."""
    par = next(p for p in range(50)
               if not dict(interpret([(1, 4, 6, 6)], [("group_norm", 0, p)]).ops[0].params)["affine"])
    return interpret([(1, 4, 6, 6)], [(first, 0, 0), ("group_norm", 0, par)])


def test_the_quantizer_graph_is_aimed_at_with_its_aten_ops_only(group_norm):
    cls, entry = group_norm
    from fastpass.annotations import lookup, overridden

    assert [gp.op_name(o) for o in gp.aimed_ops(cls, lookup(cls).targeted_ops, annotation=True)] \
        == ["aten.group_norm.default"]
    with overridden({cls: entry}):
        assert gp.aimed_ops(cls, lookup(cls).targeted_ops, annotation=True) == []
        assert all(type(o) is not torch._ops.OpOverload for o in lookup(cls).targeted_ops)


def test_fastpass_acts_in_the_quantizer_pipeline_only_after_a_retrace(group_norm):
    """The mutant changes the pipeline's output only where an earlier pass of it retraced (a
    sign decomposed): `annotation_route` draws such an op beside every graph."""
    cls, entry = group_norm
    from fastpass.annotations import overridden

    assert "sign" in gg.annotation_route(cls) and "remainder" in gg.annotation_route(cls)
    with overridden({cls: entry}):
        after_sign = check.example(_no_affine("sign"), cls, FeatureSet.SKIP, run.ANNOTATION_STAGE, Route.ANNOTATION)
        after_relu = check.example(_no_affine("relu"), cls, FeatureSet.SKIP, run.ANNOTATION_STAGE, Route.ANNOTATION)
    assert after_sign.diverged and after_sign.where == "quantizer pipeline output", after_sign
    assert not after_relu.diverged and after_relu.skipped == 0, after_relu
    real = check.example(_no_affine("sign"), cls, FeatureSet.SKIP, run.ANNOTATION_STAGE, Route.ANNOTATION)
    assert not real.diverged, real


def test_the_annotation_check_kills_the_mutant_and_its_reproducer_replays(group_norm, tmp_path):
    """annotation_checks on a registry verdict that the lowering stages called sound: the
    mutant ends unsound-skip, with a reproducer that replays as divergent."""
    cls, entry = group_norm
    from fastpass.annotations import overridden

    qn = gp.qualname(cls)
    with overridden({cls: entry}):
        verdicts = {qn: make_verdict(cls)}
        run.annotation_checks({qn: cls}, verdicts, EXAMPLES, tmp_path, 0, 4, 30.0, None, 5, None)
        v = verdicts[qn]
        assert v.verdict is ProofStatus.UNSOUND_SKIP, (v.verdict, v.reason)
        (path,) = v.reproducers.values()
        replayed = reproducer.replay_saved(load(Path(path)))
    assert replayed.verdict is Verdict.DIVERGENT


def test_without_its_companion_ops_the_search_misses_the_mutant(group_norm, tmp_path, monkeypatch):
    """The same search with `annotation_route` empty: no graph draws a retracing op on purpose,
    and in the gate's budget the mutant is not found."""
    cls, entry = group_norm
    from fastpass.annotations import overridden

    monkeypatch.setattr(run, "annotation_route", lambda *_: [])
    with overridden({cls: entry}):
        v = run.gate_pass(cls, None, EXAMPLES, run.ANNOTATION_STAGE, tmp_path, seed=0, how=Route.ANNOTATION,
                          shrink_seconds=10)
    assert not v.verdict.fails, (v.verdict, v.reason)
