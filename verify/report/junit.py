"""The one JUnit XML writer, for `verify run` / `verify report` and for `verify gate`.

Each command turns its own results into `JunitCase` records (what the case is, how it ended,
why, what evidence it carries) and this module alone knows the XML: the suite's counts are
counted from the cases, so a count and the elements it counts cannot disagree. Written
atomically (verify.report.atomic): a CI step never reads half a file.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from verify.report.atomic import write_bytes


class CaseEnd(Enum):
    """How a testcase ended, in JUnit's vocabulary (the element it gets, if any)."""

    PASSED = None  # no child element
    FAILURE = "failure"  # what was checked differs / is unsound
    ERROR = "error"  # the harness could not tell
    SKIPPED = "skipped"  # not proven either way (e.g. a gate pass short of evidence)


@dataclass(frozen=True)
class JunitCase:
    classname: str
    name: str
    seconds: float
    end: CaseEnd = CaseEnd.PASSED
    message: str = ""
    text: str | None = None  # the element's body (details); None: no body
    kind: str | None = None  # the element's `type` attribute (e.g. the gate verdict); None: none
    properties: dict[str, object] = field(default_factory=dict)  # evidence, as <properties>


@dataclass(frozen=True)
class JunitSuite:
    name: str
    cases: list[JunitCase]
    seconds: float | None = None  # the suite's wall time; None: not given

    def count(self, end: CaseEnd) -> int:
        return sum(case.end is end for case in self.cases)


def _case_element(suite: ET.Element, case: JunitCase) -> None:
    element = ET.SubElement(suite, "testcase", classname=case.classname, name=case.name,
                            time=f"{case.seconds:.3f}")
    if case.properties:
        properties = ET.SubElement(element, "properties")
        for name, value in case.properties.items():
            ET.SubElement(properties, "property", name=name, value=str(value))
    if case.end is CaseEnd.PASSED:
        return
    attributes = {"type": case.kind} if case.kind is not None else {}
    child = ET.SubElement(element, case.end.value, **attributes, message=case.message)
    if case.text is not None:
        child.text = case.text


def to_xml(suite: JunitSuite) -> bytes:
    counts = {"tests": str(len(suite.cases)), "failures": str(suite.count(CaseEnd.FAILURE)),
              "errors": str(suite.count(CaseEnd.ERROR)), "skipped": str(suite.count(CaseEnd.SKIPPED))}
    if suite.seconds is not None:
        counts["time"] = f"{suite.seconds:.3f}"
    root = ET.Element("testsuite", name=suite.name, **counts)
    for case in suite.cases:
        _case_element(root, case)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write_junit(suite: JunitSuite, path: Path) -> None:
    write_bytes(path, to_xml(suite))
