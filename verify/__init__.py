"""The differential harness: lower a model stock and with fastpass, prove the results identical.

Flow (one folder or module each): commands (the command line) → cases (model + target) →
lowering (quantize once, lower in a mode, observe every pass) → compare (one check each, and the
one comparison: checks, node-order recheck, typed verdict) → report (table, JSON, JUnit).

The public names below are imported on first use (PEP 562), not with the package: the pytest
plugin (`verify.pytest_plugin`, loaded by every pytest run in an environment that has fastpass)
imports only what it needs, so a run that does not ask for fastpass imports neither fastpass nor
torch through it. (`compare` is the subpackage `verify.compare`; its function is
`verify.compare.compare`: a package attribute cannot be both.)
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "Case": "verify.cases",
    "CHECKS": "verify.compare",
    "CheckResult": "verify.compare",
    "LoweringResult": "verify.lowering.lower",
    "lower": "verify.lowering.lower",
    "export_program": "verify.lowering.quantize",
    "TARGETS": "verify.lowering.targets",
    "get_target": "verify.lowering.targets",
    "CaseReport": "verify.report.case",
    "RunOptions": "verify.run.runner",
    "run_case": "verify.run.runner",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'verify' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
