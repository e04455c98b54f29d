"""Compare two lowerings of the same program: each check its own function, its own report."""

from verify.compare.checks import CHECKS, CheckResult, compare, first_divergence
from verify.compare.divergence import Divergence

__all__ = ["CHECKS", "CheckResult", "Divergence", "compare", "first_divergence"]
