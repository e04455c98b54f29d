"""The stable machine-readable outputs: the JSON report and a JUnit XML file."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from verify.runner import CaseReport


def write_json(reports: list[CaseReport], path: Path, run_info: dict) -> None:
    document = {"run": run_info, "cases": [r.to_json() for r in reports]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, default=str))


def write_junit(reports: list[CaseReport], path: Path) -> None:
    suite = ET.Element("testsuite", name="verify", tests=str(len(reports)),
                       failures=str(sum(r.verdict in ("divergent", "nondeterministic") for r in reports)),
                       errors=str(sum(r.verdict == "error" for r in reports)))
    for r in reports:
        case = ET.SubElement(suite, "testcase", classname=f"verify.{r.target}", name=r.model,
                             time=f"{r.wall_seconds:.1f}")
        if r.verdict in ("divergent", "nondeterministic"):
            failure = ET.SubElement(case, "failure", message=f"{r.verdict} at {r.first_divergent_pass}")
            failure.text = json.dumps(r.to_json()["check_details"], indent=1, default=str)
        elif r.verdict == "error":
            ET.SubElement(case, "error", message=(r.error or "").splitlines()[0] if r.error else "error").text = r.error
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="unicode", xml_declaration=True)
