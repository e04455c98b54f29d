"""The gate's reports: its table, its summary line of unproven passes, its JSON and its JUnit.

Built from the gate's verdicts (verify.gate.verdict.PassVerdict values, read through `PassRow`:
the report package imports nothing above it); written with the harness's one JSON writer
(verify.report.files.write_document) and its one JUnit writer (verify.report.junit).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from verify.report import junit
from verify.report.document import write_document
from verify.report.junit import CaseEnd, JunitCase, JunitSuite
from fastpass.annotations import ProofStatus
from verify.vocabulary import Feature, Route


class PassRow(Protocol):
    """What a report reads of one pass's verdict (verify.gate.verdict.PassVerdict)."""

    qualname: str
    name: str
    verdict: ProofStatus
    reason: str
    how: Route
    stage: str
    examples: int
    invocations: int
    skipped_calls: int
    copied_nodes: int
    seconds: float
    evidence: Mapping[Feature, Any]
    reproducers: Mapping[str, str]

    @property
    def ok(self) -> bool: ...

    @property
    def examples_with_evidence(self) -> int: ...

    def to_json(self) -> dict[str, Any]: ...


def count(verdicts: Sequence[PassRow]) -> dict[ProofStatus, int]:
    """Passes per verdict, every verdict the gate gives listed (0 included; not the ledger's own
    readings, stale and unproven), in ProofStatus's order."""
    found = Counter(v.verdict for v in verdicts)
    return {verdict: found[verdict] for verdict in ProofStatus if not verdict.ledger_only}


def _evidence_cell(v: PassRow, min_evidence: int) -> str:
    """`skip 5/5 (30/30) copy 2/5 (21/30)`: examples with evidence per claimed feature, of the K
    needed, then its distinct graphs of its examples (only distinct graphs count as evidence:
    verify.gate.evidence)."""
    parts = [f"{f.value} {e.examples_with_action}/{min_evidence} ({getattr(e, 'distinct', e.examples)}/{e.examples})"
             for f in (Feature.SKIP, Feature.COPY) if (e := v.evidence.get(f)) is not None]
    return " ".join(parts) or "-"


def display_names(verdicts: Sequence[PassRow]) -> dict[str, str]:
    """qualname -> the name a row shows: the class name, qualified by its package where two
    checked classes share it (`arm.CanonicalizeViewCopyPermutePass`, the Arm pass, and
    `transforms.CanonicalizeViewCopyPermutePass`, the helper it subclasses)."""
    shared = Counter(v.name for v in verdicts)
    out = {}
    for v in verdicts:
        if shared[v.name] < 2:
            out[v.qualname] = v.name
            continue
        parts = v.qualname.split(".")
        package = parts[2] if parts[:2] == ["executorch", "backends"] and len(parts) > 4 else ".".join(parts[:-1])
        out[v.qualname] = f"{package}.{v.name}"
    return out


_ORDER = {ProofStatus.UNSOUND_SKIP: 0, ProofStatus.UNSOUND_COPY: 0, ProofStatus.ERROR: 1,
          ProofStatus.UNEXERCISED: 2, ProofStatus.UNREACHABLE: 3, ProofStatus.INERT: 3, ProofStatus.UNTESTED: 3,
          ProofStatus.SOUND: 4}


def table(verdicts: Sequence[PassRow], min_evidence: int) -> str:
    """One row per pass: what stock did (invoked), what fastpass did (skipped calls, copied
    nodes), the examples that count as evidence per feature, the verdict and why."""
    if not verdicts:
        return "no pass checked"
    shown = display_names(verdicts)
    width = max(len(shown[v.qualname]) for v in verdicts)
    ev_width = max(len(_evidence_cell(v, min_evidence)) for v in verdicts)
    lines = [f"{'pass':<{width}}  {'verdict':<12} {'how':<8} {'graphs':>6} {'invoked':>7} {'skipped':>7} "
             f"{'copied':>7}  {'evidence':<{ev_width}}  reason / reproducer"]
    for v in sorted(verdicts, key=lambda v: (_ORDER[v.verdict], v.name)):
        extra = ", ".join(v.reproducers.values()) or v.reason[:160]
        lines.append(f"{shown[v.qualname]:<{width}}  {v.verdict.value:<12} {v.how.value:<8} {v.examples:>6} "
                     f"{v.invocations:>7} {v.skipped_calls:>7} {v.copied_nodes:>7}  "
                     f"{_evidence_cell(v, min_evidence):<{ev_width}}  {extra}")
    lines.append("summary: " + ", ".join(f"{k.value} {n}" for k, n in count(verdicts).items()))
    return "\n".join(lines)


