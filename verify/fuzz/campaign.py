"""A fuzz campaign's settings, as one typed value: which targets, how many shards and examples,
graph size, seed, where coverage and reproducers go.

Why a value and not environment variables: the campaign is a pytest-xdist run of
tests/test_fuzz.py (Hypothesis drives and shrinks the graphs there), and its settings must reach
the controller and every xdist worker alike. `python -m verify fuzz` checks them once (a bad
value is one line, exit 2, before any work), writes them to a file and hands pytest
`--fuzz-campaign FILE`; every process reads the same file (the repository's conftest.py,
`campaign_of`). Without the option the tests run the default test command's smoke run
(`FuzzCampaign()`): two TOSA targets, one shard each, the derandomized `ci` Hypothesis profile.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from verify.fuzz.coverage import DEFAULT_MIN_DRAWS
from verify.usage import UsageError

SMOKE_TARGETS = ("tosa-int", "tosa-fp")
# A campaign covers every pipeline by default: U55-only passes act on ethos-u55 alone, and the
# passes the quantizer runs first on INT targets are presented on tosa-fp alone
# (generators.random.reach).
CAMPAIGN_TARGETS = ("tosa-int", "tosa-fp", "ethos-u55", "ethos-u85")
CAMPAIGN_OPTION = "--fuzz-campaign"  # the pytest option that names the campaign file


@dataclass(frozen=True)
class FuzzCampaign:
    """The defaults are the default test command's smoke run; `python -m verify fuzz` has its own."""

    targets: tuple[str, ...] = SMOKE_TARGETS
    # Hypothesis settings profile (registered in conftest.py): `ci` small and derandomized,
    # `fuzz` random with the example database kept (a failure found once replays first next time).
    profile: str = "ci"
    examples: int | None = None  # graphs per shard; None: the profile's
    # One Hypothesis test runs in one xdist worker; shards let one target use every core, and each
    # shard aims its focused graphs at its own share of the target's routes
    # (verify.fuzz.search.focus_routes). Shards draw different graphs only under a random profile.
    shards: int = 1
    # A float target (tosa-fp) gets this many times the shards: its graph costs about half an INT
    # graph (no quantization; measured 3-10 s against 9-17 s for 1-4 ops) and only it presents the
    # passes the quantizer runs first on INT targets, so its routes are the ones no target backs up.
    float_shard_factor: int = 1
    max_ops: int = 8  # a stock lowering costs ~0.3-0.5 s per op: graph size against rate
    seed: str | None = None  # a repeatable campaign: a distinct Hypothesis seed per target and shard
    min_draws: int = DEFAULT_MIN_DRAWS  # verify.fuzz.coverage: gap vs too few examples
    # The coverage folder of an earlier campaign: focused graphs go only to the passes it did not
    # exercise (its verdict stays its own).
    continue_from: Path | None = None
    coverage_dir: Path | None = None  # where each graph's coverage line goes; None: not recorded
    reproducers: Path = Path("reproducers")
    features: tuple[str, ...] = field(default=())  # fastpass features under test (empty: all)
    # The Hypothesis example database: one folder per cell below it (`database_of`), kept between
    # campaigns, so that a failure found once is replayed first by the next run of its cell, here
    # or on any cluster node (verify.fuzz.cells brings a node's new entries back here). A cell's
    # own folder because a saved example is a choice sequence of that cell's strategy (its
    # target and its share of the routes): under another cell's it is some other graph. None:
    # Hypothesis's default database (the smoke run's).
    database: Path | None = None

    def __post_init__(self) -> None:
        from verify.lowering.targets import UnknownTargetError, get_target

        if not self.targets:
            raise UsageError("--targets: no target named")
        try:
            for name in self.targets:
                get_target(name)
        except UnknownTargetError as exc:
            raise UsageError(f"--targets: {exc}") from None
        for option, value in (("--shards", self.shards), ("--max-ops", self.max_ops), ("--min-draws", self.min_draws),
                              ("--examples", 1 if self.examples is None else self.examples),
                              ("float shard factor", self.float_shard_factor)):
            if value < 1:
                raise UsageError(f"{option} must be a positive integer, got {value}")
        if self.continue_from is not None and not Path(self.continue_from).is_dir():
            raise UsageError(f"--continue: no such folder {str(self.continue_from)!r}")

    def shards_of(self, target: str) -> int:
        from verify.lowering.targets import get_target

        return self.shards * (1 if get_target(target).quantized else self.float_shard_factor)

    def cells(self) -> list[tuple[str, int, int]]:
        """(target, shard, shards): one fuzz test each."""
        return [(target, shard, self.shards_of(target)) for target in self.targets
                for shard in range(self.shards_of(target))]

    def database_of(self, target: str, shard: int, shards: int) -> Path | None:
        """The example database folder of one cell (None: Hypothesis's default)."""
        return None if self.database is None else Path(self.database) / cell_id(target, shard, shards)

    def hypothesis_settings(self, target: str, shard: int, shards: int):
        """The Hypothesis settings one cell runs under, on top of the profile: the campaign's
        examples per cell and the cell's database folder (None: the profile's alone)."""
        from hypothesis import settings
        from hypothesis.database import DirectoryBasedExampleDatabase

        chosen = {}
        if self.examples is not None:
            chosen["max_examples"] = self.examples
        folder = self.database_of(target, shard, shards)
        if folder is not None:
            chosen["database"] = DirectoryBasedExampleDatabase(folder)
        return settings(**chosen) if chosen else None

    def seed_of(self, target: str, shard: int) -> str | None:
        """The Hypothesis seed of one cell (pytest's --hypothesis-seed would give every shard the same graphs)."""
        return None if self.seed is None else f"{self.seed}/{target}/{shard}"

    def exercised_before(self) -> frozenset[str]:
        """The annotated passes the campaign continued from exercised (none for a fresh one)."""
        if self.continue_from is None:
            return frozenset()
        from verify.fuzz.search import exercised_in

        return exercised_in(Path(self.continue_from))

    def to_json(self) -> dict:
        data = asdict(self)
        return {key: (str(value) if isinstance(value, Path) else list(value) if isinstance(value, tuple) else value)
                for key, value in data.items()}

    @classmethod
    def from_json(cls, data: dict) -> FuzzCampaign:
        paths = {"continue_from", "coverage_dir", "reproducers", "database"}
        values = {key: (Path(value) if key in paths and value is not None else
                        tuple(value) if isinstance(value, list) else value) for key, value in data.items()}
        return cls(**values)

    def save(self, path: Path) -> None:
        from verify.report.atomic import write_text

        write_text(path, json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: Path) -> FuzzCampaign:
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except (OSError, ValueError, TypeError) as exc:
            raise UsageError(f"{CAMPAIGN_OPTION} {path}: not a campaign file ({exc})") from None


