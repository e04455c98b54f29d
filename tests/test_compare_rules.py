"""The comparison's rules (verify/compare), each on synthetic lowerings: hand-made pass steps,
snapshots, payloads, programs and reference runs, no model lowered (the whole file runs in
seconds). What each check reports, and where, is read whole: the mutation campaign
(tests/mutation/) judges these rules by these tests, so a rule changed in any operator,
constant or condition must fail one of them. The faults a real lowering shows are in
tests/test_harness_faults.py."""

from __future__ import annotations

import numpy as np

from verify.compare import checks
from verify.compare.checks import CheckResult, compare, first_divergence
from verify.compare.divergence import Divergence
from verify.lowering.constants import ConstantTensor
from verify.lowering.lower import LoweringResult, Payload
from verify.lowering.mode import Mode
from verify.lowering.reference import ReferenceRun
from verify.lowering.snapshot import GraphSnapshot, NodeRecord
from verify.lowering.steps import Observation, PassStep


def node(name="add", op="call_function", target="aten.add.Tensor", args="(%x, %y)", kwargs="{}",
         val=("T", ("2",), "torch.int8"), meta=(("stack_trace", "here"),)) -> NodeRecord:
    return NodeRecord(name, op, target, args, kwargs, val, meta)


def snapshot(*nodes: NodeRecord) -> GraphSnapshot:
    return GraphSnapshot(tuple(nodes), repr(nodes))  # the digest: equal exactly when the records are


def step(seq: int, name: str, digest: str | None = None, phase="edge", manager="PassManager#0") -> PassStep:
    return PassStep(seq, phase, manager, seq, name, digest, 0.0)


def observed(*graphs: tuple[str, GraphSnapshot | None]) -> Observation:
    """One pass step per (pass name, snapshot after it)."""
    observation = Observation()
    for seq, (name, graph) in enumerate(graphs):
        digest = None if graph is None else f"{seq}:{graph.digest}"
        observation.steps.append(step(seq, name, digest))
        if graph is not None:
            observation.snapshots[digest] = graph
    return observation


def lowering(mode=Mode.STOCK, **fields) -> LoweringResult:
    return LoweringResult(mode, (), "0", **fields)


def failing(found: dict[str, CheckResult]) -> list[str]:
    return sorted(name for name, result in found.items() if not result.passed)


BASE = snapshot(node("x", "placeholder", "x", "()"), node())


# ----------------------------------------------------------------------------------- outcome


def test_outcome_one_failing_is_a_divergence_at_the_pass_it_did_not_reach():
    ok = lowering(observation=observed(("A", BASE), ("B", BASE), ("C", BASE)))
    failed = lowering(Mode.FASTPASS, error="RuntimeError: boom\ntraceback", observation=observed(("A", BASE)))
    for a, b in ((ok, failed), (failed, ok)):
        result = checks.check_outcome(a, b)
        assert not result.passed
        assert result.first_divergence.pass_name == "B" and result.first_divergence.check == "outcome"
        assert result.first_divergence.details == tuple(result.details)
    assert checks.check_outcome(ok, failed).details == ["stock: ok", "fastpass: RuntimeError: boom"]
    stopped_last = lowering(Mode.FASTPASS, error="E", observation=observed(("A", BASE), ("B", BASE), ("C", BASE)))
    assert checks.check_outcome(ok, stopped_last).first_divergence.label == "after the last pass"


def test_outcome_both_failing_alike_is_the_same_by_first_line_only():
    a = lowering(error="RuntimeError: boom\nat line 1")
    assert checks.check_outcome(a, lowering(Mode.FASTPASS, error="RuntimeError: boom\nat line 2")).passed
    other = checks.check_outcome(a, lowering(Mode.FASTPASS, error="RuntimeError: bang"))
    assert not other.passed
    assert other.details == ["stock: RuntimeError: boom", "fastpass: RuntimeError: bang"]
    assert checks.check_outcome(lowering(), lowering(Mode.FASTPASS)) == CheckResult("outcome", True)


# ----------------------------------------------------------------------------------- passes


def test_passes_parting_names_the_first_step_and_both_counts():
    a = lowering(observation=observed(("A", None), ("B", None), ("C", None)))
    b = lowering(observation=observed(("A", None), ("X", None), ("C", None)))
    result = checks.check_passes(a, b)
    assert not result.passed and result.first_divergence.pass_name == "B"
    assert result.details == ["step 1: edge/PassManager#0[1] B vs edge/PassManager#0[1] X", "3 vs 3 pass invocations"]
    shorter = lowering(observation=observed(("A", None), ("B", None)))
    result = checks.check_passes(a, shorter)
    assert result.details == ["step 2: edge/PassManager#0[2] C vs <end>", "3 vs 2 pass invocations"]
    assert result.first_divergence.pass_name == "C"
    result = checks.check_passes(shorter, a)
    assert result.details == ["step 2: <end> vs edge/PassManager#0[2] C", "2 vs 3 pass invocations"]
    assert result.first_divergence.label == "<end>"
    assert checks.check_passes(a, lowering(observation=observed(("A", None), ("B", None), ("C", None)))).passed


