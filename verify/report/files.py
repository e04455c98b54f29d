"""`verify run`'s machine-readable outputs: the JSON report and a JUnit XML file. Both are written
atomically (verify.report.atomic, through verify.report.document's one JSON writer): a reader
never sees half a report."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from verify.report import junit
from verify.report.junit import CaseEnd, JunitCase, JunitSuite
from verify.vocabulary import NullOutcome, Verdict
from verify.report.case import CaseReport
from verify.report.document import write_document

log = logging.getLogger(__name__)


def write_json(reports: list[CaseReport], path: Path, run_info: dict) -> None:
    write_document(path, {"run": run_info, "cases": [r.to_json() for r in reports]})


def write_run_reports(reports: list[CaseReport], run_info: dict, unfinished: list[tuple[str, str]],
                      run_json: Path, json_path: Path | None = None, junit_path: Path | None = None) -> list:
    """A run's report.json (`run_json`), and --json and --junit if given, each written on its
    own: a full disk under the run folder must not cost the --json or --junit on another one.
    Returns the writes the file system refused (verify.usage.output_paths.CannotWrite, one per file)."""
    from verify.usage.output_paths import CannotWrite

    writes = [lambda: write_json(reports, run_json, run_info)]
    if json_path:
        writes.append(lambda: write_json(reports, json_path, run_info))
    if junit_path:
        writes.append(lambda: write_junit(reports, junit_path, unfinished))
    failed = []
    for write in writes:
        try:
            write()
        except CannotWrite as exc:
            log.debug("writing a report failed", exc_info=True)
            failed.append(exc)
    return failed


def _first_line(text: str | None, default: str) -> str:
    return text.splitlines()[0] if text else default


def _junit_case(r: CaseReport) -> JunitCase:
    """A divergence is a <failure>; a failed null check is an <error> (the harness could not
    check what it promised), as is a case the harness could not lower."""
    where = dict(classname=f"verify.{r.target}", name=r.model, seconds=r.wall_seconds)
    if r.verdict.is_failure:
        at = r.first_divergence.label if r.first_divergence else None
        return JunitCase(**where, end=CaseEnd.FAILURE, message=f"{r.verdict.value} at {at}",
                         text=json.dumps(r.to_json()["check_details"], indent=1, default=str))
    if r.verdict is Verdict.ERROR:
        return JunitCase(**where, end=CaseEnd.ERROR, message=_first_line(r.error, "error"), text=r.error)
    if r.null_outcome is NullOutcome.FAILED:
        error = (r.null_check or {}).get("error")
        return JunitCase(**where, end=CaseEnd.ERROR, message="null check failed to run: " + _first_line(error, "?"),
                         text=error)
    return JunitCase(**where)


def write_junit(reports: list[CaseReport], path: Path, unfinished: list[tuple[str, str]] = ()) -> None:
    """One testcase per case; a case the run never finished (interrupted) is an <error>."""
    cases = [_junit_case(r) for r in reports]
    cases += [JunitCase(f"verify.{target}", model, 0.0, CaseEnd.ERROR,
                        "not run: the run was stopped before this case finished") for model, target in unfinished]
    junit.write_junit(JunitSuite("verify", cases), path)
