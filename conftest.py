"""Hypothesis profiles, chosen by the FASTPASS_PROFILE environment variable.

- `ci` (default): small and derandomized, so the default test command is repeatable;
- `dev`: a few more examples, random, for local runs;
- `fuzz`: long campaigns (`tox -e fuzz`), with the example database kept so that a
  failure found once replays first next time.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

settings.register_profile("ci", max_examples=8, derandomize=True, print_blob=True, **_COMMON)
settings.register_profile("dev", max_examples=25, print_blob=True, **_COMMON)
# FASTPASS_FUZZ_EXAMPLES bounds a campaign (examples per fuzz test; default 400).
settings.register_profile("fuzz", max_examples=int(os.environ.get("FASTPASS_FUZZ_EXAMPLES", "400")),
                          print_blob=True, **_COMMON)
settings.load_profile(os.environ.get("FASTPASS_PROFILE", "ci"))


def pytest_sessionfinish(session):
    """A fuzz campaign (FASTPASS_PROFILE=fuzz with FASTPASS_COVERAGE_DIR) fails when a reachable
    annotated pass went unexercised although its route was drawn often enough to rule out too
    few examples (verify.fuzz_coverage.CoverageVerdict.failed); the summary below says which."""
    folder = os.environ.get("FASTPASS_COVERAGE_DIR")
    if hasattr(session.config, "workerinput") or os.environ.get("FASTPASS_PROFILE") != "fuzz" or not folder:
        return
    from pathlib import Path

    from verify.fuzz_coverage import campaign_failed

    if campaign_failed(Path(folder)) and session.exitstatus == 0:
        session.exitstatus = 1  # pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    """After a fuzz run, the pass-coverage summary (see verify.fuzz.record_coverage)."""
    folder = os.environ.get("FASTPASS_COVERAGE_DIR")
    if folder and os.path.isdir(folder):
        from pathlib import Path

        from verify.fuzz import summarize_coverage

        terminalreporter.write_sep("=", "fastpass pass coverage")
        terminalreporter.write_line(summarize_coverage(Path(folder)))
