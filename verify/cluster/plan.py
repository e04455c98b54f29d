"""How long a campaign would take on N nodes: a small simulation from measured per-job costs.

Why a simulation and not `total / N`: a campaign is a list of jobs started in order on whichever
node is free (what verify.cluster.backend does with Ray's scheduler), so the wall time is set by
the longest jobs and the last ones to start, and a few slow nodes or slow jobs (stragglers) cost
far more than their share. `simulate` plays the campaign out job by job:

- each job costs `overhead` (Ray's submission, shipping and result, measured by
  verify.cluster.measure) + `startup` (a fresh worker process importing torch and executorch,
  measured) + its own seconds (from a real run);
- each node has a speed drawn once (log-normal, `node_spread`: machines of one pool differ);
- each job is, with probability `straggler_rate`, slowed by a factor drawn uniformly from
  `straggler_slowdown` (a noisy neighbour, swapping, a cold cache);
- jobs start in the campaign's order on the first free node (list scheduling, as a FIFO queue
  in front of N one-CPU workers does).

The result is a distribution over `trials` seeded draws: the median and the 90th percentile.
Everything here is arithmetic on the inputs; the inputs and assumptions are printed with the
table (verify.cluster.measure), since the projection is only as good as they are.
"""

from __future__ import annotations

import heapq
import math
import random
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Stragglers:
    rate: float = 0.05  # share of jobs slowed
    slowdown: tuple[float, float] = (2.0, 5.0)  # by a factor drawn from this range
    node_spread: float = 0.1  # sigma of the log-normal per-node speed


@dataclass(frozen=True)
class Campaign:
    """A campaign as its jobs: each one's seconds on one CPU, in the order they are started."""

    name: str
    job_seconds: tuple[float, ...]
    note: str = ""

    @property
    def cpu_seconds(self) -> float:
        return sum(self.job_seconds)


@dataclass(frozen=True)
class Projection:
    campaign: str
    nodes: int
    median: float
    p90: float
    ideal: float  # (cpu seconds + per-job costs) / nodes: no stragglers, perfect packing

    @property
    def efficiency(self) -> float:
        return self.ideal / self.median if self.median else 1.0


def simulate_once(jobs: tuple[float, ...], nodes: int, overhead: float, startup: float, stragglers: Stragglers,
                  rng: random.Random) -> float:
    speed = [math.exp(rng.gauss(0.0, stragglers.node_spread)) for _ in range(nodes)]
    free = [(0.0, node) for node in range(nodes)]  # (time the node is free, node)
    heapq.heapify(free)
    end = 0.0
    for seconds in jobs:
        at, node = heapq.heappop(free)
        slow = rng.uniform(*stragglers.slowdown) if rng.random() < stragglers.rate else 1.0
        done = at + overhead + (startup + seconds) * slow / speed[node]
        end = max(end, done)
        heapq.heappush(free, (done, node))
    return end


def project(campaign: Campaign, nodes: int, *, overhead: float, startup: float,
            stragglers: Stragglers = Stragglers(), trials: int = 200, seed: int = 0) -> Projection:
    rng = random.Random(seed)
    walls = sorted(simulate_once(campaign.job_seconds, nodes, overhead, startup, stragglers, rng)
                   for _ in range(trials))
    ideal = (campaign.cpu_seconds + len(campaign.job_seconds) * (overhead + startup)) / nodes
    return Projection(campaign.name, nodes, statistics.median(walls), walls[int(0.9 * (len(walls) - 1))],
                      max(ideal, max(campaign.job_seconds, default=0.0)))


def lognormal_jobs(count: int, mean: float, cv: float, seed: int = 0) -> tuple[float, ...]:
    """`count` job costs with this mean and coefficient of variation (log-normal: costs are
    positive and right-skewed, as lowering times of random graphs are)."""
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    rng = random.Random(seed)
    return tuple(rng.lognormvariate(mu, sigma) for _ in range(count))


def format_duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"


def table(projections: list[Projection]) -> str:
    lines = [f"{'campaign':<48} {'nodes':>5} {'median':>9} {'p90':>9} {'ideal':>9} {'efficiency':>10}"]
    for p in projections:
        lines.append(f"{p.campaign:<48} {p.nodes:>5} {format_duration(p.median):>9} {format_duration(p.p90):>9} "
                     f"{format_duration(p.ideal):>9} {p.efficiency:>9.0%}")
    return "\n".join(lines)
