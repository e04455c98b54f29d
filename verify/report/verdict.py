"""The outcomes a case can have, as typed values; their `.value` is what JSON and JUnit carry."""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    """What the pinned comparison (stock vs fastpass, same hash seed) found."""

    IDENTICAL = "identical"
    DIVERGENT = "divergent"
    ERROR = "error"
    NONDETERMINISTIC = "nondeterministic"

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
