"""Why a copy-sound pass stayed `unexercised`: the gate counts, per pass and feature, the calls in
which the pass ran with fastpass on and the nodes its own retraces dispatched, next to the nodes
copied, and its reason tells the two structural causes apart: the pass never retraced (it edits
the graph in place: copy can never act in it) or it retraced and copied nothing (every node it
met was targeted, unsigned or had changed inputs).

Stats are hand-built in fastpass.stats()'s shape (`per_pass` records as fastpass/_stats.py's
PassRecord.as_dict writes them); one real gate run of an in-place test pass (direct, 2 graphs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verify.gate import check
from verify.gate.verdict import Evidence, PassVerdict, merge_stages
from fastpass.annotations import ProofStatus
from verify.vocabulary import Feature, Route

ROOT = Path(__file__).resolve().parents[1]
PASSES = "tests/passes/gate_passes.py"

NEVER_RETRACED = ("it never retraced in its {R} calls that ran (0 nodes dispatched): it edits the graph in "
                  "place (or retraces only after a change it did not make here), so fastpass's copy has "
                  "nothing to act on in these graphs")
RETRACED_NONE = ("it retraced {D} nodes in {R} calls and copied none: each was targeted, unsigned (no earlier "
                 "retrace gave it a creation signature), had changed inputs or is never copied (getitem, "
                 "higher-order or in-place ops)")


def record(name: str, ran: bool = True, copied: int = 0, dispatched: int = 0, skip_reason: str = "",
           depth: int = 0) -> dict:
    """One per_pass record of fastpass.stats() (PassRecord.as_dict; without its qualname, as an older
    fastpass wrote it, unless the test adds one)."""
    return {"name": name, "ran": ran, "skipped": bool(skip_reason), "skip_reason": skip_reason,
            "copied": copied, "dispatched": dispatched, "time_s": 0.001, "copy_s": 0.0, "dispatch_s": 0.0,
            "depth": depth}


def stats(*records: dict) -> dict:
    return {"passes_run": sum(r["ran"] for r in records), "per_pass": list(records)}


# ---- pass_counts ---------------------------------------------------------------------------------

def test_pass_counts_counts_calls_that_ran_and_nodes_dispatched():
    counts = check.pass_counts(stats(
        record("InPlacePass"),  # ran, never retraced
        record("InPlacePass"),
        record("InPlacePass", ran=False, skip_reason="upstream-should_run_pass"),
        record("RetracingPass", copied=3, dispatched=4),
        record("RetracingPass", dispatched=6, depth=1),  # nested call: its own record, its own retrace
        record("RetracingPass", ran=False, skip_reason="no-targeted-ops"),
    ))
    in_place, retracing = counts["InPlacePass"], counts["RetracingPass"]
    assert (in_place.invocations, in_place.ran, in_place.dispatched, in_place.copied) == (3, 2, 0, 0)
    assert in_place.upstream_skipped == 1 and in_place.skipped == 0
    assert (retracing.invocations, retracing.ran, retracing.dispatched, retracing.copied) == (3, 2, 10, 3)
    assert retracing.skipped == 1 and retracing.upstream_skipped == 0
    # stats without the new keys (an older fastpass) count 0, not fail
    old = check.pass_counts({"per_pass": [{"name": "P", "copied": 1}]})["P"]
    assert (old.invocations, old.ran, old.dispatched, old.copied) == (1, 0, 0, 1)
    assert check.pass_counts(None) == {}


def test_pass_counts_credits_each_class_only_with_its_own_calls():
    """The Arm CanonicalizeViewCopyPermutePass and the backends/transforms class it subclasses share
    a __name__; the propagation passes call the latter directly (a nested record). Evidence is
    keyed by the qualified name, so neither class is credited with the other's copied nodes."""
    from executorch.backends.arm._passes.canonicalize_view_copy_permute_pass import (
        CanonicalizeViewCopyPermutePass as ArmCanonicalize,
    )
    from executorch.backends.transforms.canonicalize_view_copy_permute_pass import (
        CanonicalizeViewCopyPermutePass as SharedCanonicalize,
    )

    name = ArmCanonicalize.__name__
    assert SharedCanonicalize.__name__ == name
    arm, shared = (f"{c.__module__}.{c.__qualname__}" for c in (ArmCanonicalize, SharedCanonicalize))
    counts = check.pass_counts(stats(
        dict(record(name, dispatched=5), qualname=arm),
        dict(record(name, copied=7, dispatched=1, depth=1), qualname=shared),
    ))
    arm_counts, shared_counts = check.counts_of(counts, ArmCanonicalize), check.counts_of(counts, SharedCanonicalize)
    assert (arm_counts.invocations, arm_counts.copied, arm_counts.dispatched) == (1, 0, 5)
    assert (shared_counts.invocations, shared_counts.copied, shared_counts.dispatched) == (1, 7, 1)


