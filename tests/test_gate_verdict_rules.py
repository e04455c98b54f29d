"""The gate's verdict rule (verify/gate/verdict.py) on hand-made verdicts and evidence: how a
registry run's stages merge into one verdict, how evidence adds up across stages, what an
unfinished check becomes, and that a verdict survives the JSON a gate worker sends. No graph
drawn, nothing lowered: the mutation campaign (tests/mutation/) judges the module by these tests
and tests/test_gate_evidence.py."""

from __future__ import annotations

import pytest

from verify.gate.verdict import Evidence, PassVerdict, merge_stages
from fastpass.annotations import ProofStatus
from verify.vocabulary import Ending, Feature, Route

COUNTS = ("examples", "distinct", "examples_invoked", "invocations", "upstream_skipped", "examples_with_action", "skipped_calls",
          "copied_nodes", "calls_ran", "nodes_dispatched")


def evidence(feature=Feature.COPY, base=1, ops=None) -> Evidence:
    """Evidence with every count different (base, base+1, ...), so a count added to the wrong
    one, or not added, shows."""
    found = Evidence(feature, ops_maybe_copied=dict(ops or {"aten.add": base}))
    for i, name in enumerate(COUNTS):
        setattr(found, name, base + 10 * i)
    return found


def test_absorb_adds_every_count_and_each_op():
    total = evidence(base=1, ops={"aten.add": 1, "aten.mul": 2})
    total.absorb(evidence(base=3, ops={"aten.add": 4, "aten.sub": 5}))
    for i, name in enumerate(COUNTS):
        assert getattr(total, name) == 4 + 20 * i, name
    assert total.ops_maybe_copied == {"aten.add": 5, "aten.mul": 2, "aten.sub": 5}
    with pytest.raises(ValueError, match="cannot add skip evidence to copy evidence"):
        total.absorb(Evidence(Feature.SKIP))


def test_evidence_survives_json():
    found = evidence(ops={"b": 2, "a": 1})
    data = found.to_json()
    assert data["feature"] == "copy" and data["distinct_ops_maybe_copied"] == 2
    assert list(data["ops_maybe_copied"]) == ["a", "b"]
    for name in COUNTS:
        assert data[name] == getattr(found, name), name
    assert Evidence.from_json(data) == found
    old = {k: v for k, v in data.items() if k not in ("calls_ran", "nodes_dispatched")}
    back = Evidence.from_json(old)
    assert back.calls_ran == 0 and back.nodes_dispatched == 0 and back.examples == found.examples


# each stage's verdict its own route, to tell which stage's the merged verdict took
ROUTE_OF = {"tosa-int": Route.PIPELINE, "a": Route.BATCH, "b": Route.DIRECT, "c": Route.ANNOTATION}


def verdict(stage, verdict=ProofStatus.SOUND, reason="", **fields) -> PassVerdict:
    return PassVerdict("pkg.P", "P", "ref", verdict, reason, how=ROUTE_OF.get(stage, Route.PIPELINE), stage=stage,
                       **fields)


