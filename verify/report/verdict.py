"""Every verdict the harness gives, as typed values, in one module: `Verdict` for a comparison of
two lowerings (a `run` case, a crosschecked call), `NullOutcome` for the cross-seed null check,
`AnnotationFit` for an annotation `verify infer` held against what the pass was seen to rewrite.
What the gate finds for an annotated pass is `fastpass.annotations.ProofStatus`, the standing the
proof ledger records: one enum for both, at the bottom (fastpass cannot import verify). Their
`.value` is what JSON and JUnit carry; code compares members (`verdict is Verdict.DIVERGENT`,
`verdict.is_unsound`), never strings."""

from __future__ import annotations

from enum import Enum

from fastpass.annotations import ProofStatus


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


# The gate's old name for ProofStatus, kept only while verify/gate/run.py and
# tests/test_gate_reach.py (open in another change, issue 45) still import it: not a second name
# to use; remove it once they import ProofStatus from fastpass.annotations.
GateVerdict = ProofStatus


def relied_on_summary(relied_on: dict[str, str] | None) -> str:
    """`12 sound` / `3: 2 sound, 1 unproven`: how many annotations a fastpass lowering skipped or
    copied by (`fastpass.stats()["relied_on"]`: annotation -> proof-ledger status), by status;
    `-` when there is nothing to say (no fastpass lowering)."""
    if relied_on is None:
        return "-"
    if not relied_on:
        return "none"
    counts: dict[str, int] = {}
    for status in relied_on.values():
        counts[status] = counts.get(status, 0) + 1
    by_status = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda item: -item[1]))
    return by_status if len(counts) == 1 else f"{len(relied_on)}: {by_status}"
