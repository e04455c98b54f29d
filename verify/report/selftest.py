"""The gate self-test's report: each mutant's verdict, the score against its threshold, the table
on the terminal and the JSON (`verify selftest --json`).

Why here: the report package writes every command's table and JSON, and the self-test's JSON is
also what `--resume` reads back (`MutantResult.from_dict`). Deriving, sampling and gating the
mutants stays in the campaign (verify.gate.selftest), which builds these values.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from fastpass.annotations import ProofStatus

DEFAULT_KILL_THRESHOLD = 0.95  # of the decided mutants (killed or called sound)


class Fault(str, Enum):
    """How a mutant's annotation is wrong (verify.gate.selftest's docstring says each)."""

    DROP_TARGETED_OP = "drop-targeted-op"
    CLAIM_COPY = "claim-copy"
    WIDEN_SKIP = "widen-skip"

    def __str__(self) -> str:
        return self.value


class MutantVerdict(str, Enum):
    KILLED = "killed"  # the gate fails CI on it (unsound, or error)
    SURVIVED = "survived"  # the gate calls it sound: fastpass would act on the wrong claim
    # the gate neither fails it nor calls it sound (unexercised, unreachable, inert, untested):
    # fastpass's default trust (proven) never acts on it; outside the score, listed with the run
    UNPROVEN = "unproven"
    EQUIVALENT = "equivalent"  # the wrong claim cannot change any lowering (argument recorded)
    # no graph the gate draws can hold the dropped op (`presentable`): a gap of the generators'
    # vocabulary, listed with the run, not a miss of the search; outside the score, not gated
    UNPRESENTABLE = "unpresentable"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of_gate(cls, status: ProofStatus) -> MutantVerdict:
        """A gated mutant's verdict from the gate's: killed when CI would fail, survived only
        when the gate calls the wrong claim sound (the one status fastpass trusts by default)."""
        if status.fails:
            return cls.KILLED
        return cls.SURVIVED if status is ProofStatus.SOUND else cls.UNPROVEN


@dataclass
class MutantResult:
    index: int  # 1-based position in the seeded sample (shards merge by it)
    entry: str
    fault: Fault
    detail: str
    verdict: MutantVerdict
    gate_verdict: str = ""
    reproducer: str | None = None
    argument: str | None = None  # why an equivalent mutant cannot change a lowering
    reason: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["fault"], out["verdict"] = self.fault.value, self.verdict.value
        return out

    @classmethod
    def from_dict(cls, data: dict) -> MutantResult:
        """One mutant of a self-test JSON (a shard's part, or the run `--resume` continues). A
        JSON written before `unproven` existed called such a mutant `survived`: read by the same
        rule as a new one (`MutantVerdict.of_gate`)."""
        verdict = MutantVerdict(data["verdict"])
        if verdict is MutantVerdict.SURVIVED:
            verdict = MutantVerdict.of_gate(ProofStatus(data["gate_verdict"]))
        return cls(**dict(data, fault=Fault(data["fault"]), verdict=verdict))


@dataclass
class SelfTestReport:
    results: list[MutantResult] = field(default_factory=list)
    threshold: float = DEFAULT_KILL_THRESHOLD

    def count(self, verdict: MutantVerdict) -> int:
        return sum(1 for r in self.results if r.verdict is verdict)

    @property
    def score(self) -> float | None:
        """Killed over the decided mutants, killed or called sound (None when none is)."""
        decided = self.count(MutantVerdict.KILLED) + self.count(MutantVerdict.SURVIVED)
        return self.count(MutantVerdict.KILLED) / decided if decided else None

    @property
    def passed(self) -> bool:
        return self.score is None or self.score >= self.threshold

    def to_dict(self) -> dict:
        return {"killed": self.count(MutantVerdict.KILLED), "survived": self.count(MutantVerdict.SURVIVED),
                "unproven": self.count(MutantVerdict.UNPROVEN), "equivalent": self.count(MutantVerdict.EQUIVALENT),
                "unpresentable": self.count(MutantVerdict.UNPRESENTABLE), "score": self.score,
                "threshold": self.threshold, "passed": self.passed,
                "mutants": [r.to_dict() for r in self.results]}


def table(report: SelfTestReport) -> str:
    rows = [("entry", "fault", "change", "verdict", "gate", "reproducer / argument")]
    for r in report.results:
        rows.append((r.entry.rsplit(".", 1)[-1], r.fault.value, r.detail, r.verdict.value, r.gate_verdict,
                     r.reproducer or r.argument or r.reason[:60]))
    widths = [max(len(str(row[i])) for row in rows) for i in range(5)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row[:5], widths)) + "  " + str(row[5]) for row in rows]
    score = "-" if report.score is None else f"{report.score:.0%}"
    lines.append(f"self-test: killed {report.count(MutantVerdict.KILLED)}, survived "
                 f"{report.count(MutantVerdict.SURVIVED)}, unproven {report.count(MutantVerdict.UNPROVEN)}, "
                 f"equivalent {report.count(MutantVerdict.EQUIVALENT)}, "
                 f"unpresentable {report.count(MutantVerdict.UNPRESENTABLE)}; "
                 f"score {score} (threshold {report.threshold:.0%}): {'pass' if report.passed else 'FAIL'}")
    return "\n".join(lines)


def write_json(path: Path, report: SelfTestReport, complete: bool, settings: dict[str, Any]) -> None:
    """The run's JSON: the counts, the score, every mutant, whether the sample was gated whole,
    and the settings `--resume` checks."""
    from verify.report import atomic

    atomic.write_text(path, json.dumps(dict(report.to_dict(), complete=complete, settings=settings), indent=2) + "\n")