# -------------------------------------------------------------------- graph, val, meta per pass


def test_snapshot_checks_report_the_first_pass_where_the_graphs_part():
    renamed = snapshot(node("x", "placeholder", "x", "()"), node(name="add_1"))
    a = lowering(observation=observed(("A", BASE), ("B", BASE), ("C", BASE)))
    b = lowering(observation=observed(("A", BASE), ("B", renamed), ("C", renamed)))
    found = compare(a, b)
    assert failing(found) == ["graph"]
    assert found["graph"].first_divergence.pass_name == "B"
    assert found["graph"].details == ["node #1 name: add != add_1", "identical up to names: yes"]
    assert first_divergence(a, found).pass_name == "B"


def test_a_different_target_is_not_identical_up_to_names():
    other = snapshot(node("x", "placeholder", "x", "()"), node(target="aten.sub.Tensor"))
    found = compare(lowering(observation=observed(("A", BASE))), lowering(observation=observed(("A", other))))
    assert found["graph"].details == ["node #1 target: aten.add.Tensor != aten.sub.Tensor", "identical up to names: no"]


def test_val_and_meta_differences_are_their_own_checks():
    val = snapshot(node("x", "placeholder", "x", "()"), node(val=("T", ("3",), "torch.int8")))
    meta = snapshot(node("x", "placeholder", "x", "()"), node(meta=(("stack_trace", "there"),)))
    a = lowering(observation=observed(("A", BASE)))
    found = compare(a, lowering(observation=observed(("A", val))))
    assert failing(found) == ["val"]
    assert found["val"].details == ["add: val ('T', ('2',), 'torch.int8') != ('T', ('3',), 'torch.int8')"]
    found = compare(a, lowering(observation=observed(("A", meta))))
    assert failing(found) == ["meta"]
    assert found["meta"].details == ["add: meta['stack_trace'] here != there"]


def test_a_snapshot_missing_on_one_side_only_is_a_difference():
    a = lowering(final=BASE)
    result = checks.check_graph(a, lowering())
    assert not result.passed
    assert result.details == ["one lowering stopped before this point (see the outcome check)"]
    assert result.first_divergence.label == "final program graph (full provenance)"
    assert checks.check_graph(lowering(), lowering()).passed
    assert checks.check_graph(a, lowering(final=snapshot(*BASE.nodes))).passed


def test_delegate_final_graphs_are_compared():
    other = snapshot(node("x", "placeholder", "x", "()"), node(name="add_9"))
    a = lowering(observation=Observation(delegate_final=[BASE, BASE]))
    b = lowering(observation=Observation(delegate_final=[BASE, other]))
    result = checks.check_graph(a, b)
    assert not result.passed and result.first_divergence.delegate == 1
    assert result.first_divergence.label == "delegate1 final graph (full provenance)"


def test_snapshot_differences_names_only_the_checks_that_failed():
    assert checks.snapshot_differences(BASE, snapshot(*BASE.nodes)) == {}
    val = snapshot(node("x", "placeholder", "x", "()"), node(val=("T", ("3",), "torch.int8")))
    assert checks.snapshot_differences(BASE, val) == {"val": ["add: val ('T', ('2',), 'torch.int8') != "
                                                              "('T', ('3',), 'torch.int8')"]}


# ------------------------------------------------------------------------------ payload, tosa


