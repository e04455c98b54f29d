"""What peer runs: executorch's Arm test suites, their test files, a seeded share of them, and
which of them collect here.

These are tests written by the pass authors, not by us: their graphs hit corner cases our
generators do not. Tests that need hardware or simulators we do not have skip themselves by
their own markers; the summary counts them by reason.

`ops/` holds 12,004 tests (hours per mode) and `models/` lowers whole networks, so a run may
take a seeded random share of a suite folder (`--share`, class Share): whole files, drawn once
and run in every mode alike, under a seed fresh per run (successive runs cover other files)
that is printed and kept in peer.json (`--share-seed` repeats a run's files). Before any mode,
every test file is collected once (verify.peer.campaign.probe_collection, a process running
probe_main here): a file that does not collect here (most `models/` files import packages not
installed) is run in no mode and listed with its reason, since a single collection error stops
each mode's whole pytest session.
"""

from __future__ import annotations

import importlib.util
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.usage import UsageError


@dataclass(frozen=True)
class Share:
    """`--share [SUITE:]AMOUNT`: run a seeded random share of a suite folder's test files.

    Whole files, not tests: a file's fixtures and module-scoped setup then behave as in a full
    run, and the mode processes get paths, never node ids. AMOUNT is a fraction of the files
    (0 < f <= 1, with a decimal point), a count of files, or a budget of tests (`300tests`:
    each file in the drawn order taken if its tests still fit — executorch's ops files hold 1
    to 585 tests each, so a count of files says little about the time). Without SUITE it applies to every
    suite folder given."""

    suite: str | None
    fraction: float | None = None
    count: int | None = None
    tests: int | None = None

    def draw(self, files: dict[Path, int], seed: int, suite: str) -> list[Path]:
        """The share of `files` (test file -> tests it holds), sorted: a shuffle by a generator
        seeded by `seed` and the suite's name (so a suite's share depends on the seed, not on
        the other suites given), then its first files: as many as asked, or each that still fits
        the test budget (the smallest file alone if none fits)."""
        order = sorted(files)
        random.Random(f"{seed}/{suite}").shuffle(order)
        if self.tests is not None:
            picked, total = [], 0
            for path in order:
                if total + files[path] <= self.tests:
                    picked.append(path)
                    total += files[path]
            return sorted(picked or [min(order, key=lambda f: (files[f], f))] if order else [])
        wanted = self.count if self.count is not None else round(self.fraction * len(order))
        return sorted(order[:min(len(order), max(1, wanted))])

    def __str__(self) -> str:
        amount = (f"{self.tests}tests" if self.tests is not None else str(self.count) if self.count is not None
                  else f"{self.fraction:g}")
        return amount if self.suite is None else f"{self.suite}:{amount}"


def arm_test_root() -> Path:
    """The installed wheel's Arm test folder (executorch is a namespace package: no __file__)."""
    spec = importlib.util.find_spec("executorch.backends.arm.test")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("executorch's Arm tests are not installed (no executorch.backends.arm.test)")
    return Path(list(spec.submodule_search_locations)[0])


