"""The gate's drivers: which searches a check runs, for one pass or the whole registry, and how
their outcome and evidence become a verdict per pass (verify.gate.verdict: `sound` only where
fastpass acted in the pass at least K times; `judge`; an unfinished check is an `error` that
says why). The search itself (Hypothesis, shrinking, a stage's search and its top-up) is
verify.gate.search, a registry run's stage plan verify.gate.plan, and the reproducer a
divergence leaves verify.gate.reproducer.

Two drivers:

* `gate_pass`: one pass (`--pass`), one Hypothesis search per claimed feature (skip, copy),
  fastpass enabled for that pass only; its route (vocabulary.Route) PIPELINE if the stage's
  pipeline invokes the pass, else DIRECT.
* `gate_registry`: the whole registry. Per stage (`search.search_stage`; in the CLI each stage in a
  worker of its own, -j N at a time, verdicts merged per pass by verdict.merge_stages), one
  Hypothesis search whose every example
  lowers a graph stock and once with fastpass ("skip"+"copy") for *all* annotated passes still
  under test; the harness localises a divergence to the first pass whose output differs, the
  search shrinks the graph while it still diverges at that pass, the pass is then classified
  alone (skip only, copy only), taken out of the active set, and the search resumes. So one
  pair of lowerings checks ~150 passes at once, yet each unsound verdict is a single pass's,
  with a minimal reproducer. After the main budget, top-up rounds draw graphs only for the
  passes still short of evidence, biased to what each lacks (graphs with its targeted ops for
  copy, without them for skip), within a graph and time budget. With the quantized stage among
  its stages, the passes the quantizer's pipeline invokes too are then checked there, one by one
  (`annotation_checks`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path
from dataclasses import replace
from typing import Callable

from fastpass.annotations import ProofStatus
from verify.gate import check
from verify.gate import passes as gp
from verify.gate.graphs import (Aim, annotation_route, annotation_strategy, coverage_json, drawn_counts, form_link,
                               form_route, strategy_for)
from verify.gate.plan import (RegistryRunner, StagePlan, StageResult, merge_stage_results, stage_ops, stage_seed,
                              stage_shares)
from verify.gate.reproducer import how_to_run, write_reproducer
from verify.gate.search import hypothesis_search, search_stage, stopped, untargeted_ops
from verify.gate.verdict import DEFAULT_MIN_EVIDENCE, PassVerdict, make_verdict, merge_stages
from verify.vocabulary import Ending, FeatureSet, Route


_logger = logging.getLogger(__name__)


def _log(msg: str) -> None:
    """Gate progress (stages, graphs drawn, passes short of evidence): INFO, shown unless -q."""
    _logger.info(msg)


# ---------------------------------------------------------------------------------------------
# one pass


def gate_pass(cls: type, ref: str | None, examples: int, stage: str, out: Path, seed: int | None = None,
              how: Route = Route.UNDECIDED, max_ops: int = 4, shrink_seconds: float = 300.0,
              ops: list[str] | None = None, min_evidence: int = DEFAULT_MIN_EVIDENCE,
              checkpoint: Callable[[PassVerdict], None] | None = None) -> PassVerdict:
    """One pass's check (`--pass`, or a registry run's direct check): a search per claimed
    feature. `checkpoint(verdict so far)` is called after every example counted (a pass worker
    writes it, so that a check cut short by a stop, its timeout or a crash hands over its
    evidence: see verify.gate.workers). `how` UNDECIDED: the pass's route on `stage` (`how_to_run`)."""
    from fastpass.annotations import lookup

    start = time.perf_counter()
    gp.ensure_annotation(cls)
    v = make_verdict(cls, ref)
    v.stage = stage
    ann = lookup(cls)
    if not (ann.skip_sound or ann.copy_sound):
        v.verdict, v.reason = ProofStatus.ERROR, "the pass has no skip- or copy-sound annotation (nothing to check)"
        return v
    try:
        v.how = how_to_run(cls, stage) if how is Route.UNDECIDED else how
    except Exception as exc:  # noqa: BLE001
        v.verdict, v.reason = ProofStatus.ERROR, f"cannot decide how to run it: {exc}"
        return v
    unsound = []
    ops = stage_ops(stage, ops)
    annotation = v.how is Route.ANNOTATION  # the quantizer's pipeline: its ATen graph, no lowering
    targeted = gp.aimed_ops(cls, ann.targeted_ops, annotation)
    pipeline = v.how is Route.PIPELINE  # a typed split presents slice_copy there only
    aim = Aim.of(targeted, gp.ops_named_by(cls), ops, gp.ops_declared_by(cls), pipeline)  # what each graph aims at
    for feature in list(v.evidence):
        enabled = FeatureSet.of([feature])
        evidence = v.evidence[feature]
        if annotation:
            strategy = annotation_strategy(targeted, max_ops, ops, enabled, gp.ops_named_by(cls),
                                           gp.ops_declared_by(cls), annotation_route(cls, ops))
        else:
            strategy = strategy_for(targeted, max_ops, ops, want=enabled, suspects=gp.ops_named_by(cls),
                                    forms=form_route(cls, ops), link=form_link(cls, ops),
                                    declared=gp.ops_declared_by(cls), pipeline=pipeline)
        counts = {"examples": 0, "vacuous": 0}
        drawn, covered = Counter(), Counter()  # covered: Aim.coverage, ranks x dtypes x distances

        def on_example(spec, o, shrinking, enabled=enabled, counts=counts, evidence=evidence, drawn=drawn,
                       covered=covered):
            if shrinking:
                return
            counts["examples"] += 1
            aim.tally(drawn, spec)
            covered.update(aim.coverage(spec))
            counts["drawn"], counts["coverage"] = drawn_counts(drawn), coverage_json(covered)
            counts["vacuous"] += bool(o.vacuous)
            if o.vacuous and "vacuous_reason" not in counts:
                counts["vacuous_reason"] = o.vacuous[:200]
            evidence.add(o.invocations, o.skipped, o.copied, o.identical, untargeted_ops(o, cls, o.copied),
                         o.upstream_skipped, ran=o.ran, dispatched=o.dispatched, graph=spec)
            if checkpoint is not None:  # v.examples counts a feature's search once it ends: add this one's
                checkpoint(replace(v, examples=v.examples + counts["examples"]))
            status = "DIVERGES" if o.diverged else ("vacuous: " + o.vacuous[:80] if o.vacuous else "same")
            _log(f"  {v.name} [{enabled}] example {counts['examples']}/{examples}: {len(spec)} op(s) "
                 f"{','.join(spec.op_names())} -> {status} (skipped {o.skipped}, copied {o.copied}; "
                 f"evidence {evidence.examples_with_action}/{min_evidence})")

        def body(spec, enabled=enabled):
            try:
                return check.example(spec, cls, enabled, stage, v.how)
            except Exception as exc:  # noqa: BLE001 - a broken example is not a divergence
                return check.Outcome(False, vacuous=f"harness error: {type(exc).__name__}: {exc}"[:300])

        _log(f"gate: {v.qualname} [{enabled}] ({v.how}, {stage}), up to {examples} graph(s)")
        try:
            spec, outcome = hypothesis_search(f"gate:{v.qualname}:{enabled}:{stage}:{v.how}", strategy, body,
                                              examples, out, seed, shrink_seconds, on_example=on_example)
        except Exception as exc:  # noqa: BLE001
            v.verdict, v.reason = ProofStatus.ERROR, f"search failed: {type(exc).__name__}: {exc}"[:500]
            v.seconds = time.perf_counter() - start
            return v
        v.examples += counts["examples"]
        v.modes[feature.value] = dict(counts, distinct=evidence.distinct,  # distinct: evidence.py
                                      diverged=spec is not None,
                                      not_presented=aim.not_presented())  # never counted as covered
        if spec is not None:
            verdict = ProofStatus.unsound(feature)
            path = write_reproducer(out, v, verdict, enabled, spec, outcome, v.how, stage)
            v.reproducers[verdict.value] = str(path)
            v.modes[feature.value].update(detail=outcome.detail, where=outcome.where, graph=spec.describe())
            unsound.append((verdict, outcome))
            _log(f"gate: {v.name}: {verdict.value}; shrunk to {len(spec)} op(s); reproducer {path}")
        elif counts["examples"] and counts["vacuous"] == counts["examples"]:
            v.modes[feature.value]["note"] = "every example was vacuous"
    if unsound:
        v.verdict = unsound[0][0]  # skip is checked first
        v.reason = "; ".join(f"{verdict.value}: {o.detail.splitlines()[0] if o.detail else ''}"
                             for verdict, o in unsound)
    elif v.every_example_vacuous:
        first = next((m["vacuous_reason"] for m in v.modes.values() if m.get("vacuous_reason")), "")
        v.verdict, v.reason = ProofStatus.ERROR, f"no example could be run: every example was vacuous ({first})"
    else:
        judge(v, cls, min_evidence)
    v.seconds = time.perf_counter() - start
    return v


