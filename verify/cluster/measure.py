"""Ray's per-job overhead on this machine, and from it a projection of two big campaigns on
8/32/128 nodes: `python -m verify.cluster.measure [--jobs N] [--gate-json FILE]`.

Measured (on a two-node loopback cluster of its own, verify.cluster.loopback, stopped at the
end; the harness itself never starts one):
- `local`: a trivial worker (`true` under the launcher) started by verify.jobs.launcher here;
- `cluster`: the same worker through the Ray backend (task submission, a small job file
  shipped, the worker's log returned, the result): `overhead` = cluster - local, per job;
- `startup`: a fresh worker process importing torch and executorch's Arm backend, which every
  job pays once (a cluster job is a fresh process, as a local one is).

Projected (verify.cluster.plan: list scheduling with stragglers; the assumptions are printed):
- the whole-registry gate as it runs today (4 stage searches + the direct checks: the per-check
  seconds of a real run's JSON, `--gate-json`), and the same graphs sharded one graph per job
  (what sharding stage searches would give; not built);
- a 10,000-graph fuzz campaign in shards of `--fuzz-shard` graphs, per-graph seconds resampled
  from a real campaign's coverage folder (`--fuzz-coverage`), or log-normal around
  `--fuzz-graph-seconds`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from verify.cluster.plan import Campaign, Stragglers, lognormal_jobs, project, table
from verify.jobs.launcher import JobFiles, launch_command

IMPORTS = "import torch, executorch.exir, executorch.backends.arm.tosa.partitioner"


@dataclass(frozen=True)
class Overhead:
    jobs: int
    local: float  # median seconds of one trivial worker here
    cluster: float  # ... through the Ray backend
    startup: float  # median seconds of a worker importing torch + executorch's Arm backend

    @property
    def per_job(self) -> float:
        return max(0.0, self.cluster - self.local)


def _trivial_jobs(count: int, folder: Path, command: list[str]) -> list[float]:
    seconds = []
    for index in range(count):
        job = folder / f"job-{index}"
        job.mkdir(parents=True, exist_ok=True)
        (job / "job.json").write_text("{}")
        start = time.perf_counter()
        launch_command(command, log_path=job / "worker.log", timeout=600,
                       files=JobFiles(job, (job / "job.json",)))
        seconds.append(time.perf_counter() - start)
    return seconds


def measure_overhead(jobs: int, startups: int = 3) -> Overhead:
    from verify.cluster.connect import ClusterAddress, connected
    from verify.cluster.loopback import LoopbackCluster

    with tempfile.TemporaryDirectory(prefix="verify-measure-") as scratch:
        folder = Path(scratch)
        local = _trivial_jobs(jobs, folder / "local", ["true"])
        startup = _trivial_jobs(startups, folder / "startup", [sys.executable, "-c", IMPORTS])
        with LoopbackCluster(2) as cluster:
            host, _, port = cluster.address.rpartition(":")
            with connected(ClusterAddress(cluster.address, host, int(port), "measure")):
                _trivial_jobs(2, folder / "warm-up", ["true"])  # each node's first Ray worker process
                remote = _trivial_jobs(jobs, folder / "cluster", ["true"])
    return Overhead(jobs, statistics.median(local), statistics.median(remote), statistics.median(startup))


def gate_campaigns(gate_json: Path) -> tuple[list[Campaign], str]:
    """The registry gate from a real run's JSON: each direct check's seconds as measured; the
    stage searches' seconds are not in the JSON, so the worker time left over is shared equally
    among the stages (an assumption: both workers busy for the whole run)."""
    document = json.loads(gate_json.read_text())
    passes, run = document["passes"], document["run"]
    direct = [p["seconds"] for p in passes if p["how"] == "direct"]
    batch = [p for p in passes if p["how"] == "batch"]
    stages = sorted({s for p in batch for s in p["stage"].split(",")})
    graphs = max((p["examples"] for p in batch), default=0)
    busy = run["jobs"] * run["wall_seconds"]
    stage_seconds = max(0.0, busy - sum(direct)) / max(1, len(stages))
    per_graph = stage_seconds * len(stages) / max(1, graphs)
    today = Campaign(f"registry gate, as today ({len(stages)} stages + {len(direct)} direct)",
                     (stage_seconds,) * len(stages) + tuple(direct))
    sharded = Campaign(f"registry gate, 1 graph per job ({graphs} + {len(direct)})",
                       lognormal_jobs(graphs, per_graph, 0.5, seed=1) + tuple(direct))
    note = (f"gate inputs ({gate_json}): a real run of {run['wall_seconds']:.0f} s wall on {run['jobs']} workers; "
            f"{len(direct)} direct checks, {sum(direct):.0f} s in all (as measured); {len(stages)} stage searches over "
            f"{graphs} graphs, {stage_seconds:.0f} s each (assumed: the remaining worker time, shared equally), "
            f"i.e. {per_graph:.1f} s per graph (sharded: log-normal, CV 0.5, assumed)")
    return [today, sharded], note


def measured_graph_seconds(coverage: Path) -> list[float]:
    """Each graph's seconds inside verification, from a real campaign's coverage folder
    (`verify fuzz --coverage DIR`: one row per graph, with its start and finish)."""
    from verify.fuzz.coverage import read_coverage

    rows, _ = read_coverage(coverage)
    return [r["finished"] - r["started"] for r in rows if r.get("started") and r.get("finished")]


def fuzz_campaign(graphs: int, shard: int, graph_seconds: float, measured: list[float] | None = None
                  ) -> tuple[Campaign, str]:
    """`graphs` in shards of `shard`: per-graph seconds drawn from a real campaign's (`measured`,
    resampled) or, without one, log-normal around `graph_seconds`."""
    shards = -(-graphs // shard)
    if measured:
        rng = random.Random(2)
        per_graph = [rng.choice(measured) for _ in range(shards * shard)]
        source = (f"resampled from {len(measured)} graphs of a real campaign (median {statistics.median(measured):.1f} s, "
                  f"mean {statistics.fmean(measured):.1f} s, max {max(measured):.1f} s)")
    else:
        per_graph = list(lognormal_jobs(shards * shard, graph_seconds, 0.6, seed=2))
        source = (f"{graph_seconds:.1f} s per graph, log-normal CV 0.6 (assumed; tox -e fuzz's figure: 360 graphs in "
                  f"~30 min on 2 cores)")
    jobs = tuple(sum(per_graph[i * shard:(i + 1) * shard]) for i in range(shards))
    note = f"fuzz inputs: {graphs} graphs in {shards} shards of {shard}; per graph: {source}"
    return Campaign(f"fuzz, {graphs} graphs ({shards} shards of {shard})", jobs), note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.cluster.measure", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=20, help="trivial jobs timed each way (default %(default)s)")
    parser.add_argument("--gate-json", type=Path, default=Path("/tmp/gate-full.json"),
                        help="a whole-registry `verify gate --json` (default %(default)s)")
    parser.add_argument("--fuzz-graphs", type=int, default=10_000)
    parser.add_argument("--fuzz-shard", type=int, default=6, help="graphs per fuzz job (tox -e fuzz: 6)")
    parser.add_argument("--fuzz-graph-seconds", type=float, default=10.0,
                        help="mean seconds per graph when no --fuzz-coverage is given")
    parser.add_argument("--fuzz-coverage", type=Path, default=None, metavar="DIR",
                        help="a real campaign's coverage folder (verify fuzz --coverage): its per-graph seconds")
    parser.add_argument("--nodes", default="8,32,128")
    parser.add_argument("--overhead", type=float, default=None, metavar="S",
                        help="skip the measurement: this per-job overhead (with --startup)")
    parser.add_argument("--startup", type=float, default=None, metavar="S")
    parser.add_argument("--json", type=Path, default=None, help="also write inputs and projections here")
    args = parser.parse_args(argv)
    if args.overhead is None:
        overhead = measure_overhead(args.jobs)
        print(f"measured on a 2-node loopback cluster, {overhead.jobs} jobs each way: trivial worker here "
              f"{overhead.local * 1000:.0f} ms, through Ray {overhead.cluster * 1000:.0f} ms: overhead "
              f"{overhead.per_job * 1000:.0f} ms per job (median); worker start-up with torch + executorch imports "
              f"{overhead.startup:.1f} s")
    else:
        overhead = Overhead(0, 0.0, args.overhead, args.startup or 0.0)
    stragglers = Stragglers()
    campaigns, notes = [], []
    if args.gate_json.is_file():
        gates, note = gate_campaigns(args.gate_json)
        campaigns += gates
        notes.append(note)
    measured = measured_graph_seconds(args.fuzz_coverage) if args.fuzz_coverage else None
    fuzz, note = fuzz_campaign(args.fuzz_graphs, args.fuzz_shard, args.fuzz_graph_seconds, measured)
    campaigns.append(fuzz)
    notes.append(note)
    notes.append(f"every job: + {overhead.per_job:.2f} s Ray overhead + {overhead.startup:.1f} s worker start-up; "
                 f"stragglers: {stragglers.rate:.0%} of jobs slowed {stragglers.slowdown[0]:g}-{stragglers.slowdown[1]:g}x, "
                 f"node speeds log-normal sigma {stragglers.node_spread:g}; jobs start in order on the first free "
                 f"node (one CPU each); 200 seeded trials")
    projections = [project(c, n, overhead=overhead.per_job, startup=overhead.startup, stragglers=stragglers)
                   for c in campaigns for n in map(int, args.nodes.split(","))]
    print("\n".join(notes))
    print(table(projections))
    if args.json:
        args.json.write_text(json.dumps({"overhead": {**asdict(overhead), "per_job": overhead.per_job},
                                         "notes": notes, "projections": [asdict(p) for p in projections]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