def resolve_suites(names: list[str], root: Path) -> list[Path]:
    paths = []
    for name in names or ["passes"]:
        path = root / name
        if not path.exists():
            choices = ", ".join(sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_")))
            raise UsageError(f"no {name!r} under {root} (suites: {choices}; or a file path below one)")
        paths.append(path)
    return paths


# pytest's default `python_files` (the modes run under an empty ini, so these are pytest's rule)
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py")


def test_files(path: Path) -> list[Path]:
    """The test files pytest collects from `path` (the file itself, or those below the folder), sorted."""
    if path.is_file():
        return [path]
    return sorted({f for pattern in TEST_FILE_PATTERNS for f in path.rglob(pattern)
                   if "__pycache__" not in f.parts})


def suite_name(path: Path, root: Path) -> str:
    """How a suite is named on the command line: relative to the Arm test folder, else its path."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def match_shares(suites: list[Path], root: Path, shares: list[Share]) -> dict[str, Share]:
    """The share of each shared suite, by name: the last --share naming it, else the last
    without a suite if it is a folder. Usage errors for a share of no suite given or of a file."""
    names = {suite_name(s, root): s for s in suites}
    for share in shares:
        if share.suite is not None and share.suite not in names:
            raise UsageError(f"--share {share}: {share.suite!r} is not one of the suites given ({', '.join(names)})")
        if share.suite is not None and not names[share.suite].is_dir():
            raise UsageError(f"--share {share}: {share.suite!r} is a file; a share is taken of a suite folder's files")
    matched = {}
    for name, path in names.items():
        share = next((s for s in reversed(shares) if s.suite == name), None)
        if share is None and path.is_dir():
            share = next((s for s in reversed(shares) if s.suite is None), None)
        if share is not None:
            matched[name] = share
    return matched


def exception_chain(exc: BaseException | None) -> list[BaseException]:
    """`exc` and the exceptions it was raised from or while handling (pytest's CollectError
    for an ImportError is raised `from` it)."""
    chain: list[BaseException] = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


class CollectProbe:
    """pytest plugin of the collection probe: the tests each file holds, and each file whose
    collection raised, with the module found missing (a ModuleNotFoundError in the chain)."""

    def __init__(self) -> None:
        self.tests: Counter[str] = Counter()
        self.failures: dict[str, dict[str, str | None]] = {}

    def pytest_itemcollected(self, item: Any) -> None:
        self.tests[str(item.path)] += 1

    def pytest_exception_interact(self, node: Any, call: Any, report: Any) -> None:
        if report.when != "collect":
            return
        chain = exception_chain(call.excinfo.value)
        missing = next((e.name for e in chain if isinstance(e, ModuleNotFoundError)), None)
        cause = chain[-1]
        first_line = next(iter(str(cause).strip().splitlines()), "")
        self.failures[str(node.path)] = {"missing": missing, "error": f"{type(cause).__name__}: {first_line}"}


def probe_main(argv: list[str]) -> int:
    """The probe process: `pytest --collect-only` with `argv[1:]` and a CollectProbe, whose
    findings go to the JSON file `argv[0]` (written whatever pytest's exit status)."""
    import pytest

    probe = CollectProbe()
    code = pytest.main(argv[1:], plugins=[probe])
    Path(argv[0]).write_text(json.dumps({"pytest_exit": int(code), "tests": dict(probe.tests),
                                         "failures": probe.failures}, indent=1))
    return 0


@dataclass(frozen=True)
class Collected:
    """What the probe found: the tests each runnable file holds (0 for a file that collects
    none), and why each other file is not run."""

    tests: dict[Path, int]
    not_runnable: dict[Path, str]


def runnable_paths(suites: list[Path], root: Path, shares: dict[str, Share], seed: int,
                   collected: Collected) -> tuple[list[Path], dict[str, dict[str, Any]]]:
    """What the modes run, the same for every mode: a shared suite as its drawn share of its
    runnable files, any other suite as given (or as its runnable files, if some are not).
    Returns the paths and, per shared suite, its record for peer.json."""
    paths: list[Path] = []
    records: dict[str, dict[str, Any]] = {}
    for suite in suites:
        name = suite_name(suite, root)
        files = test_files(suite)
        runnable = {f: collected.tests[f] for f in files if f in collected.tests}
        if name in shares:
            picked = shares[name].draw(runnable, seed, name)
            paths.extend(picked)
            records[name] = {"share": str(shares[name]), "of_files": len(runnable),
                             "of_tests": sum(runnable.values()), "tests": sum(runnable[f] for f in picked),
                             "files": [str(f.relative_to(suite)) for f in picked]}
        elif len(runnable) == len(files):
            paths.append(suite)
        else:
            paths.extend(sorted(runnable))
    return paths, records
