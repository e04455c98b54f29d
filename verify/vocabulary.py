"""The harness's verdict vocabulary, at the bottom of verify/: `Verdict` for a comparison of two
lowerings (a `run` case, a crosschecked call), `NullOutcome` for the cross-seed null check,
`Feature` for the fastpass feature an annotation claims sound, `AnnotationFit` for an
annotation `verify infer` held against what the pass was seen to rewrite, and `Ending` for how a
job of the pool, or a gate check it runs, ended.
What the gate finds for an annotated pass is `fastpass.annotations.ProofStatus`, the standing the
proof ledger records: one enum for both, below verify (fastpass cannot import verify).

Why a module of its own at the bottom of verify/: the comparison (`compare_lowerings`) gives a
`Verdict` and the report layer above it prints every one of them, so the vocabulary sits below
both (tests/test_layering.py: compare imports nothing from report, and this module imports
nothing of verify). Not inside compare/: importing any module there runs the package's face,
which imports the lowering stack (torch), and a command that refuses a bad argument, or reads a
report, must not pay for that.

Their `.value` is what JSON and JUnit carry; code compares members (`verdict is
Verdict.DIVERGENT`, `verdict.is_unsound`), never strings."""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    """What comparing stock against fastpass found (`run`: the pinned comparison at one hash seed;
    crosscheck: one intercepted call)."""

    IDENTICAL = "identical"
    DIVERGENT = "divergent"
    ERROR = "error"  # both lowerings failed the same way, or the harness could not tell (run)
    # Stock differed from itself on a recheck (run), or gives fastpass's result under another
    # node-set iteration order (run, crosscheck: verify.compare.divergence.OrderRecheck)
    NONDETERMINISTIC = "nondeterministic"
    # Not compared, and why (crosscheck: e.g. the call's input could not be deep-copied): counted,
    # never taken for "identical".
    UNCHECKED = "unchecked"

    def __str__(self) -> str:
        return self.value

    @property
    def is_failure(self) -> bool:
        """A JUnit <failure>: the lowerings differ (as opposed to an <error>: the harness could not tell)."""
        return self in (Verdict.DIVERGENT, Verdict.NONDETERMINISTIC)


class NullOutcome(str, Enum):
    """What the cross-seed null check (stock vs stock under another hash seed) found."""

    IDENTICAL = "identical"  # stock gives the same result under both seeds
    DIFFERS = "differs"  # stock itself depends on the hash seed (a finding about executorch)
    FAILED = "failed"  # the null-check worker did not produce a result: a harness error, counted
    NOT_RUN = "not-run"  # disabled (--null-seed -1), or the pinned run failed first

    def __str__(self) -> str:
        return self.value


class Feature(str, Enum):
    """The fastpass feature an annotation claims sound (the names `fastpass.enabled` takes)."""

    SKIP = "skip"
    COPY = "copy"

    def __str__(self) -> str:
        return self.value


class AnnotationFit(str, Enum):
    """How a pass's declared targeted_ops compare with the ops `verify infer` saw it rewrite."""

    EQUAL = "equal"
    LARGER_THAN_NEEDED = "larger than needed"  # declared ops seen in the corpus and never rewritten: speed lost
    TOO_SMALL = "too small (unsound)"  # ops rewritten but not declared: copying their nodes is unsound
    NO_ANNOTATION = "no annotation"

    def __str__(self) -> str:
        return self.value

    @property
    def fails(self) -> bool:
        """Does `verify infer` exit 1 for it? (Larger than needed costs speed, not soundness.)"""
        return self not in (AnnotationFit.EQUAL, AnnotationFit.LARGER_THAN_NEEDED)


class Ending(str, Enum):
    """How a job, or the check it runs, ended: one vocabulary for the worker launcher (how the wait
    on a worker process ended, verify.jobs.launcher), a worker on a Ray node (verify.cluster.node,
    sent back to the driver), the pool (a task it did not start: STOPPED or NOT_STARTED in the
    task's place, verify.jobs.pool), the gate's workers (how each pass check or stage search
    ended, verify.gate.workers) and a gate verdict (why its check did not finish:
    `PassVerdict.unfinished`, whose value the gate's JSON carries), so that none is translated
    into another."""

    FINISHED = "finished"  # ran to its end: a worker that exited, a result (maybe an `error`, for a crash or timeout)
    STOPPED = "stopped"  # asked to stop before it finished (SIGINT/SIGTERM, a cancelled job), or before its turn
    NOT_STARTED = "not-started"  # the run's deadline (the gate's --max-seconds budget) had passed before its turn
    CUT_SHORT = "cut-short"  # ended without a result: a stage search whose worker crashed or timed out
    TIMED_OUT = "timed out"  # a worker killed at its timeout
    MEMORY_EXCEEDED = "memory exceeded"  # a worker killed when its process group passed the memory limit

    def __str__(self) -> str:
        return self.value
