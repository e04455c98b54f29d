"""`verify selftest` (verify/commands/selftest.py, verify/gate/selftest.py): mutants derived from annotations, each
gated and judged killed / survived / equivalent, the score against its threshold, the JSON.
The gate itself is replaced by a stand-in here (a real mutant costs a CI gate run: minutes);
the mutants are derived from the toy passes' annotations."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from verify.gate import passes as gp
from verify.gate import selftest as st
from verify.report import selftest as sr
from fastpass.annotations import ProofStatus
from verify.vocabulary import FeatureSet

ROOT = Path(__file__).resolve().parents[1]
PASSES = "tests/passes/gate_passes.py"


def toys(*names: str) -> dict[str, type]:
    out = {}
    for name in names:
        cls = gp.resolve(str(ROOT / PASSES) + ":" + name)
        gp.ensure_annotation(cls)
        out[gp.qualname(cls)] = cls
    return out


def test_mutants_are_the_three_faults_on_real_claims():
    classes = toys("RewritesUndeclaredOpPass", "UndeclaredRewritePass")
    mutants = st.derive_mutants(classes)
    by = {(m.qualname.rsplit(".", 1)[-1], m.fault): m for m in mutants}
    # skip-sound, not copy-sound: its targeted relu (named by its code) dropped; copy claimed
    drop = by[("RewritesUndeclaredOpPass", sr.Fault.DROP_TARGETED_OP)]
    assert drop.detail == "aten.relu.default" and not drop.entry.ops and drop.entry.skip_sound
    assert by[("RewritesUndeclaredOpPass", sr.Fault.CLAIM_COPY)].entry.copy_sound
    # copy-sound, not skip-sound: skip claimed
    widen = by[("UndeclaredRewritePass", sr.Fault.WIDEN_SKIP)]
    assert widen.entry.skip_sound and widen.entry.copy_sound
    assert ("UndeclaredRewritePass", sr.Fault.CLAIM_COPY) not in by  # it claims copy already
    # a seeded sample spreads over the faults
    chosen = st.sample(mutants, 3, seed=0)
    assert {m.fault for m in chosen} == set(sr.Fault)
    assert [m.label for m in st.sample(mutants, 3, seed=0)] == [m.label for m in chosen]


def test_a_mutant_the_gate_neither_fails_nor_calls_sound_is_unproven_outside_the_score(tmp_path):
    """A wrong claim the gate calls unexercised (or unreachable, inert) passes CI but is never
    trusted by fastpass's default (proven-only) trust: `unproven`, listed, outside the score --
    not `survived`, which is kept for a wrong claim called sound. A JSON written before
    `unproven` existed (such a mutant recorded `survived`) is read by the same rule."""
    classes = toys("RewritesUndeclaredOpPass", "UndeclaredRewritePass")

    def gate(mutant_classes, out, seed):
        (cls,) = mutant_classes.values()
        verdict = ProofStatus.UNEXERCISED if cls.__name__ == "UndeclaredRewritePass" else ProofStatus.UNSOUND_COPY
        return SimpleNamespace(verdict=verdict, reproducers={}, reason="too few graphs")

    report = st.self_test(classes, 3, 0, gate, tmp_path, threshold=0.95)
    by_verdict = {r.verdict for r in report.results}
    assert sr.MutantVerdict.UNPROVEN in by_verdict and sr.MutantVerdict.SURVIVED not in by_verdict, report.results
    unproven = [r for r in report.results if r.verdict is sr.MutantVerdict.UNPROVEN]
    assert all(r.gate_verdict == "unexercised" for r in unproven)
    assert report.score == 1.0 and report.passed  # the killed one decides it alone
    assert report.to_dict()["unproven"] == len(unproven)
    old = dict(unproven[0].to_dict(), verdict="survived")
    assert sr.MutantResult.from_dict(old).verdict is sr.MutantVerdict.UNPROVEN
    called_sound = dict(old, gate_verdict="sound")
    assert sr.MutantResult.from_dict(called_sound).verdict is sr.MutantVerdict.SURVIVED


def test_score_counts_and_json(tmp_path):
    """A stand-in gate kills the widened-skip mutant and passes the claimed copy; the dropped op was
    the skip-only entry's only one (equivalent, not gated): 1 killed, 1 survived, 1 equivalent; at
    a threshold of 0.8 the self-test fails, at 0.5 it passes. The mutant is in effect while the
    gate runs (the stand-in reads it through lookup)."""
    from fastpass.annotations import lookup

    classes = toys("RewritesUndeclaredOpPass", "UndeclaredRewritePass")
    seen = []

    def gate(mutant_classes, out, seed):
        (cls,) = mutant_classes.values()
        ann = lookup(cls)
        seen.append((cls.__name__, ann.skip_sound, ann.copy_sound, len(ann.targeted_ops)))
        wrong = not ann.targeted_ops or (cls.__name__ == "UndeclaredRewritePass" and ann.skip_sound)
        verdict = ProofStatus.UNSOUND_SKIP if wrong else ProofStatus.SOUND
        return SimpleNamespace(verdict=verdict, reproducers={verdict.value: str(out / "r.py")} if wrong else {},
                               reason="")

    report = st.self_test(classes, 3, 0, gate, tmp_path, threshold=0.8)
    real = {c.__name__: (c.__name__, lookup(c).skip_sound, lookup(c).copy_sound, 1) for c in classes.values()}
    assert len(seen) == 2 and all(state != real[state[0]] for state in seen), seen  # each gated a mutant
    counts = report.to_dict()
    assert (counts["killed"], counts["survived"], counts["equivalent"]) == (1, 1, 1), counts
    assert not report.passed
    assert sr.SelfTestReport(report.results, threshold=0.5).passed
    data = json.loads(json.dumps(counts))
    assert all(isinstance(data[k], int) for k in ("killed", "survived", "equivalent"))
    assert {m["verdict"] for m in data["mutants"]} == {"killed", "survived", "equivalent"}
    assert all(m["reproducer"] for m in data["mutants"] if m["verdict"] == "killed")
    assert "self-test: killed 1, survived 1, unproven 0, equivalent 1" in sr.table(report)
    # outside the self-test the real annotations are back
    assert all(not lookup(c).copy_sound or not lookup(c).skip_sound for c in classes.values())


def test_ci_gate_stops_at_the_first_failing_stage_and_gates_an_uninvoked_pass_directly(tmp_path, monkeypatch):
    """Stages are gated one at a time, only those whose pipeline invokes the pass, until one
    fails (any failing stage fails CI's run); a pass no pipeline invokes gets one run over every
    stage (CI's direct check)."""
    from verify.gate import check, run

    calls = []
    failing = {"quantized"}

    def fake_registry(classes, examples, stages, out, seed, *rest):
        calls.append(list(stages))
        (qn,) = classes
        verdict = ProofStatus.UNSOUND_COPY if set(stages) & failing else ProofStatus.SOUND
        return [SimpleNamespace(qualname=qn, verdict=verdict, reproducers={}, reason="")]

    invoked = {"edge-fp": {"P"}, "quantized": {"P"}, "ethos-u55": {"P"}, "ethos-u85": set()}
    monkeypatch.setattr(run, "gate_registry", fake_registry)
    monkeypatch.setattr(check, "target_for", lambda stage: stage)
    monkeypatch.setattr(check, "pipeline_pass_names", lambda target: invoked[target])
    args = SimpleNamespace(examples=60, stage=None, max_ops=4, shrink_seconds=300.0, direct_examples=8,
                           min_evidence=5, top_up=None, top_up_seconds=180.0, max_seconds=None,
                           default_stages=("edge-fp", "quantized", "ethos-u55", "ethos-u85"))
    P = type("P", (), {})
    v = st.ci_gate(args)({"m.P": P}, tmp_path, 0)
    assert v.verdict is ProofStatus.UNSOUND_COPY and calls == [["edge-fp"], ["quantized"]]
    calls.clear()
    failing.clear()
    assert st.ci_gate(args)({"m.P": P}, tmp_path, 0).verdict is ProofStatus.SOUND
    assert calls == [["edge-fp"], ["quantized"], ["ethos-u55"]]  # u85 does not invoke it
    calls.clear()
    Q = type("Q", (), {})
    st.ci_gate(args)({"m.Q": Q}, tmp_path, 0)
    assert calls == [list(args.default_stages)]


def test_each_mutant_gets_a_process_of_its_own_taken_as_one_ends_and_merged_in_sample_order(tmp_path, monkeypatch):
    """-j K: each mutant is gated in a self-test process of its own (`--shard I/N`, started by the
    launcher), K at a time, the next started as soon as one ends; the parent reports each as it
    ends and merges them in sample order. A process that dies loses its one mutant only, and the
    run is short of it. A resumed run starts none for the mutants it kept.

    The slow first mutant holds its slot until every other mutant has started: with the split
    this replaced (process i gating every K-th mutant from the i-th) mutants 3 and 5 waited behind
    mutant 1, and a survivor (half an hour) left the other core idle."""
    import threading

    from verify.jobs import launcher

    started, lock, others_started = [], threading.Lock(), threading.Event()

    def fake_launch(command, *, log_path, timeout, memory_limit, **_):
        assert command[1:4] == ["-m", "verify", "selftest"], command  # the command, not gate's old --self-test
        shard = command[command.index("--shard") + 1]
        part = Path(command[command.index("--json") + 1])
        first, step = (int(x) for x in shard.split("/"))
        index = first + 1
        with lock:
            started.append((index, step, "--unaimed" in command, command[command.index("--examples") + 1],
                            "--resume" in command, log_path.name))
            if len(started) == 4:
                others_started.set()
        if index == 1:
            assert others_started.wait(timeout=30), f"mutant 1 held up the others: started {started}"
        if index == 4:
            return -9  # died before writing its result
        mutant = sr.MutantResult(index, f"m.P{index}", sr.Fault.DROP_TARGETED_OP, "op", sr.MutantVerdict.KILLED,
                                 "unsound-skip", f"r{index}.py")
        part.write_text(json.dumps({"mutants": [mutant.to_dict()]}))
        return 0

    monkeypatch.setattr(launcher, "launch_command", fake_launch)
    args = SimpleNamespace(jobs=2, mutants=5, unaimed=True, out=tmp_path, stage=None, examples=60, min_evidence=5,
                           top_up=None, direct_examples=8, max_seconds=None, top_up_seconds=180.0, max_ops=4,
                           shrink_seconds=60.0, pass_timeout=1800.0, resume=tmp_path / "earlier.json")
    seen = []
    report = st.in_processes(args, 0, tmp_path / "self-test", [1, 2, 4, 5], seen.append)  # 3: kept by the resume
    assert sorted(started) == [(i, 5, True, "60", False, f"mutant-{i}.log") for i in (1, 2, 4, 5)]
    assert [r.index for r in report.results] == [1, 2, 5]  # mutant 4's process died
    assert sorted(r.index for r in seen) == [1, 2, 5] and len(seen) == 3  # each reported once
    assert report.count(sr.MutantVerdict.KILLED) == 3


def test_a_retrace_only_entry_gets_no_widened_skip_mutant():
    """fastpass never skips a pass whose entry names no targeted op (`_passcall._skip_reason`), so
    claiming skip-sound for a retrace-only entry changes no lowering: it is not a mutant (it would
    otherwise cost a whole CI gate run and read as `survived`). A copy-only entry with targeted
    ops still gets one."""
    from executorch.exir.pass_base import ExportPass

    from fastpass.annotations import register

    class RetraceOnlyToyPass(ExportPass):
        pass

    register(RetraceOnlyToyPass, frozenset(), skip_sound=False, copy_sound=True, why="test: retrace-only")
    classes = {gp.qualname(RetraceOnlyToyPass): RetraceOnlyToyPass, **toys("UndeclaredRewritePass")}
    faults = {(m.qualname.rsplit(".", 1)[-1], m.fault) for m in st.derive_mutants(classes)}
    assert ("RetraceOnlyToyPass", sr.Fault.WIDEN_SKIP) not in faults, faults
    assert ("UndeclaredRewritePass", sr.Fault.WIDEN_SKIP) in faults


def _real_mutant(pass_name: str, detail: str) -> st.Mutant:
    import importlib

    from fastpass.annotations import entries

    (qn,) = [qn for qn in entries() if qn.rsplit(".", 1)[-1] == pass_name]
    module, name = qn.rsplit(".", 1)
    classes = {qn: getattr(importlib.import_module(module), name)}
    (mutant,) = [m for m in st.derive_mutants(classes) if m.detail == detail]
    return mutant


def _killed_on(mutant: st.Mutant, spec_json: dict, stage: str,
               checked=(FeatureSet.SKIP, FeatureSet.COPY)) -> list[FeatureSet]:
    from fastpass.annotations import overridden
    from generators.random._spec import GraphSpec
    from verify.gate import check

    spec = GraphSpec.from_json(json.dumps(spec_json))
    out = []
    for enabled in checked:
        with overridden({mutant.qualname: mutant.entry}):
            outcome = check.pipeline_example(spec, mutant.cls, enabled, stage)
        assert not outcome.vacuous, outcome.vacuous
        if outcome.diverged:
            out.append(enabled)
    return out


def _then_relu(input_shape: list[int], op: str, params: dict) -> dict:
    return {"format": 1, "input_shapes": [input_shape], "seed": 2, "outputs": [2],
            "ops": [{"inputs": [0], "op": op, "params": params, "shape": input_shape},
                    {"inputs": [1], "op": "relu", "params": {}, "shape": input_shape}]}


def test_a_same_size_resize_the_vocabulary_draws_kills_the_dropped_upsample():
    """The first real self-test's survivor: RemoveNoopPass without upsample_bilinear2d.vec was
    called sound, because every drawn upsample doubled its size and the pass deletes only
    same-size ones. `upsample` now draws scale 1 (generators/random/_ops.py); on such a graph
    fastpass copies the no-op resize the stock pass deletes."""
    mutant = _real_mutant("RemoveNoopPass", "aten.upsample_bilinear2d.vec")
    spec = _then_relu([1, 3, 4, 5], "upsample", {"mode": "bilinear", "align_corners": False, "scale": 1})
    assert FeatureSet.COPY in _killed_on(mutant, spec, "edge-fp")


def test_a_float_and_int32_operand_the_vocabulary_draws_kills_the_dropped_mixed_type_add():
    """The other survivor: RemoveMixedTypeOperators without add.Tensor was called sound, because
    every drawn value was float32 and the pass casts only mixed-dtype operands. `int_add` ...
    `int_minimum` (float targets) draw a float32 value and an int32 buffer in one op."""
    mutant = _real_mutant("RemoveMixedTypeOperators", "aten.add.Tensor")
    spec = _then_relu([1, 3, 4, 5], "int_add", {"swap": False})
    assert _killed_on(mutant, spec, "edge-fp") == [FeatureSet.SKIP, FeatureSet.COPY]


def test_an_int32_split_the_vocabulary_draws_kills_the_dropped_layout_slice():
    """InsertDataLayoutCastsPass casts a data-layout op of integer operands on FP-only TOSA; its
    mutant without slice_copy survived the self-test (seed 7): every drawn slice was of float32
    values, and an integer slice stays on the CPU on edge-fp. `int32_split` is delegated and
    becomes an int32 slice_copy, the only op the pass targets in the graph (measured:
    `properties.PIPELINE_PRESENTED`): the mutant skips or copies the pass, stock casts."""
    mutant = _real_mutant("InsertDataLayoutCastsPass", "aten.slice_copy.Tensor")
    spec = _then_relu([1, 3, 4, 5], "int32_split", {"dim": 1, "size": 1, "index": 0})
    spec["ops"][0]["shape"] = spec["ops"][1]["shape"] = [1, 1, 4, 5]
    assert _killed_on(mutant, spec, "edge-fp") == [FeatureSet.SKIP, FeatureSet.COPY]


def test_a_sample_spreads_over_the_entries_before_it_repeats_one():
    """40 mutants from the real registry fall on at least 30 entries (the issue's floor): within a
    fault the sample takes every entry once before any twice. A plain shuffle drew RemoveNoopPass,
    which targets the most ops, six times in 40 (27 entries)."""
    classes = st.proven(gp.annotated_passes())
    chosen = st.sample(st.derive_mutants(classes), 40, seed=0)
    assert len(chosen) == 40 and len({m.qualname for m in chosen}) >= 30


def test_an_op_no_lowering_graph_holds_is_an_equivalent_drop_with_its_argument():
    """Dropping the ATen form of a view op from a pass that sees edge graphs only (to_edge made it
    the *_copy form, still targeted) cannot change a lowering: equivalent, with the argument. An
    in-place overload dropped from a pass the quantizer's pipeline runs too is not (its ATen
    graphs hold in-place ops until RewriteInplaceArithmeticPass): no vocabulary op presents it, so
    it is unpresentable. A real rewrite's op is neither."""
    view = st.equivalence(_real_mutant("ConvertPermuteSingletonToViewPass", "aten.permute.default"))
    assert view and "permute_copy" in view
    inplace = _real_mutant("DecomposeDivPass", "aten.div_.Tensor")
    assert st.equivalence(inplace) is None and st.presentable(inplace)
    assert st.equivalence(_real_mutant("DecomposeSignPass", "aten.sign.default")) is None


def test_a_dropped_op_no_drawn_graph_can_hold_is_unpresentable_and_not_gated(tmp_path):
    """A dropped op that no vocabulary op presents (and no earlier pass produces) cannot be put in
    front of the pass by any search: `unpresentable`, outside the score, and the gate is not run."""
    gap = _real_mutant("MemoryFormatOpsPass", "aten.empty.memory_format")
    assert st.presentable(gap)
    assert st.presentable(_real_mutant("RemoveNoopPass", "aten.upsample_bilinear2d.vec")) is None
    assert st.presentable(_real_mutant("ConvertFullLikeToFullPass", "aten.full_like.default")) is None  # produced

    def gate(*_):
        raise AssertionError("an unpresentable mutant was gated")

    result = st.run_mutant(1, gap, gate, tmp_path, 0)
    assert result.verdict is sr.MutantVerdict.UNPRESENTABLE
    report = sr.SelfTestReport([result])
    assert report.score is None and report.to_dict()["unpresentable"] == 1


def test_dropping_the_only_op_of_a_skip_only_entry_is_equivalent(tmp_path):
    """RewritesUndeclaredOpPass claims skip only, for relu: without it the entry names no op, and
    fastpass never skips such a pass (`_passcall._skip_reason`) nor copies in it: the mutant entry
    is never used (the gate, run anyway, reads it `inert` or `unreachable`, which the self-test
    counted survived). Not gated."""
    (drop,) = [m for m in st.derive_mutants(toys("RewritesUndeclaredOpPass")) if m.fault is sr.Fault.DROP_TARGETED_OP]
    assert not drop.entry.ops and not drop.entry.copy_sound
    assert "only targeted op" in st.equivalence(drop)

    def gate(*_):
        raise AssertionError("an equivalent mutant was gated")

    assert st.run_mutant(1, drop, gate, tmp_path, 0).verdict is sr.MutantVerdict.EQUIVALENT


def test_a_cat_of_one_tensor_the_vocabulary_draws_kills_the_dropped_cat():
    """A survivor of the real self-test (RemoveNoopPass without cat.default: every drawn cat joined
    two tensors, and the pass deletes only a cat of one). `cat` now draws the one-tensor form."""
    mutant = _real_mutant("RemoveNoopPass", "aten.cat.default")
    spec = {"format": 1, "input_shapes": [[1, 3, 4, 5]], "seed": 2, "outputs": [3],
            "ops": [{"inputs": [0], "op": "relu", "params": {}, "shape": [1, 3, 4, 5]},
                    {"inputs": [1], "op": "cat", "params": {"dim": 1, "single": True}, "shape": [1, 3, 4, 5]},
                    {"inputs": [2], "op": "abs", "params": {}, "shape": [1, 3, 4, 5]}]}
    assert FeatureSet.COPY in _killed_on(mutant, spec, "edge-fp")


def test_a_run_ci_fails_kills_the_mutant_whichever_verdict_fails():
    """CI fails a gate run on any failing verdict. The self-test read only the mutant pass's own
    (MemoryFormatOpsPass without _to_copy: its own `unexercised`, while the run held an
    `<unattributed>` divergence at the first pass manager's input in every stage) and counted a
    killed mutant survived."""
    from verify.gate.verdict import PassVerdict

    own = PassVerdict("a.Pass", "Pass", "ref", ProofStatus.UNEXERCISED)
    unattributed = PassVerdict("<unattributed>", "unattributed", "-", ProofStatus.ERROR, "divergence at <input>")
    assert st.ci_verdict([own, unattributed], "a.Pass") is unattributed
    assert st.ci_verdict([own], "a.Pass") is own
    failing_own = PassVerdict("a.Pass", "Pass", "ref", ProofStatus.UNSOUND_COPY)
    assert st.ci_verdict([unattributed, failing_own], "a.Pass") is failing_own


def test_an_int16_comparison_the_vocabulary_draws_kills_the_dropped_comparison():
    """CastIntComparisonInputsPass casts int8/int16 comparison inputs on FP-only TOSA; every
    comparison the vocabulary drew was of float32 values, so dropping one of its ops could not be
    seen. `int_le` (float targets; one op per comparison) draws one."""
    mutant = _real_mutant("CastIntComparisonInputsPass", "aten.le.Tensor")
    spec = _then_relu([1, 3, 4, 5], "int_le", {"dtype": "int16"})
    assert _killed_on(mutant, spec, "edge-fp") == [FeatureSet.SKIP, FeatureSet.COPY]


def test_an_int32_clamp_the_vocabulary_draws_kills_the_dropped_scalar_clamp():
    """DecomposeTOSAUnsupportedClampPass rewrites a scalar clamp only of int32 values; `clamp`
    drew float32 ones, so its mutant without clamp.default survived the self-test. `int_clamp`
    draws one. Stock lowering then fails after the rewrite (TOSA-1.0+FP has no int32 MAXIMUM),
    and the mutant, which copies the clamp instead, fails elsewhere: a different outcome."""
    mutant = _real_mutant("DecomposeTOSAUnsupportedClampPass", "aten.clamp.default")
    spec = _then_relu([1, 3, 4, 5], "int_clamp", {"bounds": [-2, 3]})
    assert _killed_on(mutant, spec, "edge-fp", checked=(FeatureSet.COPY,)) == [FeatureSet.COPY]


def test_a_mul_of_bools_the_vocabulary_draws_kills_the_dropped_mul():
    """PromoteBoolOperandsPass rewrites only a mul with a bool operand; `mul` drew float32 ones,
    so its mutant without mul.Tensor (its only op) was called sound by the self-test. `bool_mul`
    multiplies two comparisons."""
    mutant = _real_mutant("PromoteBoolOperandsPass", "aten.mul.Tensor")
    spec = _then_relu([1, 3, 4, 5], "bool_mul", {"low": 0.0})
    assert _killed_on(mutant, spec, "edge-fp") == [FeatureSet.COPY]


def test_a_stopped_self_test_kills_its_mutant_processes_keeps_what_they_measured_and_exits_130(tmp_path):
    """SIGINT once two mutants' processes run: they are killed with their groups, the parent says
    the run is incomplete, writes its JSON (`complete: false`) and exits 130. Without the stop
    handlers a self-test started from a non-interactive shell ignored SIGINT, and SIGTERM ended it
    without its table."""
    import signal
    import subprocess
    import sys

    from tests.test_gate_workers import processes_mentioning
    from tests.waiting import wait_for

    out, report = tmp_path / "out", tmp_path / "self-test.json"
    proc = subprocess.Popen([sys.executable, "-m", "verify", "selftest", "--mutants", "4", "-j", "2",
                             "--seed", "0", "--out", str(out), "--json", str(report)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    mutant_logs = [out / "self-test" / f"mutant-{i}.log" for i in (1, 2)]
    wait_for(lambda: all(log.exists() for log in mutant_logs), 180, "the mutant processes started", proc=proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout[-2000:] + stderr[-2000:]
    assert "self-test: incomplete: " in stdout
    assert json.loads(report.read_text())["complete"] is False
    assert not processes_mentioning(str(out)), "a mutant's process outlived the stop"


def test_a_stop_ends_the_sample_and_a_mutant_it_cut_short_is_not_a_kill(tmp_path):
    """A stop during a mutant's gate run makes that run an error ("not run: stopped by SIGTERM"),
    which CI would fail on; counted as a kill, it and every mutant after it (each gated at once
    into the same error) inflated the score: a -j 2 run stopped mid-way recorded four mutants
    'killed (error, 0 s)'. Now the cut-short mutant and the rest are not recorded, and the
    report is short of the sample (main calls it incomplete)."""
    import signal

    from verify.jobs import launcher

    classes = toys("RewritesUndeclaredOpPass", "UndeclaredRewritePass")
    calls = []

    def gate(mutant_classes, out, seed):
        calls.append(next(iter(mutant_classes)))
        if len(calls) == 2:  # the stop arrives during the second gated mutant
            launcher.stop_all(signal.SIGTERM)
            return SimpleNamespace(verdict=ProofStatus.ERROR, reproducers={},
                                   reason="not run: stopped by SIGTERM before its search finished")
        return SimpleNamespace(verdict=ProofStatus.SOUND, reproducers={}, reason="")

    try:
        report = st.self_test(classes, 3, 0, gate, tmp_path, threshold=0.8)
    finally:
        launcher.reset_after_stop()
    gated = [r for r in report.results if r.verdict is not sr.MutantVerdict.EQUIVALENT]
    assert len(calls) == 2 and [r.verdict for r in gated] == [sr.MutantVerdict.SURVIVED], report.results
    assert not any(r.verdict is sr.MutantVerdict.KILLED for r in report.results)


def _self_test_args(tmp_path, **changes) -> SimpleNamespace:
    args = dict(mutants=3, seed=0, unaimed=False, stage=None, examples=60, min_evidence=5, top_up=None,
                direct_examples=8, max_seconds=None, top_up_seconds=180.0, max_ops=4, shrink_seconds=300.0,
                pass_timeout=1800.0, resume=None, shard=None, jobs=1, json=tmp_path / "st.json", out=tmp_path)
    args.update(changes)
    return SimpleNamespace(**args)


def test_a_resumed_self_test_keeps_what_the_run_gated_and_gates_only_the_rest(tmp_path, monkeypatch):
    """A 40-mutant sample costs hours; a stopped run is continued with --resume JSON: the mutants
    the JSON records are kept as they were (verdict, seconds), only the others are gated, and
    the JSON written is the whole sample. Without the resume every mutant is gated again."""
    from verify.usage import UsageError

    classes = toys("RewritesUndeclaredOpPass", "UndeclaredRewritePass")
    gated = []

    def gate(mutant_classes, out, seed):
        gated.append(next(iter(mutant_classes)))
        return SimpleNamespace(verdict=ProofStatus.UNSOUND_COPY, reproducers={}, reason="")

    monkeypatch.setattr(st, "proven", lambda _classes: classes)
    monkeypatch.setattr(st, "ci_gate", lambda args: gate)
    monkeypatch.setattr(st, "revision", lambda: "0123abcd")
    assert st.run(_self_test_args(tmp_path), ("edge-fp",)) == 0
    first = json.loads((tmp_path / "st.json").read_text())
    decided = [m for m in first["mutants"] if m["verdict"] == "killed"]
    assert first["complete"] and first["settings"]["revision"] == "0123abcd" and len(decided) >= 2, first
    lost = decided[-1]["index"]  # as if the run had been stopped before its last gated mutant
    partial = dict(first, complete=False, mutants=[dict(m, seconds=123.0) for m in first["mutants"]
                                                   if m["index"] != lost])
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    gated.clear()
    args = _self_test_args(tmp_path, resume=tmp_path / "partial.json", json=tmp_path / "resumed.json")
    assert st.run(args, ("edge-fp",)) == 0
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    assert len(gated) == 1 and resumed["complete"], (gated, resumed)
    assert [m["index"] for m in resumed["mutants"]] == [m["index"] for m in first["mutants"]]
    assert {m["index"]: m["seconds"] for m in resumed["mutants"]}[lost] != 123.0  # gated now
    assert all(m["seconds"] == 123.0 for m in resumed["mutants"] if m["index"] != lost)  # kept as recorded

    for changes, says in (({"seed": 1}, "seed 0 (now 1)"), ({"unaimed": True}, "unaimed False (now True)"),
                          ({"examples": 30}, "examples 60 (now 30)")):
        try:
            st.run(_self_test_args(tmp_path, resume=tmp_path / "partial.json", **changes), ("edge-fp",))
        except UsageError as exc:
            assert says in str(exc), exc
        else:
            raise AssertionError(f"resumed another run: {changes}")
    other = dict(partial, mutants=[dict(m, detail="aten.other.default") for m in partial["mutants"]])
    (tmp_path / "other.json").write_text(json.dumps(other))
    monkeypatch.setattr(st, "revision", lambda: "0123abcd (modified)")
    for path, says in ((tmp_path / "partial.json", "revision"), (tmp_path / "other.json", "revision")):
        try:
            st.run(_self_test_args(tmp_path, resume=path), ("edge-fp",))
        except UsageError as exc:
            assert says in str(exc), exc
        else:
            raise AssertionError("resumed from a modified checkout")
    monkeypatch.setattr(st, "revision", lambda: "0123abcd")
    try:
        st.run(_self_test_args(tmp_path, resume=tmp_path / "other.json"), ("edge-fp",))
    except UsageError as exc:
        assert "is not this sample's" in str(exc), exc
    else:
        raise AssertionError("resumed a run of another sample")
