"""Compare two lowerings of the same program: each check its own function, its own report, and
one comparison (`compare_lowerings`) that runs them all, rechecks a difference against stock and
gives the typed verdict every command reports."""

from verify.compare.checks import CHECKS, CheckResult, compare, first_divergence
from verify.compare.comparison import Comparison, StockRelowered, compare_lowerings
from verify.compare.divergence import Divergence

__all__ = ["CHECKS", "CheckResult", "Comparison", "Divergence", "StockRelowered", "compare", "compare_lowerings",
           "first_divergence"]
