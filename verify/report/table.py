"""The human-readable verdict table and progress lines."""

from __future__ import annotations

import sys

from verify.cases import Case
from verify.runner import CaseReport


def progress(event: str, case: Case, report: CaseReport | None, stream=sys.stderr) -> None:
    if event == "start":
        print(f"… {case.model} on {case.target}", file=stream, flush=True)
        return
    assert report is not None
    line = f"  {report.verdict.upper():<16} {case.model} on {case.target} ({report.wall_seconds:.0f} s"
    if report.seconds:
        line += f"; full {report.seconds['full']:.1f} s, fast {report.seconds['fast']:.1f} s"
    print(line + ")", file=stream, flush=True)
    for text in describe(report):
        print("    " + text, file=stream, flush=True)


def describe(report: CaseReport) -> list[str]:
    lines = []
    if report.error:
        lines.append(f"error: {report.error.splitlines()[0]}")
    if report.first_divergent_pass:
        lines.append(f"first divergent pass: {report.first_divergent_pass}")
    for name, check in report.checks.items():
        if not check.passed:
            lines.append(f"{name}: differs at {check.first_divergence}")
            lines.extend("  " + d for d in check.details[:6])
    nc = report.null_check
    if nc and not nc.get("identical", True):
        if "error" in nc:
            lines.append(f"null check failed to run: {nc['error'].splitlines()[0]}")
        else:
            lines.append(f"null check: stock differs across hash seeds {nc['seeds']} in "
                         f"{', '.join(nc['differs_in'])}, first at {nc['first_divergent_pass']}")
    return lines


def table(reports: list[CaseReport]) -> str:
    from verify.compare.checks import CHECKS

    # No speed ratio here: both modes share one process, so the first lowering also pays
    # warm-up. Speed is the bench's job (fresh process per lowering, interleaved).
    head = ["model", "target", "verdict", *CHECKS, "null", "full s", "fast s"]
    rows = []
    for r in reports:
        marks = [("ok" if r.checks[c].passed else "DIFF") if c in r.checks else "-" for c in CHECKS]
        null = "-" if not r.null_check else ("ok" if r.null_check.get("identical") else
                                             ("err" if "error" in r.null_check else "DIFF"))
        rows.append([r.model, r.target, r.verdict, *marks, null,
                     f"{r.seconds['full']:.1f}" if r.seconds else "-",
                     f"{r.seconds['fast']:.1f}" if r.seconds else "-"])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths))  # noqa: E731
    out = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]
    counts = {v: sum(r.verdict == v for r in reports) for v in ("identical", "divergent", "error", "nondeterministic")}
    out.append("")
    out.append(", ".join(f"{n} {v}" for v, n in counts.items()))
    return "\n".join(out)