# ---------------------------------------------------------------------------------------------
# the whole registry


def gate_registry(classes: dict[str, type], examples: int, stages: list[str], out: Path, seed: int | None = None,
                  max_ops: int = 4, shrink_seconds: float = 300.0, direct_examples: int = 3,
                  ops: list[str] | None = None, min_evidence: int = DEFAULT_MIN_EVIDENCE,
                  top_up: int | None = None, top_up_seconds: float = 300.0,
                  max_seconds: float | None = None, parallel: int = 1,
                  runner: RegistryRunner | None = None) -> list[PassVerdict]:
    """Gate every pass in `classes`: per stage, `examples` graphs for all passes the stage's
    pipeline invokes, then up to `top_up` graphs (default: `examples`) and `top_up_seconds`
    drawn for the passes still short of `min_evidence` (`search_stage`); passes no stage
    invokes run directly (`direct_examples` graphs per feature) or are `untested`.

    The stages search independently (each its own seed, `stage_seed`) and their verdicts are
    merged per pass (verdict.merge_stages: evidence summed, the first failing stage's verdict
    wins), then judged. `runner(plans, direct, direct_stage, run_deadline)` runs the stage
    searches and the direct checks: by default here, one after another; the CLI's runs each in
    a worker, `-j N` at a time (verify.gate.workers), and passes that N as `parallel`.
    `max_seconds` bounds the whole run: a sixth is kept for the direct runs, and each stage's
    search gets the rest divided by the rounds of `parallel` searches (`stage_shares`), counted
    from its own start and capped so no stage runs into the direct runs' reserve; graphs past a
    deadline are not lowered, so a pass may end `unexercised`.

    An incomplete check is never green (PassVerdict.not_finished: `error`): when the run is
    stopped (verify.jobs.launcher.stop_all: SIGINT/SIGTERM under stop_on_signals) no graph is lowered
    any more, and every pass whose check had not finished -- a stage search cut short or never
    started, a direct check not run -- is an error saying so ("not run: stopped by SIGTERM ...");
    so is each pass a stage search or direct check never reached by --max-seconds ("not
    started: ...") and each pass of a stage whose worker crashed or timed out. The evidence the
    cut-short searches had gathered is kept in those verdicts."""
    top_up = examples if top_up is None else top_up
    run_deadline = None if max_seconds is None else time.monotonic() + max_seconds
    invoked_by = {stage: check.pipeline_pass_names(check.target_for(stage)) for stage in stages}
    searched = {stage: tuple(qn for qn, cls in classes.items() if cls.__name__ in invoked_by[stage])
                for stage in stages}
    tested = {qn for passes in searched.values() for qn in passes}
    untried = [(qn, cls) for qn, cls in classes.items() if qn not in tested]
    direct_reserve = (max_seconds or 0) / 6 if direct_examples > 0 and untried else 0.0
    searching = [stage for stage in stages if searched[stage]]
    for stage in stages:
        if not searched[stage]:
            _log(f"gate: stage {stage}: no annotated pass under test in its pipeline; not searched")
    share = stage_shares(max_seconds, direct_reserve, len(searching), parallel)
    not_after = None if run_deadline is None else run_deadline - direct_reserve
    plans = [StagePlan(stage, searched[stage], examples, top_up, top_up_seconds, share, not_after,
                       stage_seed(seed, stage)) for stage in searching]
    direct_stage = "edge-fp" if "edge-fp" in stages else stages[0]
    pipelines = "/".join(check.target_for(s).name for s in stages)
    base = {qn: make_verdict(cls) for qn, cls in untried}
    if direct_examples <= 0:
        for qn, _cls in untried:
            base[qn].verdict = ProofStatus.UNTESTED
            base[qn].reason = f"not invoked by the {pipelines} pipelines (direct runs disabled)"
        untried = []

    def in_process(plans: list[StagePlan], items: list[tuple[str, type]], stage: str,
                   deadline: float | None) -> tuple[list[StageResult], dict[str, PassVerdict]]:
        results = []
        for plan in plans:
            if stopped():
                results.append(StageResult(plan.stage, {}, Ending.STOPPED))
                continue
            verdicts = search_stage(plan, {qn: classes[qn] for qn in plan.passes}, out, max_ops, shrink_seconds,
                                    ops, min_evidence)
            results.append(StageResult(plan.stage, verdicts, Ending.STOPPED if stopped() else None))
        done: dict[str, PassVerdict] = {}
        for qn, cls in items:
            if stopped() or (deadline is not None and time.monotonic() > deadline):
                break
            v = gate_pass(cls, None, direct_examples, stage, out, seed, how=Route.DIRECT, max_ops=max_ops,
                          shrink_seconds=shrink_seconds, ops=ops, min_evidence=min_evidence)
            if stopped():  # cut short by the stop: its evidence so far, not finished
                v.unfinished = Ending.STOPPED
            done[qn] = v
        return results, done

    results, direct = (runner or in_process)(plans, untried, direct_stage, run_deadline)
    order = {stage: index for index, stage in enumerate(stages)}
    merged = merge_stage_results({qn: cls for qn, cls in classes.items() if qn in tested},
                                 sorted(results, key=lambda r: order[r.stage]))
    verdicts = {qn: merged.get(qn) or base[qn] for qn in classes}
    verdicts.update((key, v) for key, v in merged.items() if key not in classes)
    # passes a stage's pipeline invokes: finished only if every stage that searches them finished
    ended = {r.stage: r.unfinished for r in results}
    for qn in tested:
        cut = [(stage, ended[stage] if stage in ended else _missing()) for stage in searching
               if qn in searched[stage] and (stage not in ended or ended[stage] is not None)]
        if cut:
            why = cut[0][1]
            verdicts[qn].not_finished(why, _unfinished_reason(why, "its search of stage(s) "
                                                          + ", ".join(stage for stage, _ in cut)))
    # passes no stage's pipeline invokes: their direct runs (each alone, in workers: see runner)
    for qn, _cls in untried:
        v = direct.get(qn)
        if v is None or v.unfinished is not None:  # no verdict, or the evidence of a run cut short
            if v is None:
                v, why = verdicts[qn], _missing()
            else:
                verdicts[qn], why = v, v.unfinished
            v.not_finished(why, _unfinished_reason(why, f"its direct run (not invoked by the {pipelines} pipelines)"))
            continue
        if v.verdict is ProofStatus.ERROR and v.every_example_vacuous:
            v.verdict = ProofStatus.UNTESTED
            v.reason = (f"not invoked by the {pipelines} pipelines, and it cannot run standalone on "
                        f"{direct_stage} graphs: {_first_vacuous_reason(v)}")
        elif v.verdict is ProofStatus.UNEXERCISED:
            v.reason = f"not invoked by the {pipelines} pipelines; run directly: {v.reason}"
        verdicts[qn] = v
    if ANNOTATION_STAGE in stages:
        annotation_checks(classes, verdicts, examples, out, seed, max_ops, shrink_seconds, ops, min_evidence,
                          run_deadline)
    for qn, v in verdicts.items():
        judge(v, classes.get(qn), min_evidence)
    return list(verdicts.values())


