"""Ray's per-job overhead on this machine, and from it a projection of two big campaigns on
8/32/128 nodes: the measurement and the projection's inputs behind `python -m verify measure-cluster`
(verify/commands/measure.py, which reads the campaigns' own outputs and calls these).

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

import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from verify.cluster.plan import Campaign, lognormal_jobs
from verify.jobs.launcher import JobFiles, launch_command
from verify.vocabulary import Route

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
    direct = [p["seconds"] for p in passes if Route(p["how"]) is Route.DIRECT]
    batch = [p for p in passes if Route(p["how"]) is Route.BATCH]
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