def cell_id(target: str, shard: int, shards: int) -> str:
    """The one name of a cell (one Hypothesis test: a target and a shard): its pytest id, its
    database folder, its job folder on a cluster."""
    return f"{target}-shard{shard}of{shards}"


def long_campaign(**overrides) -> FuzzCampaign:
    """What `python -m verify fuzz` runs unless told otherwise (`tox -e fuzz`): every target, the
    `fuzz` profile, ~30 min on 2 cores (12 shards per INT target, 24 on tosa-fp, 6 graphs each,
    <= 6 ops)."""
    base = FuzzCampaign(targets=CAMPAIGN_TARGETS, profile="fuzz", examples=6, shards=12, float_shard_factor=2,
                        max_ops=6, coverage_dir=Path("fuzz-coverage"), database=Path(".hypothesis/fuzz"))
    return replace(base, **overrides)


def campaign_of(config) -> FuzzCampaign:
    """The campaign a pytest session runs (`--fuzz-campaign FILE`, else the smoke run), read once
    per process and kept in the config's stash."""
    key = _stash_key()
    if key not in config.stash:
        path = config.getoption("fuzz_campaign", None)
        config.stash[key] = FuzzCampaign.load(Path(path)) if path else FuzzCampaign()
    return config.stash[key]


@functools.cache
def _stash_key():
    """The config-stash key of the campaign (one per process; pytest imported only here)."""
    import pytest

    return pytest.StashKey[FuzzCampaign]()