def test_outcome_fields_carry_every_count():
    c = check.PassCounts(invocations=5, skipped=1, copied=2, upstream_skipped=1, ran=3, dispatched=7)
    outcome = check.Outcome(False, **c.outcome_fields())
    assert (outcome.invocations, outcome.skipped, outcome.copied, outcome.upstream_skipped,
            outcome.ran, outcome.dispatched) == (5, 1, 2, 1, 3, 7)


# ---- Evidence: add, absorb, JSON ---------------------------------------------------------------

def copy_evidence(*examples: tuple[int, int, int, int]) -> Evidence:
    """Copy evidence from (invocations, ran, dispatched, copied) per identical example."""
    e = Evidence(Feature.COPY)
    for invocations, ran, dispatched, copied in examples:
        e.add(invocations, 0, copied, True, ran=ran, dispatched=dispatched)
    return e


def test_evidence_sums_calls_ran_and_nodes_dispatched():
    e = copy_evidence((2, 2, 5, 1), (1, 1, 3, 0), (1, 0, 0, 0), (0, 0, 0, 0))
    assert (e.examples, e.invocations, e.calls_ran, e.nodes_dispatched, e.copied_nodes) == (4, 4, 3, 8, 1)
    e.add(1, 0, 0, False, ran=1, dispatched=2)  # not identical: still counted (as invocations are)
    assert (e.calls_ran, e.nodes_dispatched) == (4, 10)


def test_absorb_and_merge_stages_sum_the_new_counts():
    first, second = copy_evidence((1, 1, 0, 0)), copy_evidence((2, 2, 0, 0), (1, 1, 4, 0))
    first.absorb(second)
    assert (first.examples, first.calls_ran, first.nodes_dispatched) == (3, 4, 4)

    stages = []
    for stage, (ran, dispatched) in (("edge-fp", (1, 0)), ("edge-int", (3, 5))):
        v = PassVerdict("m.P", "P", "m:P", how=Route.BATCH, stage=stage,
                        evidence={Feature.COPY: copy_evidence((ran, ran, dispatched, 0))})
        v.examples = 1
        stages.append(v)
    merged = merge_stages(stages)
    assert (merged.evidence[Feature.COPY].calls_ran, merged.evidence[Feature.COPY].nodes_dispatched) == (4, 5)


def test_evidence_json_round_trip_and_older_json():
    e = copy_evidence((3, 2, 9, 1))
    data = json.loads(json.dumps(e.to_json()))
    assert (data["calls_ran"], data["nodes_dispatched"]) == (2, 9)
    assert Evidence.from_json(data) == e
    older = {k: v for k, v in data.items() if k not in ("calls_ran", "nodes_dispatched")}
    loaded = Evidence.from_json(older)
    assert (loaded.calls_ran, loaded.nodes_dispatched, loaded.copied_nodes) == (0, 0, 1)
    v = PassVerdict("m.P", "P", "m:P", evidence={Feature.COPY: e})
    assert PassVerdict.from_json(json.loads(json.dumps(v.to_json()))) == v


# ---- the reason --------------------------------------------------------------------------------

def judged(evidence: Evidence, k: int = 5) -> PassVerdict:
    v = PassVerdict("m.P", "P", "m:P", evidence={evidence.feature: evidence})
    v.judge(k)
    return v


def test_reason_says_the_pass_never_retraced():
    v = judged(copy_evidence((2, 2, 0, 0), (1, 1, 0, 0), (1, 0, 0, 0)))
    assert v.verdict is ProofStatus.UNEXERCISED
    assert v.reason == ("copy: 0 of 3 examples copied nodes (pass invoked in 3; 5 needed): "
                        + NEVER_RETRACED.format(R=3))


def test_reason_says_the_pass_retraced_but_copied_nothing():
    v = judged(copy_evidence((2, 2, 7, 0), (1, 1, 0, 0)))
    assert v.verdict is ProofStatus.UNEXERCISED
    assert v.reason == ("copy: 0 of 2 examples copied nodes (pass invoked in 2; 5 needed): "
                        + RETRACED_NONE.format(D=7, R=3))
    single = judged(copy_evidence((1, 1, 1, 0)))
    assert single.reason.endswith("it retraced 1 node in 1 call and copied none: each was targeted, unsigned "
                                  "(no earlier retrace gave it a creation signature), had changed inputs or is "
                                  "never copied (getitem, higher-order or in-place ops)")


