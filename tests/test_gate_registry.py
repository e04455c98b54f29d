"""The whole-registry driver of the gate: one lowering pair checks every annotated pass at once
(fastpass as it is really used); a divergence is pinned on the first pass whose output differs,
shrunk, classified (skip only / copy only) and saved as a reproducer. Shown with a deliberately
wrong annotation on a real ARM pass, on graphs from a two-op vocabulary."""

from __future__ import annotations

from pathlib import Path

import pytest

from verify.gate import check
from verify.gate import passes as gp
from verify.gate import reproducer
from verify.gate import run
from verify.report.reproducer import load
from verify.commands.replay import replay_reproducer
from fastpass.annotations import ProofStatus
from verify.vocabulary import Feature, Route

MINMAX = "executorch.backends.arm._passes.convert_minmax_pass.ConvertMinMaxPass"
SIGN = "executorch.backends.arm._passes.decompose_sign_pass.DecomposeSignPass"


@pytest.fixture
def wrong_minmax_annotation():
    """ConvertMinMaxPass claimed skip-sound for `abs` instead of amax/amin/max/min: on a graph with
    amax but no abs, fastpass skips it and the amax is never converted."""
    from executorch.exir.dialects._ops import ops as exir_ops
    from fastpass.annotations import Entry, overridden

    with overridden({MINMAX: Entry({exir_ops.edge.aten.abs.default}, skip_sound=True, copy_sound=False,
                                   why="test: wrong on purpose")}):
        yield


def test_registry_run_pins_a_wrong_annotation_on_its_pass(tmp_path, wrong_minmax_annotation):
    with check.quiet():
        classes = gp.annotated_passes()
    verdicts = {v.qualname: v for v in run.gate_registry(classes, 4, ["edge-fp"], tmp_path, seed=0, max_ops=2,
                                                          shrink_seconds=15, ops=["amax", "sign"],
                                                          direct_examples=0, min_evidence=2, top_up=0)}
    bad = verdicts[MINMAX]
    assert bad.verdict == "unsound-skip", (bad.verdict, bad.reason)
    path = Path(bad.reproducers["unsound-skip"])
    assert path.is_file() and "amax" in path.read_text() and "gate-scope: registry" in path.read_text()
    assert replay_reproducer(load(path)).exit_status == 1  # `verify replay --trust`'s replay
    others = [v for qn, v in verdicts.items() if qn != MINMAX]
    assert all(v.ok for v in others), [(v.name, v.verdict) for v in others if not v.ok]
    # every sound verdict rests on evidence; passes the two-op graphs never made fastpass act in are
    # unexercised, with what they lacked
    for v in others:
        if v.verdict is ProofStatus.SOUND:
            assert all(e.examples_with_action >= 2 for e in v.evidence.values()), (v.name, v.evidence)
    unexercised = [v for v in others if v.verdict is ProofStatus.UNEXERCISED]
    assert unexercised and all("needed" in v.reason or "not checked" in v.reason for v in unexercised)
    assert all(v.examples == 4 for v in others if v.how is Route.BATCH)


def test_top_up_draws_for_passes_short_of_evidence(tmp_path):
    """After the main budget, the top-up round draws graphs only for passes short of evidence,
    biased to what they lack: DecomposeSignPass (copy evidence needed) gets graphs on which its
    targeted op is present *when it runs* (upstream's should_run_pass lets every call through).
    Whether fastpass then copies nodes in it is the evidence the verdict reports, either way."""
    with check.quiet():
        classes = {SIGN: gp.annotated_passes()[SIGN]}
    (v,) = run.gate_registry(classes, 1, ["edge-fp"], tmp_path, seed=1, max_ops=2, shrink_seconds=15,
                             ops=["sign", "abs"], direct_examples=0, min_evidence=3, top_up=6,
                             top_up_seconds=900)
    copy = v.evidence[Feature.COPY]
    assert 2 <= v.examples <= 7, v.examples  # 1 main graph, then up to 6 more (fewer once it has 3)
    assert copy.examples == v.examples, copy.to_json()
    assert copy.invocations - copy.upstream_skipped >= v.examples - 1, copy.to_json()  # the pass ran
    assert v.verdict in (ProofStatus.SOUND, ProofStatus.UNEXERCISED)
    assert (v.verdict is ProofStatus.SOUND) == (copy.examples_with_action >= 3)
    assert Feature.SKIP in v.waived  # op-targeted upstream: fastpass's skip never applies
    # what each graph was to the pass (graphs.DrawKind), every kind named, zero included
    from verify.gate.graphs import DrawKind
    assert set(v.drawn) == {kind.value for kind in DrawKind} and v.to_json()["drawn"] == v.drawn
    assert sum(v.drawn.values()) <= v.examples * len(DrawKind)


