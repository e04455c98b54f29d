"""Fixtures shared by the fastpass test modules."""

import pytest


@pytest.fixture
def fastpass_disabled():
    """Each test starts and ends with fastpass off and its stats empty: a test that fails while
    fastpass is enabled must not leave the patches on for the tests after it."""
    import fastpass

    if fastpass.is_enabled():
        fastpass.disable()
    fastpass.reset_stats()
    yield
    if fastpass.is_enabled():
        fastpass.disable()


@pytest.fixture(autouse=True)
def _verify_logging_reset():
    """A command run in-process (`verify.cli.main`) configures verify's loggers' level; the tests
    after it get them back unset, so that `caplog.set_level` (the root logger's) decides again."""
    yield
    from verify.report import verbosity

    verbosity.reset()