def test_reason_says_every_call_was_skipped():
    """Every call skipped (fastpass's skip took some: a registry run has skip and copy on) -> said;
    by upstream's should_run_pass alone -> the reason says so already, nothing added."""
    e = Evidence(Feature.COPY)
    e.add(2, 1, 0, True, upstream_skipped=1)
    assert judged(e).reason == ("copy: 0 of 1 examples copied nodes (pass invoked in 1, 1 of its 2 calls skipped "
                                "by upstream's should_run_pass; 5 needed): it ran in none of its 2 calls (each "
                                "skipped), so fastpass's copy had nothing to act on")
    upstream = Evidence(Feature.COPY)
    upstream.add(2, 0, 0, True, upstream_skipped=2)
    assert judged(upstream).reason == ("copy: 0 of 1 examples copied nodes (pass invoked in 1, 2 of its 2 calls "
                                       "skipped by upstream's should_run_pass; 5 needed)")


@pytest.mark.parametrize("evidence, reason", [
    # it copied (but too rarely): no diagnosis, the counts speak
    (copy_evidence((1, 1, 2, 3), (1, 1, 0, 0)), "copy: 1 of 2 examples copied nodes (pass invoked in 2; 5 needed)"),
    # never invoked: nothing to diagnose beyond "invoked in 0"
    (copy_evidence((0, 0, 0, 0)), "copy: 0 of 1 examples copied nodes (pass invoked in 0; 5 needed)"),
])
def test_no_diagnosis_where_it_copied_or_was_never_invoked(evidence, reason):
    assert judged(evidence).reason == reason


def test_skip_evidence_gets_no_copy_diagnosis_and_verdicts_do_not_change():
    skip = Evidence(Feature.SKIP)
    skip.add(1, 0, 0, True, ran=1, dispatched=0)
    assert judged(skip).reason == "skip: 0 of 1 examples skipped (pass invoked in 1; 5 needed)"
    # the new counts only explain: the same examples without them give the same verdicts
    for k in (1, 2, 3):
        with_counts = judged(copy_evidence((1, 1, 0, 2), (1, 1, 4, 0), (1, 1, 0, 1)), k)
        without = judged(copy_evidence((1, 0, 0, 2), (1, 0, 0, 0), (1, 0, 0, 1)), k)
        assert with_counts.verdict is without.verdict
    assert judged(copy_evidence((1, 1, 0, 2), (1, 1, 0, 1)), 2).verdict is ProofStatus.SOUND


# ---- wiring: the registry's record, the JUnit properties, a real gate run ------------------------

def test_registry_record_feeds_the_new_counts_to_the_evidence():
    """search._Registry.record turns one lowering's fastpass.stats() into each pass's evidence."""
    from verify.gate import passes as gp
    from verify.gate import search

    cls = gp.resolve(str(ROOT / PASSES) + ":NoRetracePass")
    gp.ensure_annotation(cls)
    reg = search._Registry({"t.NoRetracePass": cls}, ROOT, None, 2, 1.0, None, 5)
    for _ in range(2):
        reg.record({"t.NoRetracePass"}, check.Outcome(False, stats=stats(
            record("NoRetracePass"), record("NoRetracePass"), record("OtherPass", dispatched=9))))
    v = reg.verdicts["t.NoRetracePass"]
    copy = v.evidence[Feature.COPY]
    assert (copy.examples, copy.invocations, copy.calls_ran, copy.nodes_dispatched) == (2, 4, 4, 0)
    v.judge(5)
    assert v.reason.endswith(NEVER_RETRACED.format(R=4))


def test_junit_properties_carry_the_new_counts():
    from verify.report.gate import junit_properties

    v = judged(copy_evidence((2, 2, 7, 0)))
    props = junit_properties(v, 5)
    assert (props["copy.calls_ran"], props["copy.nodes_dispatched"]) == (2, 7)


def test_gate_of_an_in_place_pass_says_it_never_retraced(tmp_path):
    """A real (direct) gate run: NoRetracePass edits relus in place and never retraces: `inert`,
    with the argument from its code and the measurement."""
    from verify.gate import passes as gp
    from verify.gate import run

    cls = gp.resolve(str(ROOT / PASSES) + ":NoRetracePass")
    v = run.gate_pass(cls, f"{PASSES}:NoRetracePass", 2, "edge-fp", tmp_path, seed=0, how=Route.DIRECT, max_ops=2,
                      shrink_seconds=10, ops=["relu", "neg"], min_evidence=2)
    copy = v.evidence[Feature.COPY]
    assert v.verdict is ProofStatus.INERT, (v.verdict, v.reason)  # its code never reaches ExportPass.call
    assert copy.calls_ran == copy.invocations >= 2 and copy.nodes_dispatched == 0 and copy.copied_nodes == 0
    assert v.reason.endswith(NEVER_RETRACED.format(R=copy.calls_ran)), v.reason


