"""The human-readable verdict table and progress lines."""

from __future__ import annotations

import sys

from verify.lowering.mode import Mode
from verify.report.case import Case, CaseReport
from verify.vocabulary import NullOutcome, Verdict
from verify.report.verdict import relied_on_summary


def progress(event: str, case: Case, report: CaseReport | None, stream=None) -> None:
    """A case's progress line(s) on `stream`, default: `sys.stderr` as it is at the call (not at
    import: a test's captured stream, or a caller's redirect, replaces it after this module loads)."""
    stream = sys.stderr if stream is None else stream
    if event == "start":
        print(f"… {case.model} on {case.target}", file=stream, flush=True)
        return
    assert report is not None
    status = report.verdict.value.upper()
    if report.null_outcome is NullOutcome.FAILED:
        status += ", NULL CHECK FAILED"
    line = f"  {status:<16} {case.model} on {case.target} ({report.wall_seconds:.0f} s"
    if report.seconds:
        line += (f"; {Mode.STOCK} {report.seconds[Mode.STOCK]:.1f} s, "
                 f"{Mode.FASTPASS} {report.seconds[Mode.FASTPASS]:.1f} s")
    print(line + ")", file=stream, flush=True)
    for text in describe(report):
        print("    " + text, file=stream, flush=True)


def describe(report: CaseReport) -> list[str]:
    lines = []
    if report.error:
        lines.append(f"error: {report.error.splitlines()[0]}")
    if report.first_divergence:
        lines.append(f"first divergent pass: {report.first_divergence.label}")
    for name, check in report.checks.items():
        if not check.passed:
            lines.append(f"{name}: differs at {check.first_divergence.label if check.first_divergence else None}")
            lines.extend("  " + d for d in check.details[:6])
    if report.order_recheck is not None:
        lines.append(report.order_recheck.describe())
    nc = report.null_check or {}
    if report.null_outcome is NullOutcome.FAILED:
        lines.append(f"null check failed to run: {(nc.get('error') or '?').splitlines()[0]}")
    elif report.null_outcome is NullOutcome.DIFFERS:
        lines.append(f"null check: stock differs across hash seeds {nc['seeds']} in "
                     f"{', '.join(nc['differs_in'])}, first at {nc['first_divergent_pass']}")
    factory = report.factory or {}
    if factory.get("deterministic") is False:
        lines.append(f"factory is not deterministic: two builds differ in {', '.join(factory['differs_in'][:3])}"
                     + (f" (+{factory['differing'] - 3} more)" if factory.get("differing", 0) > 3 else "")
                     + "; every lowering of this case used the one saved program")
    return lines


def _null_mark(report: CaseReport) -> str:
    return {NullOutcome.IDENTICAL: "ok", NullOutcome.DIFFERS: "DIFF", NullOutcome.FAILED: "FAILED",
            NullOutcome.NOT_RUN: "-"}[report.null_outcome]


def table(reports: list[CaseReport]) -> str:
    from verify.compare.checks import CHECKS

    # No speed ratio here: both modes share one process, so the first lowering also pays
    # warm-up. Speed is the bench's job (fresh process per lowering, interleaved).
    head = ["model", "target", "verdict", *CHECKS, "null", "relied on", f"{Mode.STOCK} s", f"{Mode.FASTPASS} s"]
    rows = []
    for r in reports:
        marks = [("ok" if r.checks[c].passed else "DIFF") if c in r.checks else "-" for c in CHECKS]
        rows.append([r.model, r.target, r.verdict.value, *marks, _null_mark(r), relied_on_summary(r.relied_on),
                     *(f"{r.seconds[mode]:.1f}" if r.seconds else "-" for mode in Mode)])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths))  # noqa: E731
    out = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]
    counts = {v.value: sum(r.verdict is v for r in reports) for v in Verdict}
    out.append("")
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    null_failed = sum(r.null_outcome is NullOutcome.FAILED for r in reports)
    if null_failed:
        summary += f"; null check failed to run in {null_failed}"
    out.append(summary)
    return "\n".join(out)
