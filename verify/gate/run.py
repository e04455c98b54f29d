"""Drive the gate with Hypothesis: search for a graph on which fastpass changes a pass's result,
shrink it, save it as a reproducer, and turn the search and its evidence into a verdict per pass
(verify.gate.verdict: `sound` only where fastpass acted in the pass at least K times).

Two drivers:

* `gate_pass`: one pass (`--pass`), one Hypothesis search per claimed feature (skip, copy),
  fastpass enabled for that pass only; pipeline mode if the stage's pipeline invokes the pass,
  else direct.
* `gate_registry`: the whole registry. Per stage (`search_stage`; in the CLI each stage in a
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
from typing import Any, Callable

from fastpass.annotations import ProofStatus
from verify.gate import check
from verify.gate import passes as gp
from verify.gate.graphs import (Aim, annotation_route, annotation_strategy, coverage_json, drawn_counts, form_link,
                               form_route, strategy_for)
from verify.gate.plan import (RegistryRunner, StagePlan, StageResult, merge_stage_results, stage_ops, stage_seed,
                              stage_shares)
from verify.gate.reproducer import how_to_run, write_reproducer
from verify.report.reproducer import NO_PASS
from verify.gate.verdict import DEFAULT_MIN_EVIDENCE, PassVerdict, make_verdict, merge_stages
from verify.vocabulary import Ending, Feature


class CounterexampleFound(Exception):
    """Raised inside a Hypothesis search to end it at a graph that diverged (its fingerprint in
    args[0]); not a divergence point (that is verify.compare's Divergence)."""


_logger = logging.getLogger(__name__)


def _log(msg: str) -> None:
    """Gate progress (stages, graphs drawn, passes short of evidence): INFO, shown unless -q."""
    _logger.info(msg)


def _settings(examples: int, out: Path, seed: int):
    from hypothesis import HealthCheck, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    return settings(max_examples=max(1, examples), database=DirectoryBasedExampleDatabase(str(out / "hypothesis-db")),
                    deadline=None, suppress_health_check=list(HealthCheck), derandomize=False,
                    report_multiple_bugs=False, print_blob=False)


def hypothesis_search(key: str, strategy, body: Callable[[Any], check.Outcome], examples: int, out: Path,
                      seed: int | None = None, shrink_seconds: float = 300.0, same_failure: Callable | None = None,
                      on_example: Callable | None = None):
    """Run `body` on up to `examples` graphs; return (failing spec, Outcome) shrunk, or (None, None).

    `same_failure(outcome, first)` says whether a new failure is the one being shrunk (the
    registry driver keeps the culprit pass fixed). Results are cached by graph fingerprint, so
    Hypothesis's final replay of the minimal example does not lower again; after
    `shrink_seconds` of shrinking, new graphs count as passing (the best so far is kept)."""
    import hypothesis
    from hypothesis import given

    failing: dict[str, tuple[Any, check.Outcome]] = {}
    state: dict[str, Any] = {"first": None, "t_fail": None}

    def test(spec):
        fp = spec.fingerprint()
        failed = fp in failing
        if not failed:
            if state["t_fail"] is not None and time.monotonic() - state["t_fail"] > shrink_seconds:
                return
            outcome = body(spec)
            if on_example:
                on_example(spec, outcome, state["first"] is not None)
            if outcome.diverged:
                if state["first"] is None:
                    state["first"], state["t_fail"] = outcome, time.monotonic()
                if same_failure is None or same_failure(outcome, state["first"]):
                    failing[fp] = (spec, outcome)
                    failed = True
        if failed:  # one raise statement: Hypothesis tells failures apart by where they are raised
            raise CounterexampleFound(fp)

    wrapped = _settings(examples, out, seed)(given(strategy)(test))
    wrapped._hypothesis_internal_add_digest = key.encode()
    if seed is not None:  # a fixed seed makes the run repeatable, but Hypothesis then skips the database
        wrapped = hypothesis.seed(seed)(wrapped)
    try:
        wrapped()
    except CounterexampleFound as exc:
        return failing[exc.args[0]]
    except BaseException as exc:  # noqa: BLE001 - Hypothesis may wrap our exception
        for sub in getattr(exc, "exceptions", ()) or ():
            if isinstance(sub, CounterexampleFound):
                return failing[sub.args[0]]
        raise
    return None, None


# ---------------------------------------------------------------------------------------------
# one pass


def untargeted_ops(outcome: check.Outcome, cls: type, copied: int) -> frozenset[str]:
    """The ops of the pass's input graph fastpass may have copied (not targeted), when it copied
    `copied` nodes in it and the results were identical: see verdict.Evidence."""
    from fastpass.annotations import lookup

    if not copied or not outcome.identical:
        return frozenset()
    ops = outcome.input_ops or check.input_ops(outcome.observation, cls.__name__)
    targeted = {gp.op_name(o) for o in lookup(cls).targeted_ops}
    return frozenset(op for op in ops if op not in targeted)


def gate_pass(cls: type, ref: str | None, examples: int, stage: str, out: Path, seed: int | None = None,
              how: str | None = None, max_ops: int = 4, shrink_seconds: float = 300.0,
              ops: list[str] | None = None, min_evidence: int = DEFAULT_MIN_EVIDENCE,
              checkpoint: Callable[[PassVerdict], None] | None = None) -> PassVerdict:
    """One pass's check (`--pass`, or a registry run's direct check): a search per claimed
    feature. `checkpoint(verdict so far)` is called after every example counted (a pass worker
    writes it, so that a check cut short by a stop, its timeout or a crash hands over its
    evidence: see verify.gate.workers)."""
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
        v.how = how or how_to_run(cls, stage)
    except Exception as exc:  # noqa: BLE001
        v.verdict, v.reason = ProofStatus.ERROR, f"cannot decide how to run it: {exc}"
        return v
    unsound = []
    ops = stage_ops(stage, ops)
    annotation = v.how == "annotation"  # the quantizer's pipeline: its ATen graph, no lowering
    targeted = gp.aimed_ops(cls, ann.targeted_ops, annotation)
    aim = Aim.of(targeted, gp.ops_named_by(cls), ops, gp.ops_declared_by(cls))  # what each graph aims at
    for feature in list(v.evidence):
        mode = feature.value
        evidence = v.evidence[feature]
        if annotation:
            strategy = annotation_strategy(targeted, max_ops, ops, mode, gp.ops_named_by(cls),
                                           gp.ops_declared_by(cls), annotation_route(cls, ops))
        else:
            strategy = strategy_for(targeted, max_ops, ops, want=mode, suspects=gp.ops_named_by(cls),
                                    forms=form_route(cls, ops), link=form_link(cls, ops),
                                    declared=gp.ops_declared_by(cls))
        counts = {"examples": 0, "vacuous": 0}
        drawn, covered = Counter(), Counter()  # covered: Aim.coverage, ranks x dtypes x distances

        def on_example(spec, o, shrinking, mode=mode, counts=counts, evidence=evidence, drawn=drawn, covered=covered):
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
            _log(f"  {v.name} [{mode}] example {counts['examples']}/{examples}: {len(spec)} op(s) "
                 f"{','.join(spec.op_names())} -> {status} (skipped {o.skipped}, copied {o.copied}; "
                 f"evidence {evidence.examples_with_action}/{min_evidence})")

        def body(spec, mode=mode):
            try:
                return check.example(spec, cls, mode, stage, v.how)
            except Exception as exc:  # noqa: BLE001 - a broken example is not a divergence
                return check.Outcome(False, vacuous=f"harness error: {type(exc).__name__}: {exc}"[:300])

        _log(f"gate: {v.qualname} [{mode}] ({v.how}, {stage}), up to {examples} graph(s)")
        try:
            spec, outcome = hypothesis_search(f"gate:{v.qualname}:{mode}:{stage}:{v.how}", strategy, body,
                                              examples, out, seed, shrink_seconds, on_example=on_example)
        except Exception as exc:  # noqa: BLE001
            v.verdict, v.reason = ProofStatus.ERROR, f"search failed: {type(exc).__name__}: {exc}"[:500]
            v.seconds = time.perf_counter() - start
            return v
        v.examples += counts["examples"]
        v.modes[mode] = dict(counts, distinct=evidence.distinct, diverged=spec is not None,  # distinct: evidence.py
                             not_presented=aim.not_presented())  # never counted as covered
        if spec is not None:
            verdict = ProofStatus.unsound(feature)
            path = write_reproducer(out, v, verdict, mode, spec, outcome, v.how, stage)
            v.reproducers[verdict.value] = str(path)
            v.modes[mode].update(detail=outcome.detail, where=outcome.where, graph=spec.describe())
            unsound.append((verdict, outcome))
            _log(f"gate: {v.name}: {verdict.value}; shrunk to {len(spec)} op(s); reproducer {path}")
        elif counts["examples"] and counts["vacuous"] == counts["examples"]:
            v.modes[mode]["note"] = "every example was vacuous"
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


_NOT_DRAWN = "not lowered: the time budget is spent, no pass under test lacks evidence, or the run was stopped"


# Called by a stage's search after every graph it counted and every pass it classified, with its
# verdicts so far (the very dict search_stage returns): a stage worker writes them, so that a
# search cut short (stop, timeout, crash) still hands its evidence to the gate.
Checkpoint = Callable[[dict[str, PassVerdict]], None]


def _stopped() -> bool:
    """Has the run been stopped (SIGINT/SIGTERM, see verify.jobs.launcher.stop_on_signals)?"""
    from verify.jobs.launcher import stop_signal

    return stop_signal() is not None


class _Registry:
    """One stage's search state in a registry run: verdicts, the passes taken out of the search
    (found unsound, fastpass off for them), the evidence each has gathered so far, and the
    search rounds (each round's Hypothesis seed is the stage's seed plus its number)."""

    def __init__(self, classes: dict[str, type], out: Path, seed: int | None, max_ops: int,
                 shrink_seconds: float, ops: list[str] | None, min_evidence: int,
                 checkpoint: Checkpoint | None = None) -> None:
        self.classes, self.out, self.seed, self.max_ops = classes, out, seed, max_ops
        self.checkpoint = checkpoint or (lambda verdicts: None)
        self.shrink_seconds, self.ops, self.min_evidence = shrink_seconds, ops, min_evidence
        self.verdicts = {qn: make_verdict(cls) for qn, cls in classes.items()}
        self.by_name: dict[str, list[str]] = {}
        for qn, cls in classes.items():
            self.by_name.setdefault(cls.__name__, []).append(qn)
        self.excluded: set[str] = set()
        self.rounds = 0
        self.aims: dict[str, Aim] = {}  # what each pass's graphs aim at (built on first use)

    def lacking(self, qn: str) -> list[Feature]:
        """The claimed features of a pass with fewer than K examples of evidence."""
        return [f for f, e in self.verdicts[qn].evidence.items() if e.examples_with_action < self.min_evidence]

    def record(self, active: set[str], outcome: check.Outcome, spec=None) -> None:
        """Count one example's evidence for every pass under test (identical results only), and
        what the graph `spec` was to each of them (graphs.DrawKind: read off its structure)."""
        counts = check.pass_counts(outcome.stats)
        for qn in active:
            v = self.verdicts[qn]
            if spec is not None:
                if qn not in self.aims:
                    cls = self.classes[qn]
                    self.aims[qn] = Aim.of(gp.aimed_ops(cls, lookup_ops(cls)), gp.ops_named_by(cls), self.ops,
                                           gp.ops_declared_by(cls))
                v.drawn = v.drawn or drawn_counts(Counter())
                for kind in self.aims[qn].kinds(spec):
                    v.drawn[kind.value] += 1
            c = check.counts_of(counts, self.classes[qn])
            v.examples += 1
            copied_ops = untargeted_ops(outcome, self.classes[qn], c.copied)
            for feature, evidence in v.evidence.items():
                evidence.add(c.invocations, c.skipped, c.copied, outcome.identical, copied_ops, c.upstream_skipped,
                             ran=c.ran, dispatched=c.dispatched, graph=spec)

    def copy_starved(self, qn: str) -> bool:
        """Short of copy evidence because fastpass's skip took every call of the pass that ran so
        far (it claims both; its copy never had a call to act in)."""
        v = self.verdicts[qn]
        copy = v.evidence.get(Feature.COPY)
        return (Feature.COPY in self.lacking(qn) and Feature.SKIP in v.evidence
                and copy is not None and copy.invocations > copy.upstream_skipped and copy.calls_ran == 0)

    def search(self, stage: str, active: set[str], strategy_of: Callable[[list[str]], Any], budget: int,
               label: str, deadline: float | None = None, until: Callable[[], bool] | None = None,
               copy_only: Callable[[str], bool] = lambda qn: False) -> int:
        """Search `budget` graphs from `strategy_of(sorted active)`; on a divergence, pin it on its
        pass, classify it, drop it from `active` and go on with the rest. Returns graphs lowered.
        `copy_only(qn)`: lower that pass with its skip claim withdrawn in this search (read once
        per round, as the strategy is: Hypothesis replays and shrinks by re-running)."""
        done = 0
        max_culprits = 10
        for _culprit in range(max_culprits + 1):
            if not active or done >= budget or (until is not None and until()) or _stopped():
                break
            names = sorted(active)
            keep = [self.classes[qn] for qn in names]
            without_skip = [self.classes[qn] for qn in names if copy_only(qn)]
            if without_skip:
                _log(f"  [{stage}{label}] {len(without_skip)} pass(es) lowered without their skip claim, so "
                     f"that their copy acts: {', '.join(c.__name__ for c in without_skip)}")
            counter = {"n": 0}
            self.rounds += 1

            def body(spec, keep=keep, without_skip=without_skip):
                if ((deadline is not None and time.monotonic() > deadline) or (until is not None and until())
                        or _stopped()):
                    return check.Outcome(False, vacuous=_NOT_DRAWN)
                try:
                    return check.pipeline_example(spec, None, "both", stage, keep=keep, copy_only=without_skip)
                except Exception as exc:  # noqa: BLE001
                    return check.Outcome(False, vacuous=f"harness error: {type(exc).__name__}: {exc}"[:300])

            def on_example(spec, o, shrinking, counter=counter):
                if shrinking or o.vacuous == _NOT_DRAWN:
                    return
                counter["n"] += 1
                self.record(active, o, spec)
                self.checkpoint(self.verdicts)
                status = f"DIVERGES at {o.where}" if o.diverged else (
                    "vacuous: " + o.vacuous[:80] if o.vacuous else "same")
                short = sum(1 for qn in active if self.lacking(qn))
                _log(f"  [{stage}{label}] graph {done + counter['n']}/{budget}: {len(spec)} op(s) "
                     f"{','.join(spec.op_names())} -> {status}; {short} pass(es) short of evidence")

            same = lambda o, first: o.culprit == first.culprit  # noqa: E731
            try:
                spec, outcome = hypothesis_search(f"gate-registry:{stage}{label}", strategy_of(names), body,
                                                  max(1, budget - done), self.out,
                                                  None if self.seed is None else self.seed + self.rounds,
                                                  self.shrink_seconds, same_failure=same, on_example=on_example)
            except Exception as exc:  # noqa: BLE001 - the search itself failed (Hypothesis, the harness)
                # The evidence recorded so far stands; the stage's search ends with an `error`
                # verdict (CI fails on it) instead of ending the run and losing every verdict.
                done += counter["n"]
                first = str(exc).splitlines()[0][:200] if str(exc) else ""
                _log(f"gate: the search of stage {stage}{label} failed ({type(exc).__name__}: {first}); "
                     f"its evidence so far is kept, the stage's search stops")
                self.verdicts[f"<search-error:{stage}{label}>"] = PassVerdict(
                    "<search-error>", "search error", "-", ProofStatus.ERROR,
                    f"the graph search failed after {done} graph(s): {type(exc).__name__}: {first}", "batch", stage)
                break
            done += counter["n"]
            if spec is None:
                break
            culprits = [qn for qn in self.by_name.get(outcome.culprit or "", []) if qn in active]
            if not culprits:
                _log(f"gate: divergence at {outcome.where}, not an annotated pass under test; "
                     f"reproducer kept, search stops for stage {stage}")
                v = PassVerdict("<unattributed>", "unattributed", NO_PASS, ProofStatus.ERROR,
                                f"divergence at {outcome.where}: {outcome.detail.splitlines()[0]}", "batch", stage)
                with check.quiet():  # fastpass was not on for these
                    running = set(names)
                    off = sorted(qn for qn in gp.annotated_passes() if qn not in running)
                v.reproducers[ProofStatus.ERROR.value] = str(write_reproducer(
                    self.out, v, ProofStatus.ERROR, "both", spec, outcome, "pipeline", stage, off, per_stage=True))
                self.verdicts[f"<unattributed:{stage}>"] = v
                active.clear()
                break
            qn = culprits[0]
            classify(self.verdicts[qn], self.classes[qn], spec, outcome, stage, self.out, keep,
                     sorted(self.excluded))
            active.discard(qn)
            self.excluded.add(qn)
            self.checkpoint(self.verdicts)
        return done


def _biased(classes: dict[str, type], max_ops: int, ops: list[str] | None, want: Callable[[str], str]):
    """A strategy over `names`: pick a pass, draw a graph biased to its targeted ops (`want(qn)`:
    "both", or the feature it lacks evidence for)."""
    from hypothesis import strategies as st

    suspects = {qn: gp.ops_named_by(cls) for qn, cls in classes.items()}
    forms = {qn: form_route(cls, ops) for qn, cls in classes.items()}
    links = {qn: form_link(cls, ops) for qn, cls in classes.items()}
    declared = {qn: gp.ops_declared_by(cls) for qn, cls in classes.items()}
    targeted = {qn: aimed_targeted_ops(cls) for qn, cls in classes.items()}

    def strategy_of(names: list[str]):
        # What each pass wants is read once, here: Hypothesis replays and shrinks by re-drawing,
        # and a strategy that followed the evidence gathered meanwhile would draw differently
        # (FlakyStrategyDefinition: a whole-registry run died of it in a top-up round).
        wants = {qn: want(qn) for qn in names}
        return st.sampled_from(names).flatmap(
            lambda qn: strategy_for(targeted[qn], max_ops, ops, want=wants[qn], suspects=suspects[qn],
                                    forms=forms[qn], link=links[qn], declared=declared[qn]))

    return strategy_of


def search_stage(plan: StagePlan, classes: dict[str, type], out: Path, max_ops: int = 4,
                 shrink_seconds: float = 300.0, ops: list[str] | None = None,
                 min_evidence: int = DEFAULT_MIN_EVIDENCE,
                 checkpoint: Checkpoint | None = None) -> dict[str, PassVerdict]:
    """One stage's search of a registry run (in a stage worker, or in this process): `plan.examples`
    graphs for every pass in `classes` (the passes the stage's pipeline invokes) at once, then
    the top-up for those still short of `min_evidence`. Returns each pass's verdict for this stage
    alone (not judged: evidence is summed over the stages first, see verdict.merge_stages), plus
    entries for what the stage could not pin on a pass (`<search-error:STAGE...>`,
    `<unattributed:STAGE>`). `plan.seconds` counts from this call; `plan.not_after` caps it.
    `checkpoint(verdicts)` is called with the verdicts so far after every graph counted."""
    from verify.gate.graphs import vocabulary_split

    stage = plan.stage
    ops = stage_ops(stage, ops)
    reg = _Registry(classes, out, plan.seed, max_ops, shrink_seconds, ops, min_evidence, checkpoint)
    active = set(classes)
    for v in reg.verdicts.values():
        v.how, v.stage = "batch", stage
    biasable = {qn for qn, cls in classes.items()
                if vocabulary_split(aimed_targeted_ops(cls), ops)[0] or form_route(cls, ops) or form_link(cls, ops)}
    now = time.monotonic()
    stage_deadline = main_deadline = None
    if plan.seconds is not None:
        stage_deadline = now + plan.seconds
        main_deadline = now + (plan.seconds * 0.6 if plan.top_up > 0 else plan.seconds)
    if plan.not_after is not None:
        stage_deadline = min(stage_deadline or plan.not_after, plan.not_after)
        main_deadline = min(main_deadline or plan.not_after, plan.not_after)
    target = check.target_for(stage)
    _log(f"gate: stage {stage} ({target.name}): {len(active)} annotated pass(es) in the pipeline, "
         f"{plan.examples} graph(s), then up to {plan.top_up} for passes short of {min_evidence} examples "
         f"of evidence" + (f"; {stage_deadline - now:.0f} s for the stage" if stage_deadline else ""))
    stage_start = time.perf_counter()
    done = reg.search(stage, active, _biased(classes, max_ops, ops, lambda qn: "both"), plan.examples, "",
                      deadline=main_deadline)
    short = {qn for qn in active if reg.lacking(qn)}
    _log(f"gate: stage {stage}: {done} graph(s) in {time.perf_counter() - stage_start:.0f} s; "
         f"{len(short)} pass(es) short of evidence")

    # Top-up: the passes still short whose graphs can be biased (a vocabulary op yields one of
    # their targeted ops, or they lack skip evidence: graphs without them always exist). Passes
    # with evidence stay active (fastpass on for them, as it is used).
    # A pass fastpass skipped in every call so far gets its copy evidence only with its skip
    # claim withdrawn: the top-up lowers it so (decided once, at the top-up's start).
    starved = {qn for qn in active if reg.copy_starved(qn)}

    def wanted(qn: str) -> bool:
        lacking = reg.lacking(qn)
        return bool(lacking) and (qn in biasable or lacking == [Feature.SKIP] or qn in starved)

    if plan.top_up > 0 and any(wanted(qn) for qn in active):
        def want(qn: str) -> str:
            lacking = reg.lacking(qn)
            return lacking[0].value if len(lacking) == 1 else "both"

        top_start = time.perf_counter()
        deadline = time.monotonic() + plan.top_up_seconds
        if stage_deadline is not None:
            deadline = min(deadline, stage_deadline)
        more = top_up(reg, stage, active, classes, wanted, want, plan.top_up, deadline, max_ops, ops, starved)
        short = {qn for qn in active if reg.lacking(qn)}
        _log(f"gate: stage {stage}: top-up {more} graph(s) in {time.perf_counter() - top_start:.0f} s; "
             f"{len(short)} pass(es) still short of evidence")
    return reg.verdicts


def top_up(reg: "_Registry", stage: str, active: set[str], classes: dict[str, type], wanted: Callable[[str], bool],
           want: Callable[[str], str], budget: int, deadline: float, max_ops: int, ops: list[str] | None,
           starved: set[str]) -> int:
    """Top-up rounds: the `budget` graphs are shared equally among the passes short of evidence
    that this stage can present (`generators.random.reach.presentable_on`) and that fastpass can
    act in (not `inert`: a copy claim on a pass whose code never retraces), each searched alone
    in turn (graphs aimed at it, every pass under test still checked on them) until it has
    evidence or its share is spent. Why per pass, in turn: one search over all the passes short
    drew ~one graph each in a whole-registry run (60 graphs, 80 passes), too few for any of them.
    Every other pass still gathers evidence from these graphs. Returns the graphs lowered."""
    from generators.random.reach import presentable_on

    target = check.target_for(stage).name

    def can_act(qn: str) -> bool:
        cls, lacking = classes[qn], reg.lacking(qn)
        if qn in starved or lacking == [Feature.SKIP]:  # it runs on any graph / graphs without its ops
            return True
        if lacking == [Feature.COPY] and gp.never_retraces(cls):
            return False
        return presentable_on(cls.__name__, target, [gp.op_name(o) for o in lookup_ops(cls)])

    turn = [qn for qn in sorted(active) if wanted(qn) and can_act(qn)]
    if not turn:
        return 0
    share = max(2, budget // len(turn))
    _log(f"gate: stage {stage}: top-up for {len(turn)} pass(es), up to {share} graph(s) each "
         f"({budget} in all)")
    done = 0
    aimed = _biased(classes, max_ops, ops, want)  # what each pass lacks is read as its turn comes
    for qn in turn:
        if done >= budget or time.monotonic() > deadline or _stopped():
            break
        if qn not in active or not reg.lacking(qn):
            continue
        done += reg.search(stage, active, lambda names, qn=qn: aimed([qn]), min(share, budget - done),
                           f":top-up:{classes[qn].__name__}", deadline=deadline,
                           until=lambda qn=qn: qn not in active or not reg.lacking(qn),
                           copy_only=starved.__contains__)
    return done


def aimed_targeted_ops(cls: type) -> list:
    """The pass's targeted ops a lowering stage's graphs are aimed at (passes.aimed_ops)."""
    from fastpass.annotations import lookup

    return gp.aimed_ops(cls, lookup(cls).targeted_ops)


def lookup_ops(cls: type) -> frozenset:
    """The pass's targeted ops as a set (none for a rule family: it has no op list)."""
    from fastpass.annotations import lookup

    ops = lookup(cls).targeted_ops
    if not ops or getattr(ops, "rule", None) is not None:
        return frozenset()
    return frozenset(ops)


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
            if _stopped():
                results.append(StageResult(plan.stage, {}, Ending.STOPPED))
                continue
            verdicts = search_stage(plan, {qn: classes[qn] for qn in plan.passes}, out, max_ops, shrink_seconds,
                                    ops, min_evidence)
            results.append(StageResult(plan.stage, verdicts, Ending.STOPPED if _stopped() else None))
        done: dict[str, PassVerdict] = {}
        for qn, cls in items:
            if _stopped() or (deadline is not None and time.monotonic() > deadline):
                break
            v = gate_pass(cls, None, direct_examples, stage, out, seed, how="direct", max_ops=max_ops,
                          shrink_seconds=shrink_seconds, ops=ops, min_evidence=min_evidence)
            if _stopped():  # cut short by the stop: its evidence so far, not finished
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
        if _stopped() or (deadline is not None and time.monotonic() > deadline):
            why = _missing()
            verdicts[qn].not_finished(why, _unfinished_reason(why, "its check in the quantizer's pipeline"))
            continue
        v = gate_pass(cls, None, examples, ANNOTATION_STAGE, out, seed, how="annotation", max_ops=max_ops,
                      shrink_seconds=shrink_seconds, ops=ops, min_evidence=min_evidence)
        v.stage = ANNOTATION_LABEL  # its reproducer names the stage whose quantizer ran (ANNOTATION_STAGE)
        verdicts[qn] = merge_stages([verdicts[qn], v])  # a finished check (an unfinished one fails: skipped)
        if _stopped():
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
    return Ending.STOPPED if _stopped() else Ending.NOT_STARTED


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


def classify(v: PassVerdict, cls: type, spec, outcome: check.Outcome, stage: str, out: Path, keep: list,
             exclude: list[str]) -> None:
    """Re-run the shrunk graph with the same annotated passes, skip only and copy only; a feature
    is blamed if the first divergence is still this pass."""
    v.how, v.stage = "pipeline", stage
    found = []
    for feature in list(v.evidence):
        o = check.pipeline_example(spec, cls, feature.value, stage, keep=keep)
        v.modes[feature.value] = {"diverged": o.diverged, "where": o.where, "detail": o.detail}
        if o.diverged and o.culprit == cls.__name__:
            verdict = ProofStatus.unsound(feature)
            v.reproducers[verdict.value] = str(write_reproducer(out, v, verdict, feature.value, spec, o,
                                                                "pipeline", stage, exclude, per_stage=True))
            found.append((verdict, o))
    if found:
        v.verdict = found[0][0]
        v.reason = "; ".join(f"{verdict.value} at {o.where}: {o.detail.splitlines()[0]}" for verdict, o in found)
    else:
        v.verdict = ProofStatus.ERROR
        v.reason = (f"diverges at {outcome.where} only with the other annotated passes active "
                    f"(skip+copy): {outcome.detail.splitlines()[0]}")
        v.reproducers[ProofStatus.ERROR.value] = str(write_reproducer(out, v, ProofStatus.ERROR, "both", spec,
                                                                      outcome, "pipeline", stage, exclude,
                                                                      per_stage=True))
    _log(f"gate: {v.name}: {v.verdict.value}; graph of {len(spec)} op(s); {v.reason[:200]}")