def test_the_table_tells_apart_classes_that_share_a_name():
    """An Arm pass and the backends/transforms helper it subclasses share a __name__: their rows
    and the unexercised line name their packages; a name no other class has stays short."""
    from verify.report.gate import table, unproven_line

    def verdict(qualname, verdict=ProofStatus.SOUND):
        return PassVerdict(qualname, qualname.rsplit(".", 1)[1], qualname, verdict=verdict)

    arm = verdict("executorch.backends.arm._passes.canonicalize_view_copy_permute_pass."
                  "CanonicalizeViewCopyPermutePass", ProofStatus.UNEXERCISED)
    helper = verdict("executorch.backends.transforms.canonicalize_view_copy_permute_pass."
                     "CanonicalizeViewCopyPermutePass")
    other = verdict("executorch.backends.arm._passes.fuse_batch_norm2d_pass.FuseBatchNorm2dPass")
    rows = table([arm, helper, other], min_evidence=5).splitlines()
    assert any(r.startswith("arm.CanonicalizeViewCopyPermutePass ") for r in rows)
    assert any(r.startswith("transforms.CanonicalizeViewCopyPermutePass ") for r in rows)
    assert any(r.startswith("FuseBatchNorm2dPass ") for r in rows)
    assert unproven_line([arm, helper, other]).endswith(": arm.CanonicalizeViewCopyPermutePass")


# ---- inert and unreachable: why evidence is missing, named -------------------------------------

def test_never_retraces_reads_the_pass_code():
    """A pass whose call() is its own and never reaches ExportPass.call cannot be copied in; one
    that retraces (ExportPass's call, or super().call() after its own edits) can."""
    from executorch.backends.arm._passes import ConvertMmToBmmPass, DecomposeTanPass

    from verify.gate import passes as gp

    def toy(name):
        return gp.resolve(str(ROOT / PASSES) + ":" + name)

    assert "NoRetracePass.call" in gp.never_retraces(toy("NoRetracePass"))
    assert gp.never_retraces(toy("InsertBeforeRetracePass")) is None  # edits, then super().call()
    assert gp.never_retraces(toy("UndeclaredRewritePass")) is None  # ExportPass's own call: retraces
    assert "ConvertMmToBmmPass.call" in gp.never_retraces(ConvertMmToBmmPass)
    assert gp.never_retraces(DecomposeTanPass) is None


def test_missing_copy_evidence_of_a_pass_that_never_retraces_is_inert():
    e = copy_evidence((2, 2, 0, 0), (1, 1, 0, 0))
    v = PassVerdict("m.P", "P", "m:P", evidence={Feature.COPY: e})
    v.judge(5, never_retraces="its call() edits in place")
    assert v.verdict is ProofStatus.INERT and v.ok
    assert v.reason.startswith("fastpass cannot copy in it: its call() edits in place; copy: 0 of 2 examples")
    # skip evidence missing too: skip can act in any pass, so it is not inert
    skip = Evidence(Feature.SKIP)
    skip.add(1, 0, 0, True)
    both = PassVerdict("m.P", "P", "m:P", evidence={Feature.SKIP: skip, Feature.COPY: copy_evidence((1, 1, 0, 0))})
    both.judge(5, never_retraces="its call() edits in place")
    assert both.verdict is ProofStatus.UNEXERCISED, both.reason
    # enough evidence: sound whatever the code looks like
    enough = PassVerdict("m.P", "P", "m:P", evidence={Feature.COPY: copy_evidence((1, 1, 3, 2))})
    enough.judge(1, never_retraces="x", unreachable="y")
    assert enough.verdict is ProofStatus.SOUND


def test_missing_evidence_of_a_pass_no_graph_presents_is_unreachable():
    v = PassVerdict("m.P", "P", "m:P", evidence={Feature.COPY: copy_evidence((1, 0, 0, 0))})
    v.judge(5, unreachable="acts on symbolic shapes only")
    assert v.verdict is ProofStatus.UNREACHABLE and v.ok
    assert v.reason.startswith("no generated graph presents what it acts on: acts on symbolic shapes only; copy:")
    plain = PassVerdict("m.P", "P", "m:P", evidence={Feature.COPY: copy_evidence((1, 0, 0, 0))})
    plain.judge(5)
    assert plain.verdict is ProofStatus.UNEXERCISED


def test_a_claim_whose_every_feature_is_waived_is_inert():
    """Copy not claimed and the skip claim waived (upstream's should_run_pass already skips every
    call fastpass could): fastpass can never act in the pass, whatever the graph."""
    why = "upstream's should_run_pass skips it whenever its target_ops (all targeted) are absent"
    v = PassVerdict("m.P", "P", "m:P", waived={Feature.SKIP: why})
    v.judge(5)
    assert v.verdict is ProofStatus.INERT and v.reason == f"fastpass cannot act in it: skip not checked: {why}"
    nothing = PassVerdict("m.P", "P", "m:P")
    nothing.judge(5)
    assert nothing.verdict is ProofStatus.UNEXERCISED and nothing.reason == "no feature to check"
