"""A fuzz campaign on a Ray cluster: each cell (one Hypothesis test: a target and a shard) is one
job of one CPU, a pytest process running that cell's test alone; what the cells write is merged
here, as each returns, into the campaign's one coverage folder, reproducers folder and example
database, and the campaign's one coverage summary is printed (verify.fuzz.coverage).

Why a job per cell: cells are independent (each its own seed, `FuzzCampaign.seed_of`, and its own
share of the routes), and one cell is what one xdist worker runs at a time locally, so cells
spread over the nodes as they would over local workers. The nodes share no file system
(verify.cluster.shipping), so each cell has a folder of its own, `<coverage>/cells/<cell>/`:

- `campaign.json`: the campaign, with the cell's own coverage, reproducers and database folders
  (and, continuing an earlier campaign, `<coverage>/continued/`: that campaign's coverage lines
  alone, sent with every cell instead of its whole folder, cells' folders and all);
- `examples/<cell>/`: the cell's example database, a copy of the campaign's (`--database`) sent
  with the job; the entries Hypothesis adds on the node (a failure found, its shrunk form) come
  back and are added to the campaign's. Entries are files named by their content's hash, so
  adding is a union and never a conflict. Entries Hypothesis deletes on a node (a saved failure
  that no longer fails) stay in the campaign's database: the next run replays them once more;
- what the cell writes: `coverage/` (its coverage lines), `reproducers/`, `junit.xml` (its test's
  outcome), its pytest log `<cell>.log`.

Merged: the coverage lines into `<coverage>/coverage-lane<k>.jsonl`, k the lane the cell ran in (a
lane runs one cell at a time, as an xdist worker does, so the summary's throughput counts lanes as
workers); reproducers into `--reproducers`, their text naming that folder; database entries into
`--database`. A cell that did not return (stopped, cluster gone) is merged never.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, replace
from pathlib import Path

from verify.cluster.batch import JobReturn, PytestJob, run_batch
from verify.fuzz.campaign import FuzzCampaign, cell_id
from verify.fuzz.coverage import coverage_files
from verify.jobs.launcher import JobFiles
from verify.report.atomic import write_bytes, write_text

CELLS_FOLDER = "cells"
CONTINUED_FOLDER = "continued"  # in the campaign's coverage folder
COVERAGE_FOLDER = "coverage"  # in a cell's folder
REPRODUCERS_FOLDER = "reproducers"
EXAMPLES_FOLDER = "examples"
TEST_NAME = "test_random_graphs_lower_identically"


@dataclass(frozen=True)
class Cell:
    """One cell and its folder here."""

    target: str
    shard: int
    shards: int
    folder: Path

    @property
    def name(self) -> str:
        return cell_id(self.target, self.shard, self.shards)

    @property
    def log_path(self) -> Path:
        return self.folder / f"{self.name}.log"

    @property
    def junit(self) -> Path:
        return self.folder / "junit.xml"

    def campaign(self, campaign: FuzzCampaign) -> FuzzCampaign:
        """The campaign as this cell's job sees it: its folders inside the cell's folder."""
        return replace(campaign, coverage_dir=self.folder / COVERAGE_FOLDER,
                       reproducers=self.folder / REPRODUCERS_FOLDER, database=self.folder / EXAMPLES_FOLDER)


@dataclass(frozen=True)
class CellResult:
    """What one returned cell gave: its graphs (coverage lines), the reproducers it saved (as
    merged here), whether its test failed, and why it has no outcome if it has none."""

    cell: Cell
    graphs: int
    reproducers: tuple[Path, ...]
    failed: bool
    error: str | None

    @property
    def divergences(self) -> int:
        """A failing cell stops at its first failure, shrunk to one reproducer."""
        return int(self.failed)


def prepare(campaign: FuzzCampaign, tests: Path, target: str, shard: int, shards: int) -> tuple[Cell, PytestJob]:
    """The cell's folder made (its campaign file, its database copied in), the cell and its job."""
    cell = Cell(target, shard, shards, campaign.coverage_dir / CELLS_FOLDER / cell_id(target, shard, shards))
    shutil.rmtree(cell.folder, ignore_errors=True)
    cell.folder.mkdir(parents=True)
    own = cell.campaign(campaign)
    campaign_file = cell.folder / "campaign.json"
    own.save(campaign_file)
    inputs = [campaign_file]
    kept = campaign.database_of(target, shard, shards)
    if kept is not None and kept.is_dir():
        shutil.copytree(kept, own.database_of(target, shard, shards))
        inputs.append(own.database_of(target, shard, shards))
    if campaign.continue_from is not None:
        inputs.append(Path(campaign.continue_from))
    args = (f"{tests}::{TEST_NAME}[{cell.name}]", "-m", "fuzz", "-p", "no:xdist", "-p", "no:cacheprovider",
            "--timeout", "0", "--hypothesis-show-statistics", "--fuzz-campaign", str(campaign_file),
            "--junitxml", str(cell.junit))
    return cell, PytestJob(cell.name, args, JobFiles(cell.folder, tuple(inputs)), cell.log_path)


