"""pytest plugin (entry point `pytest11: fastpass`), off unless asked:

    pytest --fastpass                   # every test with fastpass enabled
    pytest --fastpass=crosscheck        # every lowering crosschecked (verify.crosscheck), stock returned
    pytest --fastpass-json FILE         # a JSON report; alone (fastpass off) it records outcomes only

Put `--fastpass` after the paths or write `--fastpass=on`: its value is optional, so a path
right after it would be read as its value (and refused).

In crosscheck mode a divergence fails the test whose call produced it (even an xfail test),
and the terminal summary lists lowerings crosschecked, identical, divergent (test id, first
divergent pass, reproducer), and time stock vs fastpass summed over all lowerings. Works with
pytest-xdist: each worker crosschecks its own tests and attaches the records to the test's
reports (`user_properties`), which the controller sums; nothing is lost between processes.
An xdist worker that goes down (a crash, the OOM killer) takes its test's records with it: the
summary and the JSON name it (`lost_workers`), so fewer lowerings never pass unexplained.

The output paths (`--fastpass-json`, crosscheck's `--fastpass-reproducers`) are checked when
the session starts: a usage error, one line, before any test runs (not a traceback at the end).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from verify.lowering.mode import Mode
from verify.report.document import write_document
from verify.report.crosscheck import summary_lines, totals

MODES = ("on", "crosscheck")
RECORDS_KEY = "fastpass.crosscheck"  # user_properties key: this phase's crosscheck records (JSON)
WORK_KEY = "fastpass.work"  # user_properties key: fastpass counters spent in this phase ("on" mode)
_WORK_FIELDS = ("passes_run", "passes_skipped", "nodes_copied", "nodes_dispatched", "time_in_passes_s")


def _mode(value: str) -> str:
    if value not in MODES:
        import argparse

        raise argparse.ArgumentTypeError(
            f"--fastpass takes no value, 'on' or 'crosscheck', not {value!r} "
            "(write --fastpass=on, or put --fastpass after the paths)")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fastpass", "fastpass: run lowerings with fastpass, or crosscheck them")
    group.addoption("--fastpass", nargs="?", const="on", default=None, type=_mode, metavar="crosscheck",
                    help="enable fastpass for every test; =crosscheck: lower stock and with fastpass, compare")
    group.addoption("--fastpass-features", default="", metavar="F1,F2",
                    help="fastpass features to enable (default: all)")
    group.addoption("--fastpass-trust", default="proven", choices=("proven", "all"),
                    help="which annotations fastpass uses: 'proven' (default: those the proof ledger calls "
                         "sound) or 'all' (every annotation in effect, e.g. one a test registers)")
    group.addoption("--fastpass-json", default=None, metavar="FILE",
                    help="write outcomes, crosscheck records and totals as JSON")
    group.addoption("--fastpass-reproducers", default="verify-out/crosscheck", metavar="DIR",
                    help="where crosscheck saves the input of a divergent call (default: %(default)s)")
    group.addoption("--fastpass-null", action="store_true",
                    help="crosscheck stock against stock (the null run): a divergence is then crosscheck's own")
    group.addoption("--fastpass-reference-sets", type=int, default=1, metavar="N",
                    help="TOSA reference-model input sets compared per delegate in crosscheck (default: 1)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("fastpass") is None and config.getoption("fastpass_json") is None:
        return
    if not hasattr(config, "workerinput"):  # the controller checks; its workers write nothing
        _check_output_paths(config)
    config.pluginmanager.register(FastpassPlugin(config), "fastpass-session")


def _check_output_paths(config: pytest.Config) -> None:
    """Refuse an unwritable output before any test runs: a session of an hour must not end in a
    traceback (and no summary) because its report cannot be written."""
    from verify.usage.output_paths import check_output_file, check_output_folder
    from verify.usage import UsageError

    try:
        if config.getoption("fastpass_json"):
            check_output_file(Path(config.getoption("fastpass_json")), "--fastpass-json")
        if config.getoption("fastpass") == "crosscheck":
            check_output_folder(Path(config.getoption("fastpass_reproducers")), "--fastpass-reproducers")
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


class FastpassPlugin:
    """One per pytest process: runs its tests in the chosen mode and, on the controller, reports."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.mode: str | None = config.getoption("fastpass")
        self.features = tuple(f for f in config.getoption("fastpass_features").split(",") if f)
        self.trust: str = config.getoption("fastpass_trust")
        self.is_worker = hasattr(config, "workerinput")
        self.session: Any = None  # verify.crosscheck.Session in crosscheck mode
        self.reported = 0  # records of the session already attached to a report
        self.work_before: dict[str, float] = {}
        # Controller side (or single process): what the reports say.
        self.outcomes: dict[str, str] = {}
        self.skip_reasons: Counter[str] = Counter()
        self.records: list[dict[str, Any]] = []
        self.work: Counter[str] = Counter()
        self.lost_workers: list[dict[str, str]] = []  # xdist workers that went down: {"worker", "error"}
        self.started = time.time()

    # ---- every process that runs tests -----------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.mode == "on":
            import fastpass

            fastpass.enable(self.features or None, trust=self.trust)
        elif self.mode == "crosscheck":
            from verify import crosscheck

            self.session = crosscheck.enable(
                features=self.features, reference_sets=self.config.getoption("fastpass_reference_sets"),
                reproducer_dir=Path(self.config.getoption("fastpass_reproducers")),
                second_mode=Mode.STOCK if self.config.getoption("fastpass_null") else Mode.FASTPASS,
                trust=self.trust)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.mode == "on":
            import fastpass

            if fastpass.is_enabled():
                fastpass.disable()
        elif self.mode == "crosscheck":
            from verify import crosscheck

            crosscheck.disable()
        if not self.is_worker and self.config.getoption("fastpass_json"):
            self._write_json(Path(self.config.getoption("fastpass_json")))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        if self.session is not None:
            self.session.context = item.nodeid
        try:
            return (yield)
        finally:
            if self.session is not None:
                self.session.context = ""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        # tryfirst: the outermost wrapper, so this sees the report after the xfail handling.
        report = yield
        extra: list[tuple[str, Any]] = []
        if self.session is not None:
            new = self.session.records[self.reported:]
            self.reported = len(self.session.records)
            if new:  # also any made outside a test (collection): counted, failing no test
                extra.append((RECORDS_KEY, [r.to_json() for r in new]))
                divergent = [r for r in new if r.divergent and r.context == item.nodeid]
                if divergent:
                    _fail(report, divergent)
        if self.mode == "on":
            work = self._work_delta()
            if any(work.values()):
                extra.append((WORK_KEY, work))
        if extra:
            report.user_properties = [*report.user_properties, *extra]  # a new list: the item's is shared
        return report

    def _work_delta(self) -> dict[str, float]:
        import fastpass

        stats = fastpass.stats()
        now = {k: stats.get(k, 0) for k in _WORK_FIELDS}
        delta = {k: now[k] - self.work_before.get(k, 0) for k in _WORK_FIELDS}
        self.work_before = now
        return delta

    # ---- the controller (or the single process) ----------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == RECORDS_KEY:
                self.records.extend(value)
            elif key == WORK_KEY:
                self.work.update(value)
        outcome = _outcome(report)
        if outcome is None:
            return
        previous = self.outcomes.get(report.nodeid)
        # The first non-pass outcome of a test's phases is its outcome (error in teardown after a pass).
        if previous is None or previous == "passed":
            self.outcomes[report.nodeid] = outcome
        if outcome == "skipped" and isinstance(report.longrepr, tuple):
            self.skip_reasons[str(report.longrepr[2]).removeprefix("Skipped: ")] += 1

    @pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent without xdist
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker went down; with an error (a crash, a kill) the records of the test it was
        running never arrive: name it."""
        if error is None:
            return
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        self.lost_workers.append({"worker": str(getattr(getattr(node, "gateway", None), "id", node)),
                                  "error": (lines[-1] if lines else "went down")[:300]})

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or (self.mode is None and not self.lost_workers):
            return
        write = terminalreporter.write_line
        terminalreporter.section(f"fastpass ({self.mode or Mode.STOCK.value})")
        if self.lost_workers:
            write(f"lost xdist workers: {len(self.lost_workers)} ("
                  + "; ".join(f"{w['worker']}: {w['error']}" for w in self.lost_workers)
                  + "): the records of the tests they were running are lost (not counted below)", red=True)
        if self.mode is None:
            return
        if self.mode == "on":
            write("fastpass: " + ", ".join(f"{k} {self.work[k]:.0f}" if k != "time_in_passes_s"
                                           else f"time in passes {self.work[k]:.1f} s" for k in _WORK_FIELDS))
            return
        for line, color in summary_lines(self.records):
            write(line, **({color: True} if color else {}))

    def _write_json(self, path: Path) -> None:
        data = {
            # the harness's mode names (--fastpass=on lowers in mode `fastpass`), or "crosscheck"
            "mode": {None: Mode.STOCK.value, "on": Mode.FASTPASS.value}.get(self.mode, self.mode),
            "features": list(self.features),
            "trust": self.trust,
            "seconds": time.time() - self.started,
            "outcomes": dict(sorted(self.outcomes.items())),
            "outcome_counts": dict(Counter(self.outcomes.values())),
            "skip_reasons": dict(self.skip_reasons.most_common()),
            "crosscheck": totals(self.records) if self.mode == "crosscheck" else None,
            "records": self.records,
            "fastpass_work": dict(self.work) if self.mode == "on" else None,
            "lost_workers": self.lost_workers,
        }
        write_document(path, data)


def _outcome(report: pytest.TestReport) -> str | None:
    """passed, failed, error, skipped, xfailed, xpassed; None for a phase that says nothing new."""
    wasxfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return "xpassed" if wasxfail else "passed"
        if report.skipped:
            return "xfailed" if wasxfail else "skipped"
        return "failed"
    if report.failed:
        return "error"
    if report.skipped:
        return "xfailed" if wasxfail else "skipped"
    return "passed" if report.when == "setup" else None


def _fail(report: pytest.TestReport, divergent: list[Any]) -> None:
    """A divergence fails the test, whatever its own outcome (an expected failure included)."""
    message = "\n".join("fastpass crosscheck: " + r.describe() for r in divergent)
    if report.failed and report.longrepr is not None:
        message = f"{report.longrepr}\n\n{message}"
    report.outcome = "failed"
    report.longrepr = message
    if hasattr(report, "wasxfail"):
        del report.wasxfail
