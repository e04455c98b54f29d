"""Compare two lowerings of the same program: each check its own function, its own report."""

from verify.compare.checks import CHECKS, CheckResult, compare

__all__ = ["CHECKS", "CheckResult", "compare"]
