"""The stable machine-readable outputs: the JSON report and a JUnit XML file. Both are written
atomically (verify.report.atomic): a reader never sees half a report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from verify.report.atomic import atomic_output, write_text
from verify.report.verdict import NullOutcome, Verdict
from verify.runner import CaseReport


def write_json(reports: list[CaseReport], path: Path, run_info: dict) -> None:
    document = {"run": run_info, "cases": [r.to_json() for r in reports]}
    write_text(path, json.dumps(document, indent=1, default=str))


def _first_line(text: str | None, default: str) -> str:
    return text.splitlines()[0] if text else default


def write_junit(reports: list[CaseReport], path: Path, unfinished: list[tuple[str, str]] = ()) -> None:
    """One testcase per case. A failed null check is an <error> (the harness could not check
    what it promised); a case the run never finished (interrupted) is an <error> too."""
    null_failed = [r for r in reports if r.null_outcome is NullOutcome.FAILED]
    suite = ET.Element("testsuite", name="verify", tests=str(len(reports) + len(unfinished)),
                       failures=str(sum(r.verdict.is_failure for r in reports)),
                       errors=str(sum(r.verdict is Verdict.ERROR for r in reports)
                                  + sum(r.verdict is not Verdict.ERROR for r in null_failed) + len(unfinished)))
    for r in reports:
        case = ET.SubElement(suite, "testcase", classname=f"verify.{r.target}", name=r.model,
                             time=f"{r.wall_seconds:.1f}")
        if r.verdict.is_failure:
            failure = ET.SubElement(case, "failure", message=f"{r.verdict.value} at {r.first_divergent_pass}")
            failure.text = json.dumps(r.to_json()["check_details"], indent=1, default=str)
        elif r.verdict is Verdict.ERROR:
            ET.SubElement(case, "error", message=_first_line(r.error, "error")).text = r.error
        elif r.null_outcome is NullOutcome.FAILED:
            error = (r.null_check or {}).get("error")
            ET.SubElement(case, "error", message="null check failed to run: " + _first_line(error, "?")).text = error
    for model, target in unfinished:
        case = ET.SubElement(suite, "testcase", classname=f"verify.{target}", name=model, time="0.0")
        ET.SubElement(case, "error", message="not run: the run was stopped before this case finished")
    with atomic_output(path) as f:
        ET.ElementTree(suite).write(f, encoding="unicode", xml_declaration=True)