def test_a_verdict_survives_json():
    original = verdict("tosa-int", ProofStatus.UNSOUND_COPY, "differs", annotation={"ops": ["a"]},
                       reproducers={"unsound-copy": "r.json"}, examples=7,
                       evidence={Feature.COPY: evidence(), Feature.SKIP: evidence(Feature.SKIP, 2)},
                       waived={Feature.SKIP: "why"}, modes={"copy": {"diverged": True}}, seconds=1.5,
                       unfinished=Ending.CUT_SHORT, drawn={"plain": 3})
    data = original.to_json()
    assert data["verdict"] == "unsound-copy" and data["unfinished"] == "cut-short"
    assert data["qualname"] == "pkg.P" and data["name"] == "P" and data["ref"] == "ref" and data["how"] == "pipeline"
    assert data["stage"] == "tosa-int" and data["reason"] == "differs" and data["examples"] == 7
    assert data["seconds"] == 1.5 and data["drawn"] == {"plain": 3} and data["modes"] == {"copy": {"diverged": True}}
    assert data["annotation"] == {"ops": ["a"]} and data["reproducers"] == {"unsound-copy": "r.json"}
    assert data["waived"] == {"skip": "why"}
    assert data["invocations"] == original.invocations == evidence().invocations
    assert data["skipped_calls"] == original.skipped_calls == evidence().skipped_calls + evidence(Feature.SKIP, 2).skipped_calls
    assert data["copied_nodes"] == original.copied_nodes
    assert data["examples_with_evidence"] == original.examples_with_evidence == evidence().examples_with_action
    assert data["evidence"] == {"copy": evidence().to_json(), "skip": evidence(Feature.SKIP, 2).to_json()}
    assert PassVerdict.from_json(data) == original
    finished = verdict("s")
    assert finished.to_json()["unfinished"] is None and PassVerdict.from_json(finished.to_json()) == finished
    del data["drawn"]
    assert PassVerdict.from_json(data).drawn == {}


def test_an_unfinished_check_is_an_error_unless_it_already_failed():
    found = verdict("s")
    found.not_finished(Ending.STOPPED, "stopped by SIGINT")
    assert (found.verdict, found.reason, found.unfinished) == (ProofStatus.ERROR, "stopped by SIGINT", Ending.STOPPED)
    unsound = verdict("s", ProofStatus.UNSOUND_SKIP, "differs at p")
    unsound.not_finished(Ending.NOT_STARTED, "budget spent")
    assert (unsound.verdict, unsound.reason, unsound.unfinished) == (
        ProofStatus.UNSOUND_SKIP, "differs at p; budget spent", Ending.NOT_STARTED)
    bare = verdict("s", ProofStatus.ERROR)
    bare.not_finished(Ending.CUT_SHORT, "worker crashed")
    assert bare.reason == "worker crashed"
    assert str(Ending.CUT_SHORT) == "cut-short"


def test_merge_stages_sums_the_evidence_and_keeps_the_first_stage_identity():
    first = verdict("tosa-int", annotation={"a": 1}, waived={Feature.SKIP: "w"}, examples=3, seconds=1.0,
                    evidence={Feature.COPY: evidence(base=1)}, drawn={"plain": 2, "linked": 1},
                    reproducers={"x": "1.json"}, modes={"copy": {"note": "first"}})
    second = PassVerdict("other.Q", "Q", "ref2", ProofStatus.SOUND, "", how=Route.BATCH, stage="ethos-u55",
                         examples=4, seconds=2.5, evidence={Feature.COPY: evidence(base=2),
                                                            Feature.SKIP: evidence(Feature.SKIP, 5)},
                         drawn={"plain": 5}, reproducers={"x": "2.json", "y": "3.json"})
    merged = merge_stages([first, second])
    assert (merged.qualname, merged.name, merged.ref) == ("pkg.P", "P", "ref")
    assert merged.verdict is ProofStatus.SOUND and merged.reason == "" and merged.how is Route.PIPELINE
    assert merged.stage == "tosa-int,ethos-u55" and merged.examples == 7 and merged.seconds == 3.5
    assert merged.annotation == {"a": 1} and merged.annotation is not first.annotation
    assert merged.waived == {Feature.SKIP: "w"} and merged.waived is not first.waived
    assert merged.modes == {"copy": {"note": "first"}} and merged.modes is not first.modes
    copy = evidence(base=1)
    copy.absorb(evidence(base=2))
    assert merged.evidence == {Feature.COPY: copy, Feature.SKIP: evidence(Feature.SKIP, 5)}
    assert merged.evidence[Feature.COPY] is not first.evidence[Feature.COPY]  # the stages' own stay as they were
    assert first.evidence[Feature.COPY] == evidence(base=1)
    assert merged.drawn == {"plain": 7, "linked": 1}
    assert merged.reproducers == {"x": "1.json", "x:ethos-u55": "2.json", "y": "3.json"}
    assert merged.unfinished is None


