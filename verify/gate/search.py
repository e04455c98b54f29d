"""The gate's search engine: Hypothesis drawing graphs for a check and shrinking the one that
diverges (`hypothesis_search`), and a registry run's search of one stage (`search_stage`): every
pass the stage's pipeline invokes checked at once on each graph (`_Registry`), a divergence pinned
on its pass and classified (`classify`), the top-up rounds for the passes short of evidence
(`top_up`, graphs biased to what each lacks: `_biased`).

Why apart from the drivers (verify.gate.run): how graphs are searched for and how one search
counts evidence is one job, whichever driver asks (a pass's check, a registry run in this process
or a stage worker); the drivers only decide what to search and turn the results into verdicts.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from fastpass.annotations import ProofStatus
from verify.gate import check
from verify.gate import passes as gp
from verify.gate.graphs import Aim, drawn_counts, form_link, form_route, strategy_for
from verify.gate.plan import StagePlan, stage_ops
from verify.gate.reproducer import write_reproducer
from verify.gate.verdict import DEFAULT_MIN_EVIDENCE, PassVerdict, make_verdict
from verify.report.reproducer import NO_PASS
from verify.vocabulary import Feature, FeatureSet, Route

_logger = logging.getLogger(__name__)


def _log(msg: str) -> None:
    """Search progress (graphs drawn, passes short of evidence): INFO, shown unless -q."""
    _logger.info(msg)


class CounterexampleFound(Exception):
    """Raised inside a Hypothesis search to end it at a graph that diverged (its fingerprint in
    args[0]); not a divergence point (that is verify.compare's Divergence)."""


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


def untargeted_ops(outcome: check.Outcome, cls: type, copied: int) -> frozenset[str]:
    """The ops of the pass's input graph fastpass may have copied (not targeted), when it copied
    `copied` nodes in it and the results were identical: see verdict.Evidence."""
    from fastpass.annotations import lookup

    if not copied or not outcome.identical:
        return frozenset()
    ops = outcome.input_ops or check.input_ops(outcome.observation, cls.__name__)
    targeted = {gp.op_name(o) for o in lookup(cls).targeted_ops}
    return frozenset(op for op in ops if op not in targeted)


_NOT_DRAWN = "not lowered: the time budget is spent, no pass under test lacks evidence, or the run was stopped"


# Called by a stage's search after every graph it counted and every pass it classified, with its
# verdicts so far (the very dict search_stage returns): a stage worker writes them, so that a
# search cut short (stop, timeout, crash) still hands its evidence to the gate.
Checkpoint = Callable[[dict[str, PassVerdict]], None]


def stopped() -> bool:
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
            if not active or done >= budget or (until is not None and until()) or stopped():
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
                        or stopped()):
                    return check.Outcome(False, vacuous=_NOT_DRAWN)
                try:
                    return check.pipeline_example(spec, None, FeatureSet.BOTH, stage, keep=keep,
                                                  copy_only=without_skip)
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
                    f"the graph search failed after {done} graph(s): {type(exc).__name__}: {first}", Route.BATCH,
                    stage)
                break
            done += counter["n"]
            if spec is None:
                break
            culprits = [qn for qn in self.by_name.get(outcome.culprit or "", []) if qn in active]
            if not culprits:
                _log(f"gate: divergence at {outcome.where}, not an annotated pass under test; "
                     f"reproducer kept, search stops for stage {stage}")
                v = PassVerdict("<unattributed>", "unattributed", NO_PASS, ProofStatus.ERROR,
                                f"divergence at {outcome.where}: {outcome.detail.splitlines()[0]}", Route.BATCH,
                                stage)
                with check.quiet():  # fastpass was not on for these
                    running = set(names)
                    off = sorted(qn for qn in gp.annotated_passes() if qn not in running)
                v.reproducers[ProofStatus.ERROR.value] = str(write_reproducer(
                    self.out, v, ProofStatus.ERROR, FeatureSet.BOTH, spec, outcome, Route.PIPELINE, stage, off,
                    per_stage=True))
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


def _biased(classes: dict[str, type], max_ops: int, ops: list[str] | None, want: Callable[[str], FeatureSet]):
    """A strategy over `names`: pick a pass, draw a graph biased to its targeted ops (`want(qn)`:
    BOTH, or the feature it lacks evidence for)."""
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
        v.how, v.stage = Route.BATCH, stage
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
    done = reg.search(stage, active, _biased(classes, max_ops, ops, lambda qn: FeatureSet.BOTH), plan.examples, "",
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
        def want(qn: str) -> FeatureSet:
            lacking = reg.lacking(qn)
            return FeatureSet.of(lacking) if lacking else FeatureSet.BOTH

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
           want: Callable[[str], FeatureSet], budget: int, deadline: float, max_ops: int, ops: list[str] | None,
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
        if done >= budget or time.monotonic() > deadline or stopped():
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


def classify(v: PassVerdict, cls: type, spec, outcome: check.Outcome, stage: str, out: Path, keep: list,
             exclude: list[str]) -> None:
    """Re-run the shrunk graph with the same annotated passes, skip only and copy only; a feature
    is blamed if the first divergence is still this pass."""
    v.how, v.stage = Route.PIPELINE, stage
    found = []
    for feature in list(v.evidence):
        enabled = FeatureSet.of([feature])
        o = check.pipeline_example(spec, cls, enabled, stage, keep=keep)
        v.modes[feature.value] = {"diverged": o.diverged, "where": o.where, "detail": o.detail}
        if o.diverged and o.culprit == cls.__name__:
            verdict = ProofStatus.unsound(feature)
            v.reproducers[verdict.value] = str(write_reproducer(out, v, verdict, enabled, spec, o, Route.PIPELINE,
                                                                stage, exclude, per_stage=True))
            found.append((verdict, o))
    if found:
        v.verdict = found[0][0]
        v.reason = "; ".join(f"{verdict.value} at {o.where}: {o.detail.splitlines()[0]}" for verdict, o in found)
    else:
        v.verdict = ProofStatus.ERROR
        v.reason = (f"diverges at {outcome.where} only with the other annotated passes active "
                    f"(skip+copy): {outcome.detail.splitlines()[0]}")
        v.reproducers[ProofStatus.ERROR.value] = str(write_reproducer(out, v, ProofStatus.ERROR, FeatureSet.BOTH,
                                                                      spec, outcome, Route.PIPELINE, stage, exclude,
                                                                      per_stage=True))
    _log(f"gate: {v.name}: {v.verdict.value}; graph of {len(spec)} op(s); {v.reason[:200]}")