NORMALIZE_TRANSPOSE = "executorch.exir.passes.normalize_transpose_pass.NormalizeTransposePass"


def test_top_up_withdraws_the_skip_claim_of_a_pass_skip_always_took(tmp_path):
    """NormalizeTransposePass targets aten.t only: on relu/neg graphs fastpass skips every call of
    it, so its copy claim never had a call to act in (copy-starved). The top-up lowers it with its
    skip claim withdrawn, and the copy evidence comes from calls it then ran and copied in. Without
    that, the verdict stays unexercised (the mutation this test exists to catch)."""
    with check.quiet():
        classes = {NORMALIZE_TRANSPOSE: gp.annotated_passes()[NORMALIZE_TRANSPOSE]}
    (v,) = run.gate_registry(classes, 2, ["edge-fp"], tmp_path, seed=3, max_ops=2, shrink_seconds=15,
                             ops=["relu", "neg"], direct_examples=0, min_evidence=2, top_up=4,
                             top_up_seconds=900)
    skip, copy = v.evidence[Feature.SKIP], v.evidence[Feature.COPY]
    assert skip.examples_with_action >= 2, skip.to_json()  # the main search: every call skipped
    assert copy.calls_ran >= 2 and copy.examples_with_action >= 2, copy.to_json()
    assert v.verdict is ProofStatus.SOUND, (v.verdict, v.reason)


def test_the_pipeline_probe_sees_the_helpers_the_propagation_passes_call():
    """RemovePermutesAroundElementwiseTosaOps is no pass-manager step: PropagateViewCopyPermute*
    call it directly, and fastpass sees it only when it retraces. The probe's permutes around relu
    make it retrace, so the gate runs it in pipelines (where its copy claim acts) instead of
    directly, where it never retraces."""
    from executorch.backends.arm._passes.remove_permutes_around_elementwise_tosa_ops import (
        RemovePermutesAroundElementwiseTosaOps,
    )

    assert reproducer.how_to_run(RemovePermutesAroundElementwiseTosaOps, "ethos-u55") is Route.PIPELINE


def test_a_pass_that_needs_the_program_is_built_with_the_one_it_runs_on():
    """Direct mode gives a pass whose constructor takes `exported_program` the edge program of the
    graph at hand (FoldDyTAffineIntoConvPass reads parameters through it); without one it cannot
    be built and its check has nothing to run."""
    import torch
    from executorch.backends.arm._passes.fold_dyt_affine_into_conv_pass import FoldDyTAffineIntoConvPass
    from executorch.exir import to_edge

    class Conv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 2, 1)

        def forward(self, x):
            return self.conv(x)

    program = to_edge(torch.export.export(Conv().eval(), (torch.randn(1, 2, 4, 4),))).exported_program()
    built = check.instantiate(FoldDyTAffineIntoConvPass, lambda: program)
    assert built.exported_program is program
    with pytest.raises(TypeError, match="needs exported_program"):
        check.instantiate(FoldDyTAffineIntoConvPass)


def test_importing_the_pass_modules_prints_nothing():
    """executorch's devtools visualization prints "Error: 'model_explorer' is not installed" on
    stdout when imported; the gate imports every pass module, asked for or not, and that line
    ended every gate log. What the imports print is a debug message now."""
    import subprocess
    import sys

    code = ("from verify.gate.passes import annotated_passes, import_pass_modules\n"
            "import_pass_modules()\nassert annotated_passes()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == ""