def test_merge_stages_lets_the_first_failing_stage_decide_and_names_the_later_ones():
    stages = [verdict("a", modes={"copy": {"note": "a"}}),
              verdict("b", ProofStatus.UNSOUND_COPY, "copy differs", modes={"copy": {"diverged": "b"}}),
              verdict("c", ProofStatus.ERROR, "crashed"),
              verdict("d", ProofStatus.UNSOUND_SKIP, "skip differs")]
    merged = merge_stages(stages)
    assert merged.verdict is ProofStatus.UNSOUND_COPY and merged.how is Route.DIRECT
    assert merged.reason == "copy differs; also error on c, unsound-skip on d"
    assert merged.modes == {"copy": {"diverged": "b"}}
    one = merge_stages([verdict("a"), verdict("b", ProofStatus.ERROR, "crashed")])
    assert one.verdict is ProofStatus.ERROR and one.reason == "crashed" and one.how is Route.DIRECT
    alone = merge_stages([verdict("a", ProofStatus.UNEXERCISED, "few")])
    assert alone.verdict is ProofStatus.UNEXERCISED and alone.reason == "few" and alone.stage == "a"
    with pytest.raises(ValueError, match="at least one stage"):
        merge_stages([])


def test_add_sums_each_example_into_its_own_count():
    found = Evidence(Feature.COPY)
    found.add(3, 0, 2, True, frozenset({"aten.add", "aten.mul"}), upstream_skipped=1, ran=2, dispatched=5)
    found.add(0, 0, 0, True)
    found.add(4, 1, 7, False, frozenset({"aten.add"}), upstream_skipped=2, ran=3, dispatched=6)
    found.add(2, 0, 1, True, frozenset({"aten.add"}))
    assert (found.examples, found.examples_invoked, found.invocations, found.upstream_skipped) == (4, 3, 9, 3)
    assert (found.skipped_calls, found.copied_nodes, found.calls_ran, found.nodes_dispatched) == (1, 10, 5, 11)
    assert found.examples_with_action == 2  # copied with identical results: the first and the last
    assert found.ops_maybe_copied == {"aten.add": 2, "aten.mul": 1}  # not from the example that differed
    skip = Evidence(Feature.SKIP)
    skip.add(2, 1, 0, True)
    skip.add(2, 0, 3, True)
    skip.add(2, 2, 0, False)
    assert skip.examples_with_action == 1 and skip.ops_maybe_copied == {}
    assert (skip.action, found.action) == ("skipped", "copied nodes")
    defaults = Evidence(Feature.COPY)
    defaults.add(1, 0, 0, True)
    assert (defaults.upstream_skipped, defaults.calls_ran, defaults.nodes_dispatched, defaults.ops_maybe_copied) == \
        (0, 0, 0, {})


def test_claim_of_an_annotation():
    from fastpass.annotations import _model

    from verify.gate.verdict import Claim

    def claim(ops, skip, copy, covers=False):
        return Claim.of(_model.Annotation(frozenset(ops), skip, copy, "test"), upstream_skip_covers=covers)

    assert claim({"a"}, True, True) == Claim((Feature.SKIP, Feature.COPY), {})
    assert claim({"a"}, False, True) == Claim((Feature.COPY,), {})
    assert claim({"a"}, False, False) == Claim((), {})
    assert claim(set(), True, False) == Claim((), {Feature.SKIP: "skip-sound without targeted ops: fastpass never "
                                                                 "skips it"})
    assert claim(set(), True, False, covers=True).waived[Feature.SKIP].startswith("skip-sound without targeted ops")
    assert claim({"a"}, True, True, covers=True) == Claim((Feature.COPY,), {
        Feature.SKIP: "upstream's should_run_pass skips it whenever its target_ops (all targeted) are absent: "
                      "fastpass's skip never applies"})
    assert Claim.of(_model.Annotation(frozenset({"a"}), True, False, "t")).features == (Feature.SKIP,)  # covers: no