ANNOTATION_STAGE = "quantized"  # the stage whose target's quantizer the annotation checks run
ANNOTATION_LABEL = "quantized:annotation"  # how a verdict's stages name that check


def annotation_checks(classes: dict[str, type], verdicts: dict[str, PassVerdict], examples: int, out: Path,
                      seed: int | None, max_ops: int, shrink_seconds: float, ops: list[str] | None,
                      min_evidence: int, deadline: float | None) -> None:
    """Check, in the quantizer's transform_for_annotation pipeline too (`check.run_annotation`),
    every pass both it and the lowering pipeline invoke (`reach.quantizer_first`), and merge the
    verdict into the pass's (verdict.merge_stages: evidence summed, a failure wins).

    Why: a pass both pipelines invoke has one annotation for both, and fastpass acts in the
    quantizer's whenever a user quantizes under it (`python -m fastpass run`); the lowering
    stages quantize outside fastpass, so an annotation wrong only there passed them
    (DecomposeGroupNormPass without aten.group_norm, the gate's self-test). In this process, one
    pass after another: no lowering, ~0.4 s a graph."""
    from generators.random.reach import quantizer_first

    both = quantizer_first()
    for qn, cls in classes.items():
        if cls.__name__ not in both or qn not in verdicts or verdicts[qn].verdict.fails:
            continue
        if stopped() or (deadline is not None and time.monotonic() > deadline):
            why = _missing()
            verdicts[qn].not_finished(why, _unfinished_reason(why, "its check in the quantizer's pipeline"))
            continue
        v = gate_pass(cls, None, examples, ANNOTATION_STAGE, out, seed, how=Route.ANNOTATION, max_ops=max_ops,
                      shrink_seconds=shrink_seconds, ops=ops, min_evidence=min_evidence)
        v.stage = ANNOTATION_LABEL  # its reproducer names the stage whose quantizer ran (ANNOTATION_STAGE)
        verdicts[qn] = merge_stages([verdicts[qn], v])  # a finished check (an unfinished one fails: skipped)
        if stopped():
            verdicts[qn].not_finished(Ending.STOPPED,
                                      _unfinished_reason(Ending.STOPPED, "its check in the quantizer's pipeline"))


