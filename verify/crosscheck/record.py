"""What one crosschecked call leaves behind: typed records, so the plugin, the JSON report and
the tests read fields, never strings parsed back."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.compare import CheckResult, Divergence
from verify.compare.divergence import OrderRecheck
from verify.vocabulary import Verdict


class EntryPoint(enum.Enum):
    """The calls crosscheck intercepts (see verify.crosscheck.intercept for where and why)."""

    TO_EDGE_TRANSFORM_AND_LOWER = "to_edge_transform_and_lower"
    TO_EDGE = "to_edge"
    TO_BACKEND = "EdgeProgramManager.to_backend"
    PASS_CALL = "pass call"  # _transform / EdgeProgramManager.transform outside any lowering


@dataclass(frozen=True)
class SavedReproducer:
    """Where a crosschecked call's reproducer (verify.report.reproducer's format) was saved and the
    command that replays it -- or why it could not be saved or cannot replay the call by itself."""

    path: Path | None  # None: it could not be saved (see limitation)
    command: str
    # Why the file cannot replay the call by itself (e.g. an argument that does not pickle), or None.
    limitation: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path else None, "command": self.command, "limitation": self.limitation}


@dataclass(frozen=True)
class FastpassWork:
    """What fastpass actually did in its run: what an "identical" verdict rests on."""

    passes_run: int = 0
    passes_skipped: int = 0
    nodes_copied: int = 0
    nodes_dispatched: int = 0

    @classmethod
    def from_stats(cls, stats: dict[str, Any] | None) -> "FastpassWork":
        stats = stats or {}
        return cls(int(stats.get("passes_run", 0)), int(stats.get("passes_skipped", 0)),
                   int(stats.get("nodes_copied", 0)), int(stats.get("nodes_dispatched", 0)))


@dataclass(frozen=True)
class FreshRecheck:
    """What replaying a divergent call's reproducer in a fresh process found (verify.crosscheck.fresh)."""

    verdict: Verdict | None  # None: the replay could not run (see error)
    first_divergent_pass: str | None = None
    error: str | None = None

    @property
    def reproduced(self) -> bool | None:
        """True: divergent in a fresh process too; False: not there (history-dependent); None: unknown."""
        if self.verdict is None or self.verdict is Verdict.ERROR:
            return None
        return self.verdict is Verdict.DIVERGENT

    def describe(self) -> str:
        if self.reproduced is None:
            return f"fresh-process recheck could not run: {self.error or 'replay error'}"
        if self.reproduced:
            return f"reproduced in a fresh process (at {self.first_divergent_pass or 'not located'})"
        return (f"not reproduced in a fresh process ({self.verdict.value} there): the divergence depends on "
                f"what ran before in this process")

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value if self.verdict else None, "reproduced": self.reproduced,
                "first_divergent_pass": self.first_divergent_pass, "error": self.error}


@dataclass
class CrosscheckRecord:
    """One intercepted top-level call, lowered stock and with fastpass, compared."""

    entry_point: EntryPoint
    context: str  # who made the call (the pytest plugin sets the test id), "" if unknown
    verdict: Verdict
    stock_seconds: float = 0.0
    fastpass_seconds: float = 0.0
    stock_error: str | None = None  # first line, when the stock call raised (re-raised to the caller)
    passes_observed: int = 0  # pass invocations the stock run went through
    delegates: int = 0
    checks_run: tuple[str, ...] = ()
    failed_checks: dict[str, CheckResult] = field(default_factory=dict)
    first_divergence: Divergence | None = None
    reproducer: SavedReproducer | None = None
    fastpass_work: FastpassWork = field(default_factory=FastpassWork)
    unchecked_reason: str | None = None
    order_recheck: OrderRecheck | None = None  # made only when stock and fastpass differed
    fresh_recheck: FreshRecheck | None = None  # made only for a divergence (verify.crosscheck.fresh)
    # Annotation -> proof-ledger status, for every annotation the fastpass run skipped or copied by
    # (fastpass.stats()["relied_on"]): with fastpass_work, what an "identical" rests on.
    relied_on: dict[str, str] = field(default_factory=dict)

    @property
    def divergent(self) -> bool:
        return self.verdict is Verdict.DIVERGENT

    @property
    def stock_nondeterministic(self) -> bool:
        """Stock under another node-set order gives exactly fastpass's result (order_recheck):
        stock's own nondeterminism, not comparable, not counted identical."""
        return self.verdict is Verdict.NONDETERMINISTIC

    def describe(self) -> str:
        """One line for a terminal or an exception message."""
        where = f" at {self.first_divergence.label}" if self.first_divergence else ""
        if self.failed_checks:
            checks = "differ: " + ", ".join(self.failed_checks)
        else:
            checks = "checks: " + (", ".join(self.checks_run) or "none")
        head = f"{self.entry_point.value}{where}: {self.verdict.value} ({checks})"
        if self.stock_nondeterministic and self.order_recheck is not None:
            head += f"; {self.order_recheck.describe()} (executorch)"
        if self.fresh_recheck is not None:
            head += f"; {self.fresh_recheck.describe()}"
        if self.reproducer is not None:
            head += f"; replay: {self.reproducer.command}"
        return head

    def to_json(self) -> dict[str, Any]:
        return {
            "entry_point": self.entry_point.value,
            "context": self.context,
            "verdict": self.verdict.value,
            "stock_seconds": self.stock_seconds,
            "fastpass_seconds": self.fastpass_seconds,
            "stock_error": self.stock_error,
            "passes_observed": self.passes_observed,
            "delegates": self.delegates,
            "checks_run": list(self.checks_run),
            "failed_checks": {name: r.to_json() for name, r in self.failed_checks.items()},
            "first_divergence": self.first_divergence.to_json() if self.first_divergence else None,
            "reproducer": self.reproducer.to_json() if self.reproducer else None,
            "fastpass_work": vars(self.fastpass_work),
            "unchecked_reason": self.unchecked_reason,
            "order_recheck": self.order_recheck.to_json() if self.order_recheck else None,
            "fresh_recheck": self.fresh_recheck.to_json() if self.fresh_recheck else None,
            "relied_on": dict(self.relied_on),
        }


class CrosscheckDivergence(AssertionError):
    """Raised by `crosscheck(strict=True)` at the call whose fastpass lowering diverged."""

    def __init__(self, record: CrosscheckRecord) -> None:
        super().__init__("fastpass diverged from stock: " + record.describe())
        self.record = record
