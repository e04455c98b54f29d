"""Hypothesis profiles, and the fuzz campaign this session runs (verify.fuzz.campaign).

- `ci` (default): small and derandomized, so the default test command is repeatable;
- `dev`: a few more examples, random, for local runs (`pytest --hypothesis-profile dev`);
- `fuzz`: long campaigns (`python -m verify fuzz`, `tox -e fuzz`), with the example database
  kept so that a failure found once replays first next time.

A campaign's settings come in one file, `--fuzz-campaign FILE` (written by `python -m verify
fuzz`); without it the fuzz tests run the default test command's smoke run.
"""

import pytest
from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

settings.register_profile("ci", max_examples=8, derandomize=True, print_blob=True, **_COMMON)
settings.register_profile("dev", max_examples=25, print_blob=True, **_COMMON)
settings.register_profile("fuzz", max_examples=400, print_blob=True, **_COMMON)
settings.load_profile("ci")


def pytest_addoption(parser):
    parser.addoption("--fuzz-campaign", dest="fuzz_campaign", default=None, metavar="FILE",
                     help="the fuzz campaign to run (written by `python -m verify fuzz`); default: the smoke run")


def pytest_configure(config):
    """Read (and check) the campaign once, before collection: a bad file is one line."""
    from verify.fuzz.campaign import campaign_of
    from verify.usage import UsageError

    try:
        campaign = campaign_of(config)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.getoption("fuzz_campaign", None):
        settings.load_profile(campaign.profile)


def pytest_sessionfinish(session):
    """A campaign that records coverage fails when a reachable annotated pass went unexercised
    although its route was drawn often enough to rule out too few examples
    (verify.report.fuzz_coverage.CoverageVerdict.failed); the summary below says which."""
    from verify.fuzz.campaign import campaign_of

    campaign = campaign_of(session.config)
    if hasattr(session.config, "workerinput") or campaign.coverage_dir is None:
        return
    from verify.fuzz.coverage import campaign_failed

    if campaign_failed(campaign.coverage_dir, campaign.min_draws) and session.exitstatus == 0:
        session.exitstatus = 1  # pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    """After a campaign that records coverage, the pass-coverage summary (verify.fuzz.coverage.record_coverage)."""
    from verify.fuzz.campaign import campaign_of

    campaign = campaign_of(terminalreporter.config)
    if campaign.coverage_dir is not None and campaign.coverage_dir.is_dir():
        from verify.fuzz.coverage import summarize_coverage

        terminalreporter.write_sep("=", "fastpass pass coverage")
        terminalreporter.write_line(summarize_coverage(campaign.coverage_dir, campaign.min_draws))
