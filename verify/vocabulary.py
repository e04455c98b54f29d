"""The harness's verdict vocabulary, at the bottom of verify/: `Verdict` for a comparison of two
lowerings (a `run` case, a crosschecked call), `NullOutcome` for the cross-seed null check,
`Feature` for the fastpass feature an annotation claims sound, `FeatureSet` for the features a
gate check turns on, `Route` for how the gate ran a pass, `AnnotationFit` for an
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
from typing import Iterable


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


class FeatureSet(str, Enum):
    """The fastpass features a gate check turns on in its fast lowering: one feature (a pass's
    check, a search per claimed feature) or both (a registry stage's search, which gathers skip
    and copy evidence from the same graphs; the replay of its reproducer). `.features` is what
    the lowering is given (`.names`: `lower(..., features=...)`) and a reproducer records; `of`
reads it back.

    Why not members of `Feature`: a `Feature` is what an annotation claims sound and what
    evidence is counted per (`Claim.features`, `PassVerdict.evidence`, `ProofStatus.unsound`); a
    "both" member would be a claim of nothing, with no evidence or verdict of its own, and every
    loop over the features would have to leave it out. Why an enum, not a tuple of `Feature`s:
    only these three sets are ever checked, and the gate names them "skip", "copy" and "both" in
    its log lines, its reproducers' notes and its Hypothesis database keys. Not `Mode`: that is
    lowering's stock or fastpass (verify.lowering.mode), of which this refines the fastpass side."""

    SKIP = "skip"
    COPY = "copy"
    BOTH = "both"

    def __str__(self) -> str:
        return self.value

    @property
    def features(self) -> tuple[Feature, ...]:
        """The features turned on, skip before copy."""
        return _FEATURES_OF[self]

    @property
    def names(self) -> tuple[str, ...]:
        """The features' names, as fastpass takes them (`fastpass.enabled`, `lower(..., features=)`)
        and a reproducer's manifest records them."""
        return tuple(f.value for f in _FEATURES_OF[self])

    def covers(self, feature: Feature) -> bool:
        """Does the check turn `feature` on (and look for the graphs it needs as evidence)?"""
        return feature in _FEATURES_OF[self]

    @classmethod
    def of(cls, features: Iterable[Feature]) -> FeatureSet:
        """The set of exactly these features (one, or both); ValueError for none."""
        chosen = set(features)
        for member, turned_on in _FEATURES_OF.items():
            if set(turned_on) == chosen:
                return member
        raise ValueError(f"no gate check turns on exactly {sorted(f.value for f in chosen)}")


_FEATURES_OF = {FeatureSet.SKIP: (Feature.SKIP,), FeatureSet.COPY: (Feature.COPY,),
                FeatureSet.BOTH: (Feature.SKIP, Feature.COPY)}


class Route(str, Enum):
    """How the gate ran a pass for its check: its `how` (`PassVerdict.how`, `PassJob.how`, a gate
    reproducer's `settings["how"]`), whose value the gate's JSON, JUnit and reproducers carry.
    Here, not in verify/gate/: the report layer (verify.report.gate: the table, the JUnit
    properties) and the cluster's measurement of a gate run (verify.cluster.measure, reading the
    gate's JSON) read it as well, and neither may import the gate."""

    PIPELINE = "pipeline"  # inside the stage's lowering pipeline, which invokes it
    DIRECT = "direct"  # alone, on the edge graph (no pipeline of the stage invokes it, or --direct)
    BATCH = "batch"  # a registry stage's search, for every pass its pipeline invokes at once
    ANNOTATION = "annotation"  # inside the quantizer's pipeline, on its ATen graph (no lowering)
    # not decided: a job leaves it to its worker (`verify.gate.reproducer.how_to_run`), or the
    # check ended before it was decided
    UNDECIDED = ""

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