def _test_failed(junit: Path) -> bool | None:
    """Whether the cell's one test failed (None: no report, the test never ran to an outcome)."""
    try:
        suites = ElementTree.parse(junit).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    suite = suites if suites.tag == "testsuite" else suites.find("testsuite")
    if suite is None or int(suite.get("tests", 0)) != 1:
        return None
    return int(suite.get("failures", 0)) + int(suite.get("errors", 0)) > 0


def merge(campaign: FuzzCampaign, cell: Cell, returned: JobReturn) -> CellResult:
    """Add what a returned cell wrote to the campaign's folders; what it gave."""
    own = cell.campaign(campaign)
    lines = []
    for path in coverage_files(cell.folder / COVERAGE_FOLDER):
        lines += [line for line in path.read_text().splitlines() if line.strip()]
    if lines:
        with open(campaign.coverage_dir / f"coverage-lane{returned.lane}.jsonl", "a") as merged:
            merged.write("".join(line + "\n" for line in lines))
    saved = []
    for path in sorted(own.reproducers.glob("*.py")):
        target = campaign.reproducers / path.name
        write_text(target, path.read_text().replace(str(own.reproducers), str(campaign.reproducers)))
        saved.append(target)
    found = own.database_of(cell.target, cell.shard, cell.shards)
    kept = campaign.database_of(cell.target, cell.shard, cell.shards)
    if kept is not None and found.is_dir():
        for entry in sorted(p for p in found.rglob("*") if p.is_file()):
            into = kept / entry.relative_to(found)
            if not into.exists():  # named by its content: one there is this one
                write_bytes(into, entry.read_bytes())
    failed = _test_failed(cell.junit)
    error = None
    if returned.failure is not None:
        error = returned.failure
    elif failed is None or returned.returncode not in (0, 1):
        error = f"exit {returned.returncode}, no test outcome"
    return CellResult(cell, len(lines), tuple(saved), bool(failed), error)


def describe(result: CellResult, returned: JobReturn, done: int, total: int) -> str:
    """The progress line of a finished cell."""
    where = (f"node {returned.placement.node} ({returned.placement.host})" if returned.placement
             else "a node (unknown under -q)")
    outcome = (f"ERROR {result.error}; log {result.cell.log_path}" if result.error is not None else
               f"{result.divergences} divergence(s)" + (f": {', '.join(map(str, result.reproducers))}"
                                                         if result.reproducers else ""))
    return (f"fuzz: [{done}/{total}] {result.cell.name} on {where}: {returned.seconds:.1f} s, "
            f"{result.graphs} graph(s), {outcome}")


def _continued_as_sent(campaign: FuzzCampaign) -> FuzzCampaign:
    """The campaign the cells are sent: an earlier campaign continued from (`--continue`) as its
    coverage lines alone, copied once into `<coverage>/continued/` (all a cell reads of it:
    `FuzzCampaign.exercised_before`)."""
    if campaign.continue_from is None:
        return campaign
    folder = campaign.coverage_dir / CONTINUED_FOLDER
    folder.mkdir()
    for path in coverage_files(Path(campaign.continue_from)):
        shutil.copyfile(path, folder / path.name)
    return replace(campaign, continue_from=folder)


def run_on_cluster(campaign: FuzzCampaign, tests: Path, width: int) -> tuple[list[CellResult], list[str]]:
    """Every cell of `campaign` as a job on the cluster (at most `width` at a time), merged as it
    returns; the results of the cells that returned, and the names of those that did not."""
    sent = _continued_as_sent(campaign)
    prepared = [prepare(sent, tests, *c) for c in campaign.cells()]
    cells = {job.name: cell for cell, job in prepared}
    jobs = [job for _, job in prepared]
    results: list[CellResult] = []

    def merged(returned: JobReturn) -> None:
        result = merge(campaign, cells[returned.job.name], returned)
        results.append(result)
        print(describe(result, returned, len(results), len(jobs)), flush=True)

    unfinished = run_batch(jobs, width, merged)
    return results, [job.name for job in unfinished]