def test_payload_and_tosa_bytes_per_delegate():
    a = lowering(payloads=[Payload("TOSABackend", b"abc", b"t0"), Payload("TOSABackend", b"def", b"t1")])
    b = lowering(payloads=[Payload("TOSABackend", b"abc", b"t0"), Payload("TOSABackend", b"dxf", b"t1")])
    found = compare(a, b)
    assert failing(found) == ["payload"]
    assert found["payload"].details == ["delegate1 (TOSABackend): 3 vs 3 bytes, first difference at offset 1"]
    assert found["payload"].first_divergence.label == "delegate1" and found["payload"].first_divergence.delegate == 1
    c = lowering(payloads=[Payload("TOSABackend", b"abc", None), Payload("TOSABackend", b"def", b"t1")])
    found = compare(a, c)
    assert failing(found) == ["tosa"]
    assert found["tosa"].details == ["delegate0 (TOSABackend): present True vs False"]
    one = lowering(payloads=[Payload("TOSABackend", b"abc", b"t0")])
    found = compare(a, one)
    assert failing(found) == ["payload", "tosa"]
    assert found["payload"].details == ["2 vs 1 delegates"]
    assert found["payload"].first_divergence.label == "delegate count"
    three = lowering(payloads=[Payload("TOSABackend", b"xbc", b"t0")] + b.payloads[1:] + [Payload("T", b"", b"")])
    result = checks.check_payload(a, three)
    assert result.details == ["2 vs 3 delegates", "delegate0 (TOSABackend): 3 vs 3 bytes, first difference at offset 0",
                              "delegate1 (TOSABackend): 3 vs 3 bytes, first difference at offset 1"]
    assert result.first_divergence.label == "delegate count"  # the first thing seen stays the point
    first_two = lowering(payloads=[Payload("TOSABackend", b"xbc", b"t0"), Payload("TOSABackend", b"dxf", b"t1")])
    assert checks.check_payload(a, first_two).first_divergence.label == "delegate0"


# ----------------------------------------------------------------------------------- program


def test_program_bytes():
    a, b = lowering(program=b"\x00" * 8), lowering(Mode.FASTPASS, program=b"\x00" * 8)
    assert checks.check_program(a, b) == CheckResult("program", True, details=["8 bytes identical"])
    failed = lowering(Mode.FASTPASS, error="E")
    result = checks.check_program(a, failed)
    assert not result.passed and result.details == ["one lowering failed before serialization (see the outcome check)"]
    assert result.first_divergence.label == "serialized program"
    both = checks.check_program(lowering(error="E"), failed)
    assert both == CheckResult("program", True)
    one_failed = checks.check_program(a, lowering(Mode.FASTPASS, program_error="E: x"))
    assert one_failed.details == ["to_executorch() succeeded or failed differently", "stock: serialized",
                                  "fastpass: E: x"]


# --------------------------------------------------------------------------------- constants


def constant(name, data=b"\x01\x02", **fields) -> ConstantTensor:
    from verify.lowering.constants import ConstantRole, ConstantSource

    values = dict(source=list(ConstantSource)[0], role=list(ConstantRole)[0], input_name=f"p_{name}",
                  type_name="Parameter", dtype="torch.int8", shape=(2,), stride=(1,), storage_offset=0,
                  requires_grad=False, data=data)
    values.update(fields)
    return ConstantTensor(name, **values)


def test_constants():
    a = lowering(constants=[constant("w"), constant("b")])
    same = lowering(constants=[constant("w"), constant("b")])
    assert checks.check_constants(a, same) == CheckResult("constants", True,
                                                          details=["2 top-level constants identical"])
    result = checks.check_constants(a, lowering(constants=[constant("w", b"\x01\x03"), constant("b")]))
    assert not result.passed and result.first_divergence.label == "top-level constants"
    assert result.details[0].startswith("w: values differ, 2 vs 2 bytes, first difference at offset 1")


# --------------------------------------------------------------------------------- reference


def test_reference_error_in_one_mode_only():
    run = ReferenceRun([[np.zeros(2, np.int8)]])
    broken = ReferenceRun([None], error="input set 0: RuntimeError: x")
    result = checks.check_reference(lowering(reference=[run, run]), lowering(reference=[run, broken]))
    assert not result.passed and result.first_divergence.delegate == 1
    assert result.details == ["delegate1: reference model error in one mode only: input set 0: RuntimeError: x",
                              "delegate1 input set 0: ran in one mode only"]
    result = checks.check_reference(lowering(reference=[broken]), lowering(reference=[run]))
    assert result.details[0] == "delegate0: reference model error in one mode only: input set 0: RuntimeError: x"
    assert checks.check_reference(lowering(reference=[broken]), lowering(reference=[broken])).passed


def test_reference_first_point_is_the_first_delegate_that_differs():
    zero, one = [np.zeros(2, np.int8)], [np.ones(2, np.int8)]
    a = lowering(reference=[ReferenceRun([zero]), ReferenceRun([zero]), ReferenceRun([zero])])
    b = lowering(reference=[ReferenceRun([zero]), ReferenceRun([one]), ReferenceRun([one])])
    result = checks.check_reference(a, b)
    assert result.first_divergence.label == "delegate1" and len(result.details) == 2
    more = lowering(reference=b.reference + [ReferenceRun([zero])])
    assert checks.check_reference(a, more).first_divergence.label == "delegate count"


