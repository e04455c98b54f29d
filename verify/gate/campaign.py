"""The gate's campaign: which passes a `verify gate` run checks and how its checks are spread over
worker processes (verify.gate.workers), below the command (verify.commands.gate), which parses and
checks the options, and above the drivers and the search (verify.gate.run, verify.gate.search,
verify.gate.check).

A registry run gates every annotated pass (or those whose annotation changed since a revision):
each stage's search, which checks every pass the stage's pipeline invokes at once, and each direct
check runs in a worker, `-j N` at a time in one pool, stages first. A `--pass` run checks each
named pass in a worker of its own. An unfinished check is never green: its pass is an `error`
that says why (in_workers).
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

from verify.vocabulary import Ending, Route
from verify.lowering.heap import freeze_long_lived_heap

_log = logging.getLogger(__name__)

# Defaults measured on 2 shared cores (see the gate's report): a graph costs ~2-4 s per stage
# (stock + fastpass lowering; the Ethos-U stages' Vela runs cost about as much as tosa-int on
# these small graphs); one --pass with 30 graphs per feature takes a few minutes.
DEFAULT_REGISTRY_EXAMPLES = 60  # graphs per stage, each checks every annotated pass at once
DEFAULT_TOP_UP_SECONDS = 180.0  # per stage, for the passes still short of evidence
DEFAULT_STAGES = ("edge-fp", "quantized", "ethos-u55", "ethos-u85")
DEFAULT_PASS_EXAMPLES = 30  # graphs per feature (skip, copy) for each --pass
DEFAULT_OUT = Path("verify-out") / "gate"  # artifacts: reproducers, worker logs, the self-test's mutants


def gate_passes(args, explicit, ops: list[str] | None, out: Path, deadline: float | None):
    """Gate the explicit passes, or the registry (all, or what changed): verdicts, or None after a
    usage error. Each pass's own check, and each stage search of a registry run, runs in a
    worker (verify.gate.workers, `args.jobs` at a time); this process only lowers each stage's
    pipeline once to learn which passes it invokes, then freezes its long-lived heap (see
    verify.lowering.heap; the gate command releases it)."""
    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import run
    from verify.gate.workers import PassJob, SearchSettings, registry_runner

    settings = SearchSettings(args.examples, out, args.seed, args.max_ops, args.shrink_seconds,
                              tuple(ops) if ops is not None else None, args.min_evidence)
    if explicit:
        stage = args.stage[0] if args.stage else "edge-fp"
        print(f"verify gate: {len(explicit)} pass(es) on {stage}, {args.examples} graph(s) per mode, "
              f"{args.jobs} worker(s) at a time (--pass-timeout {args.pass_timeout:.0f} s), "
              f"artifacts in {out}", file=sys.stderr, flush=True)
        jobs = [PassJob(cls, ref, stage, Route.DIRECT if args.direct else Route.UNDECIDED) for ref, cls in explicit]
        return in_workers(jobs, settings, args, deadline, "")
    with check.quiet():
        classes = gp.annotated_passes()
    if args.since_gated:
        try:
            args.changed_since = gp.gated_at()
        except gp.PassRefError as exc:
            print(f"verify gate: {exc}", file=sys.stderr)
            return None
    if args.changed_since:
        try:
            names, everything = gp.changed_since(args.changed_since)
        except gp.PassRefError as exc:
            if not args.since_gated:
                print(f"verify gate: {exc}", file=sys.stderr)
                return None
            # A shallow clone lacks the recorded revision: proving everything is the safe answer.
            print(f"verify gate: {exc}; gating the whole registry instead", file=sys.stderr)
            names, everything = set(), True
        if not everything:
            classes = {qn: c for qn, c in classes.items() if qn in names}
        print(f"verify gate: {'every annotation' if everything else f'{len(classes)} annotation(s)'} "
              f"changed since {args.changed_since}", file=sys.stderr)
    stages = list(dict.fromkeys(args.stage)) if args.stage else list(DEFAULT_STAGES)
    print(f"verify gate: {len(classes)} annotated pass(es), stages {', '.join(stages)}, "
          f"{args.examples} graph(s) per stage, sound needs {args.min_evidence} example(s) of evidence, "
          f"stage searches and direct checks {args.jobs} worker(s) at a time, artifacts in {out}",
          file=sys.stderr, flush=True)
    if not classes:
        return []
    warm_up(stages)
    direct_settings = SearchSettings(args.direct_examples, out, args.seed, args.max_ops, args.shrink_seconds,
                                     settings.ops, args.min_evidence)

    return run.gate_registry(classes, args.examples, stages, out, args.seed, args.max_ops,
                             args.shrink_seconds, ops=ops, min_evidence=args.min_evidence,
                             top_up=args.top_up, top_up_seconds=args.top_up_seconds,
                             direct_examples=args.direct_examples, max_seconds=args.max_seconds,
                             parallel=args.jobs,
                             runner=registry_runner(classes, direct_settings, parallel=args.jobs,
                                                    pass_timeout=args.pass_timeout,
                                                    stage_timeout=args.stage_timeout))


def in_workers(jobs, settings, args, deadline: float | None, what: str):
    """The verdicts of `jobs` checked in workers, in the order of `jobs`: each finished check's
    verdict; every other pass an `error` saying why its check did not finish (not started by
    `deadline`, or stopped: then with the evidence its worker had written so far): an incomplete
    check is never green (PassVerdict.not_finished)."""
    from verify.gate import passes as gp
    from verify.gate.verdict import make_verdict
    from verify.gate.workers import gate_in_workers
    from verify.jobs.launcher import stop_signal

    if jobs:
        _log.info("gate: %d %spass check(s), %d worker(s) at a time", len(jobs), what, args.jobs)
    verdicts = []
    for result in gate_in_workers(jobs, settings, parallel=args.jobs, pass_timeout=args.pass_timeout,
                                  deadline=deadline):
        if result.ending is Ending.FINISHED:
            verdicts.append(result.verdict)
            continue
        v = result.verdict  # stopped: the verdict so far its worker had written, if any
        if v is None:
            gp.ensure_annotation(result.job.cls)  # a user pass's class-attribute annotation
            v = make_verdict(result.job.cls, result.job.ref)
            v.stage, v.how = result.job.stage, result.job.how
        if result.ending is Ending.NOT_STARTED:
            v.not_finished(result.ending,
                           "not started: the --max-seconds budget was spent before its check started")
        else:
            signum = stop_signal()
            by = signal.Signals(signum).name if signum is not None else "a stop"
            v.not_finished(result.ending, f"not run: stopped by {by} before its check finished")
        verdicts.append(v)
    return verdicts


def warm_up(stages) -> None:
    """One lowering per stage (cached by the gate anyway) imports everything; then freeze."""
    from verify.gate import check

    for stage in stages:
        check.pipeline_pass_names(check.target_for(stage))
    freeze_long_lived_heap()
