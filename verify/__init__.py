"""The differential harness: lower a model stock and with fastpass, prove the results identical.

Flow (one folder or module each): cases (model + target) → lowering (quantize once, lower
in a mode, observe every pass) → compare (one check each) → report (table, JSON, JUnit).
"""

from verify.cases import Case
from verify.compare import CHECKS, CheckResult, compare
from verify.lowering.lower import LoweringResult, lower
from verify.lowering.quantize import export_program
from verify.lowering.targets import TARGETS, get_target
from verify.runner import CaseReport, RunOptions, run_case

__all__ = ["CHECKS", "Case", "CaseReport", "CheckResult", "LoweringResult", "RunOptions", "TARGETS",
           "compare", "export_program", "get_target", "lower", "run_case"]