_UNPROVEN_WHY = {ProofStatus.UNEXERCISED: "no divergence, too little evidence",
                 ProofStatus.INERT: "fastpass cannot act in it",
                 ProofStatus.UNREACHABLE: "no generated graph presents what it acts on",
                 ProofStatus.UNTESTED: "no pipeline invokes it and it cannot run standalone"}


def unproven_line(verdicts: Sequence[PassRow]) -> str:
    """The CI summary line: passes neither sound nor failing do not fail the gate, but are named,
    by why (`unexercised: 2 (no divergence, too little evidence): A, B; inert: 1 (...): C`)."""
    shown = display_names(verdicts)
    parts = []
    for verdict, why in _UNPROVEN_WHY.items():
        names = sorted(shown[v.qualname] for v in verdicts if v.verdict is verdict)
        if names:
            parts.append(f"{verdict.value}: {len(names)} ({why}): {', '.join(names)}")
    return "; ".join(parts) or "unexercised: 0"


def write_json(verdicts: Sequence[PassRow], path: Path, info: dict) -> None:
    """The gate's JSON: the run, counts per verdict, every pass's verdict, and `ok` (false for a
    failing pass or an incomplete run)."""
    write_document(path, {"run": info, "counts": {k.value: n for k, n in count(verdicts).items()},
                          "passes": [v.to_json() for v in verdicts],
                          "ok": all(v.ok for v in verdicts) and info.get("complete", True) is not False})


def junit_properties(v: PassRow, min_evidence: int) -> dict[str, object]:
    """A pass's evidence, as its JUnit testcase's properties."""
    values = {"verdict": v.verdict.value, "how": v.how.value, "stage": v.stage, "examples": v.examples,
              "invoked": v.invocations, "skipped_calls": v.skipped_calls, "copied_nodes": v.copied_nodes,
              "examples_with_evidence": v.examples_with_evidence, "min_evidence": min_evidence}
    for f, e in v.evidence.items():
        values[f"{f.value}.examples_with_evidence"] = e.examples_with_action
        values[f"{f.value}.examples_invoked"] = e.examples_invoked
        values[f"{f.value}.distinct"] = getattr(e, "distinct", e.examples)
        if f is Feature.COPY:
            values["copy.distinct_ops_maybe_copied"] = len(e.ops_maybe_copied)
            values["copy.calls_ran"] = e.calls_ran
            values["copy.nodes_dispatched"] = e.nodes_dispatched
    return values


def _junit_case(v: PassRow, min_evidence: int) -> JunitCase:
    """unsound = failure, error = error, unexercised/inert/unreachable/untested = skipped (not
    proven); every case carries its evidence as properties."""
    module, _, name = v.qualname.rpartition(".")
    case = dict(classname=module or "gate", name=name or v.name, seconds=v.seconds,
                properties=junit_properties(v, min_evidence))
    message = v.reason + ("; reproducer: " + ", ".join(v.reproducers.values()) if v.reproducers else "")
    if v.verdict.is_unsound:
        return JunitCase(**case, end=CaseEnd.FAILURE, kind=v.verdict.value, message=message[:500], text=message)
    if v.verdict is ProofStatus.ERROR:
        return JunitCase(**case, end=CaseEnd.ERROR, kind="error", message=message[:500], text=message)
    if v.verdict.unproven:
        return JunitCase(**case, end=CaseEnd.SKIPPED, message=f"{v.verdict.value}: {message}"[:500])
    return JunitCase(**case)


def write_junit(verdicts: Sequence[PassRow], path: Path, wall: float, min_evidence: int) -> None:
    junit.write_junit(JunitSuite("verify.gate", [_junit_case(v, min_evidence) for v in verdicts], wall), path)