def judge(v: PassVerdict, cls: type | None, min_evidence: int) -> None:
    """`v.judge` with what the gate knows of the pass beyond its evidence: whether its code can
    retrace at all (passes.never_retraces) and whether the generators list it unreachable."""
    from generators.random.reach import UNREACHABLE

    if cls is None:
        v.judge(min_evidence)
        return
    v.judge(min_evidence, never_retraces=gp.never_retraces(cls), unreachable=UNREACHABLE.get(cls.__name__))


def _missing() -> Ending:
    """Why a check gave no result at all: the run was stopped, or else the deadline came first."""
    return Ending.STOPPED if stopped() else Ending.NOT_STARTED


def _unfinished_reason(why: Ending, what: str) -> str:
    """The reason of a pass whose check did not finish (`what`: which part of it)."""
    from verify.jobs.launcher import stop_signal

    if why is Ending.STOPPED:
        import signal

        signum = stop_signal()
        by = signal.Signals(signum).name if signum is not None else "a stop"
        return f"not run: stopped by {by} before {what} finished (evidence so far kept)"
    if why is Ending.NOT_STARTED:
        return f"not started: the --max-seconds budget was spent before {what} started"
    return f"not finished: {what} ended without a result (worker crash or timeout: see the stage's error entry)"


def _first_vacuous_reason(v: PassVerdict) -> str:
    return next((m["vacuous_reason"] for m in v.modes.values() if m.get("vacuous_reason")),
                "every example was vacuous")