def _judged(evidence_by_feature, waived=None, min_evidence=5, **kwargs) -> PassVerdict:
    found = verdict("s", evidence=evidence_by_feature, waived=waived or {})
    found.judge(min_evidence, **kwargs)
    return found


def _acted(feature, n, examples=10) -> Evidence:
    return Evidence(feature, examples=examples, examples_invoked=examples, invocations=examples,
                    examples_with_action=n, skipped_calls=n if feature is Feature.SKIP else 0,
                    copied_nodes=n if feature is Feature.COPY else 0, calls_ran=examples, nodes_dispatched=1)


def test_judge_joins_every_note_and_every_missing_feature():
    sound = _judged({Feature.COPY: _acted(Feature.COPY, 5)})
    assert sound.verdict is ProofStatus.SOUND and sound.reason == ""
    two_notes = {Feature.SKIP: "w1", Feature.COPY: "w2"}
    noted = _judged({Feature.COPY: _acted(Feature.COPY, 6)}, waived={Feature.SKIP: "w1"})
    assert noted.verdict is ProofStatus.SOUND and noted.reason == "skip not checked: w1"
    inert = _judged({}, waived=two_notes)
    assert inert.verdict is ProofStatus.INERT
    assert inert.reason == "fastpass cannot act in it: skip not checked: w1; copy not checked: w2"
    nothing = _judged({})
    assert (nothing.verdict, nothing.reason) == (ProofStatus.UNEXERCISED, "no feature to check")
    few = _judged({Feature.SKIP: _acted(Feature.SKIP, 1), Feature.COPY: _acted(Feature.COPY, 2)})
    assert few.verdict is ProofStatus.UNEXERCISED
    assert few.reason == ("skip: 1 of 10 examples skipped (pass invoked in 10; 5 needed); "
                          "copy: 2 of 10 examples copied nodes (pass invoked in 10; 5 needed)")
    sound_again = verdict("s", ProofStatus.SOUND, evidence={Feature.COPY: _acted(Feature.COPY, 5)}, waived=two_notes)
    sound_again.judge(5)
    assert sound_again.reason == "skip not checked: w1; copy not checked: w2"


def test_judge_calls_inert_only_when_copy_alone_lacks_evidence():
    exactly_enough_skip = {Feature.SKIP: _acted(Feature.SKIP, 5), Feature.COPY: _acted(Feature.COPY, 0)}
    inert = _judged(exactly_enough_skip, never_retraces="edits in place")
    assert inert.verdict is ProofStatus.INERT and inert.reason.startswith("fastpass cannot copy in it: edits in place; ")
    both_lacking = {Feature.SKIP: _acted(Feature.SKIP, 4), Feature.COPY: _acted(Feature.COPY, 0)}
    assert _judged(both_lacking, never_retraces="edits in place").verdict is ProofStatus.UNEXERCISED
    unreachable = _judged(both_lacking, unreachable="no graph has it")
    assert unreachable.verdict is ProofStatus.UNREACHABLE
    assert unreachable.reason.startswith("no generated graph presents what it acts on: no graph has it; skip: 4 of 10")


def test_merge_stages_with_two_failures_names_the_second():
    merged = merge_stages([verdict("a", ProofStatus.ERROR, "crashed"), verdict("b", ProofStatus.UNSOUND_SKIP, "x")])
    assert merged.reason == "crashed; also unsound-skip on b"
    with pytest.raises(ValueError) as caught:
        merge_stages([])
    assert str(caught.value) == "merge_stages needs at least one stage's verdict"


def _graph(*ops):
    """A drawn graph as verify.gate.evidence.structural_key reads it."""
    from types import SimpleNamespace

    return SimpleNamespace(input_shapes=[(1, 2)], outputs=[len(ops)],
                           ops=[SimpleNamespace(op=op, inputs=(0,), params=(), shape=(1, 2)) for op in ops])