# ---------------------------------------------------------------- first divergence, JSON


def test_first_divergence_is_the_earliest_pass_then_the_first_point_after_every_pass():
    a = lowering(observation=observed(("A", None), ("B", None), ("C", None)))
    late = Divergence.at_step(a.observation.steps[2])
    early = Divergence.at_step(a.observation.steps[1])
    delegate = Divergence("delegate0", delegate=0)
    found = {"x": CheckResult("x", False, late), "y": CheckResult("y", False, delegate),
             "z": CheckResult("z", False, early), "ok": CheckResult("ok", True, Divergence("ignored"))}
    assert first_divergence(a, found) is early
    assert first_divergence(a, {"y": found["y"], "x": found["x"]}) is late
    assert first_divergence(a, {"y": found["y"], "w": CheckResult("w", False, Divergence("other"))}) is delegate
    assert first_divergence(a, {"ok": found["ok"], "n": CheckResult("n", False)}) is None


def test_a_check_result_survives_json():
    where = Divergence.at_step(step(3, "P"), "graph", ("d",))
    result = CheckResult("graph", False, where, ["d", "e"])
    data = result.to_json()
    assert data == {"passed": False, "first_divergence": where.to_json(), "details": ["d", "e"]}
    back = CheckResult.from_json("graph", False, data)
    assert back.first_divergence.pass_name == "P" and back.details == ["d", "e"] and not back.passed
    assert CheckResult("x", True).to_json() == {"passed": True, "first_divergence": None, "details": []}
    assert CheckResult.from_json("x", True, {"passed": True}) == CheckResult("x", True)


def test_every_check_runs_in_order():
    assert list(checks.CHECKS) == ["outcome", "passes", "graph", "val", "meta", "payload", "tosa", "program",
                                   "constants", "reference"]
    assert list(compare(lowering(), lowering())) == list(checks.CHECKS)
    assert failing(compare(lowering(), lowering())) == []


# ------------------------------------------------------- every check names itself, pass or fail

# For each check, two lowerings it fails on (and only it, or it among others: its own result is read).
_ONE = snapshot(node("x", "placeholder", "x", "()"), node(name="other"))


def _failing_pair(name: str) -> tuple[LoweringResult, LoweringResult]:
    steps = observed(("A", BASE))
    pairs = {
        "outcome": (lowering(), lowering(error="E")),
        "passes": (lowering(observation=observed(("A", None))), lowering(observation=observed(("B", None)))),
        "graph": (lowering(observation=steps), lowering(observation=observed(("A", _ONE)))),
        "val": (lowering(observation=steps),
                lowering(observation=observed(("A", snapshot(BASE.nodes[0], node(val=("absent",))))))),
        "meta": (lowering(observation=steps),
                 lowering(observation=observed(("A", snapshot(BASE.nodes[0], node(meta=())))))),
        "payload": (lowering(payloads=[Payload("T", b"a", b"t")]), lowering(payloads=[Payload("T", b"b", b"t")])),
        "tosa": (lowering(payloads=[Payload("T", b"a", b"t")]), lowering(payloads=[Payload("T", b"a", b"u")])),
        "program": (lowering(program=b"a"), lowering(program=b"b")),
        "constants": (lowering(constants=[constant("w")]), lowering()),
        "reference": (lowering(reference=[ReferenceRun([[np.zeros(1, np.int8)]])]),
                      lowering(reference=[ReferenceRun([[np.ones(1, np.int8)]])])),
    }
    return pairs[name]


def test_each_check_names_itself_and_its_point_whether_it_passes_or_fails():
    for name in checks.CHECKS:
        a, b = _failing_pair(name)
        result = compare(a, b)[name]
        assert result.name == name and result.passed is False, name
        assert result.first_divergence is not None and result.first_divergence.check == name, name
        assert result.first_divergence.details == tuple(result.details[:3]), name
        same = compare(a, a)[name]
        assert same.name == name and same.passed is True and same.first_divergence is None, name


def test_a_failed_check_keeps_three_details_at_its_point_and_all_in_its_result():
    many = [constant(n) for n in "abcde"]
    result = checks.check_constants(lowering(constants=many), lowering())
    assert len(result.details) == 5 and result.first_divergence.details == tuple(result.details[:3])
    assert result.details == [f"{n}: only in the first program" for n in "abcde"]


def test_different_programs_are_a_difference_at_the_serialized_program():
    result = checks.check_program(lowering(program=b"abcd"), lowering(program=b"abxd"))
    assert result.passed is False and result.first_divergence.label == "serialized program"
    assert result.details[0] == ".pte: 4 vs 4 bytes, first difference at offset 2"
    assert result.details[1].startswith("the first program does not deserialize: ")


