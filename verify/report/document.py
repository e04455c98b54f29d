"""The one JSON report writer: every command's JSON document (run, gate, bench, peer,
crosscheck, the pytest plugin, infer) is written here, the same way, atomically.

A module of its own, importing nothing but the atomic write: the pytest plugin (loaded by every
pytest run) and the command line's parsers must not import the lowering stack to write a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from verify.report.atomic import write_text


def write_document(path: Path, document: Mapping[str, Any]) -> None:
    """`document` as JSON at `path`: indented by one, any value JSON cannot hold as its str(),
    written atomically (verify.report.atomic)."""
    write_text(path, json.dumps(document, indent=1, default=str))
