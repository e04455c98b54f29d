"""One `run` case (`Case`: a model on a target) and its result (`CaseReport`), as the runner makes
it and every report reads it: the table, JSON, JUnit and the journal (`to_json` / `from_json`).
They live in the report package because every writer below the runner needs them, and the report
package must not import the runner or the model loading above it (layers point downward:
tests/test_layering.py)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from verify.compare.checks import CheckResult
from verify.compare.divergence import Divergence, OrderRecheck
from verify.report.names import safe_name
from verify.vocabulary import NullOutcome, Verdict


@dataclass(frozen=True)
class Case:
    model: str
    target: str

    @property
    def slug(self) -> str:
        """The case's artifact folder name: readable, and distinct for distinct cases.

        A built-in name is unique as it is; a `file:factory` / `module:factory` / graphspec
        reference adds a short hash of the whole reference, since two files may both have a
        `make` (they once shared one folder, and the later case deleted the earlier's logs)."""
        if ":" not in self.model:
            return safe_name(f"{self.model}-{self.target}")
        base = self.model.split(":")[-1]
        base = Path(base).stem if self.model.startswith("graphspec:") else base
        digest = hashlib.blake2b(self.model.encode(), digest_size=3).hexdigest()
        return safe_name(f"{base}-{self.target}-{digest}")


@dataclass
class CaseReport:
    model: str
    target: str
    verdict: Verdict
    first_divergence: Divergence | None = None
    checks: dict[str, CheckResult] = field(default_factory=dict)
    error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    null_outcome: NullOutcome = NullOutcome.NOT_RUN
    null_check: dict | None = None  # seeds and what differs (DIFFERS), or the error (FAILED)
    factory: dict | None = None  # {"deterministic": bool, "differs_in": [...]} from two builds
    fastpass_stats: dict | None = None
    artifacts: str | None = None
    wall_seconds: float = 0.0
    order_recheck: OrderRecheck | None = None  # only for a case whose lowerings differed

    @property
    def relied_on(self) -> dict[str, str] | None:
        """Annotation -> proof-ledger status, for every annotation the fastpass lowering skipped or
        copied by (fastpass.stats()["relied_on"]); None without a fastpass lowering."""
        if self.fastpass_stats is None:
            return None
        return dict(self.fastpass_stats.get("relied_on", {}))

    @property
    def passed(self) -> bool:
        """Counts toward exit 0: identical, and the null check (if asked for) ran."""
        return self.verdict is Verdict.IDENTICAL and self.null_outcome is not NullOutcome.FAILED

    def to_json(self) -> dict:
        return {
            "model": self.model, "target": self.target, "verdict": self.verdict.value,
            # the label alone, as before the typed value; `first_divergence` has its fields
            "first_divergent_pass": self.first_divergence.label if self.first_divergence else None,
            "first_divergence": self.first_divergence.to_json() if self.first_divergence else None,
            "checks": {name: r.passed for name, r in self.checks.items()},
            "check_details": {name: r.to_json() for name, r in self.checks.items() if not r.passed},
            "error": self.error, "seconds": self.seconds, "wall_seconds": self.wall_seconds,
            "null_outcome": self.null_outcome.value, "null_check": self.null_check,
            "factory": self.factory, "relied_on": self.relied_on, "fastpass_stats": self.fastpass_stats,
            "artifacts": self.artifacts,
            "order_recheck": self.order_recheck.to_json() if self.order_recheck else None,
        }

    @classmethod
    def from_json(cls, data: dict) -> CaseReport:
        """The inverse of to_json (a journal line back to a report)."""
        details = data.get("check_details") or {}
        checks = {name: CheckResult.from_json(name, passed, details.get(name, {}))
                  for name, passed in (data.get("checks") or {}).items()}
        return cls(model=data["model"], target=data["target"], verdict=Verdict(data["verdict"]),
                   first_divergence=Divergence.from_json(data.get("first_divergence")),
                   checks=checks,
                   error=data.get("error"), seconds=dict(data.get("seconds") or {}),
                   null_outcome=NullOutcome(data.get("null_outcome", NullOutcome.NOT_RUN.value)),
                   null_check=data.get("null_check"), factory=data.get("factory"),
                   fastpass_stats=data.get("fastpass_stats"), artifacts=data.get("artifacts"),
                   wall_seconds=data.get("wall_seconds", 0.0),
                   order_recheck=OrderRecheck.from_json(data.get("order_recheck")))