def test_a_reference_error_in_one_mode_only_is_a_difference_even_with_the_same_outputs():
    same = [[np.zeros(2, np.int8)]]
    a = lowering(reference=[ReferenceRun(same), ReferenceRun(same)])
    b = lowering(reference=[ReferenceRun(same), ReferenceRun(same, error="input set 1: E")])
    result = checks.check_reference(a, b)
    assert result.details == ["delegate1: reference model error in one mode only: input set 1: E"]
    assert result.first_divergence.label == "delegate1" and result.first_divergence.delegate == 1
    b = lowering(reference=[ReferenceRun([[np.ones(2, np.int8)]]), ReferenceRun(same, error="input set 1: E")])
    assert checks.check_reference(a, b).first_divergence.label == "delegate0"


def test_the_snapshot_checks_as_their_factory_makes_them():
    """check_graph, check_val and check_meta are made by `_snapshot_check` when the module is
    imported; made again here, so that what the factory does is tested (a mutation campaign
    changes the factory after the import)."""
    renamed = snapshot(node("x", "placeholder", "x", "()"), node(name="add_1"))
    val = snapshot(node("x", "placeholder", "x", "()"), node(val=("T", ("3",), "torch.int8")))
    meta = snapshot(node("x", "placeholder", "x", "()"), node(meta=(("stack_trace", "there"),)))
    a = lowering(observation=observed(("A", BASE), ("B", BASE)), final=BASE)
    for name, other, details in (
            ("graph", renamed, ["node #1 name: add != add_1", "identical up to names: yes"]),
            ("val", val, ["add: val ('T', ('2',), 'torch.int8') != ('T', ('3',), 'torch.int8')"]),
            ("meta", meta, ["add: meta['stack_trace'] here != there"])):
        check = checks._snapshot_check(name)
        assert check.__name__ == f"check_{name}"
        assert check(a, lowering(observation=observed(("A", BASE), ("B", BASE)), final=snapshot(*BASE.nodes))) \
            == CheckResult(name, True)
        b = lowering(observation=observed(("A", BASE), ("B", other)), final=other)
        result = check(a, b)
        assert result.passed is False and result.name == name and result.details == details
        assert result.first_divergence.pass_name == "B" and result.first_divergence.check == name
        assert result.first_divergence.details == tuple(details)
        at_the_end = check(a, lowering(observation=observed(("A", BASE), ("B", BASE)), final=other))
        assert at_the_end.first_divergence.label == "final program graph (full provenance)"
        assert at_the_end.details == details
        # a snapshot missing on one side only, before the point where both have one
        missing = check(lowering(observation=observed(("A", BASE), ("B", BASE)), final=BASE),
                        lowering(observation=observed(("A", BASE), ("B", BASE))))
        assert missing.passed is False and missing.name == name
        assert missing.details == ["one lowering stopped before this point (see the outcome check)"]
        assert missing.first_divergence.label == "final program graph (full provenance)"
        assert check(lowering(), lowering()) == CheckResult(name, True)
        # a step without a snapshot on either side is passed over; the next one is compared
        skipped = lowering(observation=observed(("A", None), ("B", other)))
        assert check(lowering(observation=observed(("A", None), ("B", BASE))), skipped).first_divergence.pass_name == "B"


def test_the_factory_made_graph_check_tells_a_rename_from_a_rewrite_and_passes_over_absent_delegate_graphs():
    check = checks._snapshot_check("graph")
    retargeted = snapshot(node("x", "placeholder", "x", "()"), node(target="aten.sub.Tensor"))
    result = check(lowering(final=BASE), lowering(final=retargeted))
    assert result.details == ["node #1 target: aten.add.Tensor != aten.sub.Tensor", "identical up to names: no"]
    # a delegate whose final graph neither lowering has: passed over, the next delegate compared
    a = lowering(observation=Observation(delegate_final=[None, BASE]))
    b = lowering(observation=Observation(delegate_final=[None, retargeted]))
    assert check(a, b).first_divergence.label == "delegate1 final graph (full provenance)"


def test_the_program_check_names_itself_on_every_path():
    failed, ok = lowering(Mode.FASTPASS, error="E"), lowering(program=b"p")
    cases = [(ok, failed, False), (ok, lowering(Mode.FASTPASS, program_error="E: x"), False),
             (lowering(program_error="E: x"), lowering(Mode.FASTPASS, program_error="E: x"), True)]
    for a, b, passed in cases:
        result = checks.check_program(a, b)
        assert result.name == "program" and result.passed is passed
        if not passed:
            assert result.first_divergence.check == "program"