def test_only_distinct_graphs_are_evidence():
    found = Evidence(Feature.COPY)
    for graph, copied in ((_graph("relu"), 0), (_graph("relu"), 2), (_graph("relu"), 2), (_graph("abs"), 1),
                          (None, 1), (None, 1)):
        found.add(1, 0, copied, True, graph=graph)
    # relu: acted the second time (the first gave no evidence), not the third; abs once; no graph: each counts
    assert (found.examples, found.distinct, found.examples_with_action) == (6, 4, 4)
    skip = Evidence(Feature.SKIP)
    for graph in (_graph("relu"), _graph("relu"), _graph("neg")):
        skip.add(1, 1, 0, True, graph=graph)
    assert (skip.examples, skip.distinct, skip.examples_with_action) == (3, 2, 2)


def test_evidence_from_json_before_distinct_counts_every_example():
    data = evidence().to_json()
    del data["distinct"]
    assert Evidence.from_json(data).distinct == data["examples"]


def test_judge_names_the_distinct_graphs_when_some_repeated():
    repeated = _acted(Feature.COPY, 2, examples=3)
    repeated.distinct = 1
    assert "copy: 2 of 3 examples (1 distinct graphs) copied nodes" in _judged({Feature.COPY: repeated}).reason
    every = _acted(Feature.COPY, 2, examples=3)
    every.distinct = 3
    assert "copy: 2 of 3 examples copied nodes" in _judged({Feature.COPY: every}).reason


def test_a_check_starts_from_the_pass_s_names_annotation_and_claim():
    """make_verdict: the qualname and name the ledger and reports key on, the reference given (or
    module:qualname), the annotation as claimed, and evidence slots for exactly the features the
    claim needs, with a waived feature's reason instead of a slot."""
    from executorch.exir.dialects._ops import ops as exir_ops
    from executorch.exir.pass_base import ExportPass

    from fastpass.annotations import Entry, overridden
    from verify.gate.verdict import make_verdict

    class ToyNegPass(ExportPass):
        pass

    neg = exir_ops.edge.aten.neg.default
    with overridden({ToyNegPass: Entry(frozenset({neg}), True, True, "toy")}):
        both = make_verdict(ToyNegPass)
        named = make_verdict(ToyNegPass, "my_passes.py:ToyNegPass")
    with overridden({ToyNegPass: Entry(frozenset(), True, True, "toy, no ops")}):
        waived = make_verdict(ToyNegPass)
    with overridden({ToyNegPass: Entry(frozenset({neg}), False, True, "toy, copy only")}):
        copy_only = make_verdict(ToyNegPass)
    assert both.qualname == f"{ToyNegPass.__module__}.{ToyNegPass.__qualname__}" and both.name == "ToyNegPass"
    assert both.ref == f"{ToyNegPass.__module__}:{ToyNegPass.__qualname__}" and named.ref == "my_passes.py:ToyNegPass"
    assert both.annotation == {"targeted_ops": ["aten.neg.default"], "skip_sound": True, "copy_sound": True,
                               "source": both.annotation["source"]} and both.annotation["source"]
    assert list(both.evidence) == [Feature.SKIP, Feature.COPY] and not both.waived
    assert list(copy_only.evidence) == [Feature.COPY] and not copy_only.waived
    assert list(waived.evidence) == [Feature.COPY]
    assert waived.waived == {Feature.SKIP: "skip-sound without targeted ops: fastpass never skips it"}
    # an ARM op-targeted pass whose upstream skip already covers fastpass's: skip waived, with why
    from executorch.backends.arm._passes.arm_pass import ArmOpTargetedPass

    class ToyTargetedPass(ArmOpTargetedPass):
        target_ops = {neg}
        _passes_required_after = set()

    with overridden({ToyTargetedPass: Entry(frozenset({neg}), True, True, "toy, upstream skips")}):
        covered = make_verdict(ToyTargetedPass)
    assert list(covered.evidence) == [Feature.COPY]
    assert covered.waived[Feature.SKIP].startswith("upstream's should_run_pass skips it")
