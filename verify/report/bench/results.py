"""The bench's values: one lowering's measurements, a pair, a case's summary, the whole run.

Typed so that the worker, the aggregation, the table and the JSON file all read the same
fields; nothing is parsed back from text. A worker writes `WorkerRun.to_json()`, the bench
reads it with `WorkerRun.from_json()`; `BenchResult.to_json()` is the `--json` document.

Ratios are stock/fastpass for every row (> 1: fastpass is faster or smaller), computed per pair
and then summarized: the pairs are interleaved precisely so that each ratio compares two
lowerings run under the same machine load.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable

from verify.lowering.mode import Mode
from verify.lowering.steps import Part

MIB = 1024 * 1024

# The floor: the parts of a lowering no fastpass patch point acts in (tests/test_bench_parts.py
# counts every fastpass replacement's calls by the part they come from: none in these, some in
# each other part). Only the gc feature reaches them (its collector settings are process-wide);
# what fastpass can gain is bounded by them: stock lower() / floor is the ratio with everything
# else at zero.
FLOOR_PARTS: tuple[Part, ...] = (Part.PARTITIONING, Part.TOSA_SERIALIZATION, Part.VELA)


class PeakScope(str, Enum):
    """What the worker's peak RSS covers."""

    LOWERING = "lowering"  # the peak was reset just before lower(): the lowering's own high-water mark
    PROCESS = "process"  # the reset was refused: the process's peak since it started (may predate lower())

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class PassTiming:
    """One observed pass invocation's wall time."""

    phase: str  # "edge", or "delegate<k>" inside the k-th delegate's preprocess (the ARM pipeline)
    manager: str
    index: int
    pass_name: str
    seconds: float


@dataclass(frozen=True)
class FastpassCounters:
    """The totals fastpass.stats() reports for one lowering (fastpass mode only)."""

    passes_run: int
    passes_skipped: int
    nodes_copied: int
    nodes_dispatched: int
    copy_seconds: float
    dispatch_seconds: float
    fakecache_hits: int
    fakecache_misses: int
    # annotation -> proof-ledger status, for each annotation the lowering skipped or copied by
    relied_on: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_stats(cls, stats: dict[str, Any]) -> FastpassCounters:
        return cls(**{name: stats[name] for name in cls.__dataclass_fields__ if name in stats})

    @property
    def seconds_per_copied_node(self) -> float | None:
        return self.copy_seconds / self.nodes_copied if self.nodes_copied else None

    @property
    def seconds_per_dispatched_node(self) -> float | None:
        return self.dispatch_seconds / self.nodes_dispatched if self.nodes_dispatched else None


@dataclass(frozen=True)
class Memory:
    """The worker's resident memory around the lowering, in bytes."""

    rss_before_bytes: int  # resident just before lower() (model built, program quantized)
    peak_rss_bytes: int  # ru_maxrss after lower(): see `peak_scope` for what it covers
    peak_scope: PeakScope

    @property
    def increase_bytes(self) -> int:
        """How far the lowering raised the process above where it started."""
        return self.peak_rss_bytes - self.rss_before_bytes


@dataclass(frozen=True)
class WorkerRun:
    """One timed lowering in a fresh process: what the bench measures and what it compares."""

    mode: Mode
    features: tuple[str, ...]
    lower_seconds: float  # lower()'s own clock (fastpass enabled/disabled inside it)
    pass_pipeline_seconds: float  # the ARM pass pipeline: every observed pass outside the edge phase
    edge_pass_seconds: float  # observed passes of the edge phase (to_edge and after delegation)
    pass_invocations: int
    memory: Memory
    fastpass: FastpassCounters | None  # None in stock mode
    # identity: equal in both modes of a pair, or the pair fails
    program_digest: str
    payload_digests: tuple[str, ...]
    delegate_tosa_digests: tuple[str, ...]
    final_graph_digest: str | None
    per_pass: tuple[PassTiming, ...] = ()
    # Part value -> its exclusive seconds in lower() (verify.lowering.steps.Part); None: it did not
    # run (Vela in a TOSA target's lowering)
    parts: dict[str, float | None] = field(default_factory=dict)
    nested_step_seconds: float = 0.0  # pass steps inside other pass steps: in both their sums
    to_executorch_seconds: float | None = None  # after lower(), not in it; None: to_executorch() failed
    pte_digest: str | None = None  # the serialized program's (identity: equal in both modes)
    # lower() around the lowering call: fastpass's enable and disable (stock: none), the observers'
    # install and restore
    mode_switch_seconds: float = 0.0

    @property
    def outside_pipeline_seconds(self) -> float:
        """lower() minus the ARM pass pipeline: the named parts, the edge passes and `other`."""
        return self.lower_seconds - self.pass_pipeline_seconds

    def part_seconds(self, part: Part) -> float | None:
        return self.parts.get(part.value)

    @property
    def other_seconds(self) -> float:
        """lower() minus everything named (the pipeline, the edge passes, every part, the mode
        switch; a pass step inside another counted once): the partitioner's construction, fake
        program copies, delegate fusing, the checks after lowering, ..."""
        named = sum(v for v in self.parts.values() if v is not None)
        return (self.lower_seconds - self.pass_pipeline_seconds - self.edge_pass_seconds - named
                - self.mode_switch_seconds + self.nested_step_seconds)

    @property
    def floor_seconds(self) -> float:
        """The floor parts' sum (FLOOR_PARTS; those that ran)."""
        return sum(self.part_seconds(p) or 0.0 for p in FLOOR_PARTS)

    def to_json(self) -> dict[str, Any]:
        return _jsonable(asdict(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkerRun:
        memory = data["memory"]
        return cls(
            mode=Mode(data["mode"]), features=tuple(data["features"]),
            lower_seconds=data["lower_seconds"], pass_pipeline_seconds=data["pass_pipeline_seconds"],
            edge_pass_seconds=data["edge_pass_seconds"], pass_invocations=data["pass_invocations"],
            memory=Memory(memory["rss_before_bytes"], memory["peak_rss_bytes"], PeakScope(memory["peak_scope"])),
            fastpass=None if data["fastpass"] is None else FastpassCounters(**data["fastpass"]),
            program_digest=data["program_digest"], payload_digests=tuple(data["payload_digests"]),
            delegate_tosa_digests=tuple(data["delegate_tosa_digests"]),
            final_graph_digest=data["final_graph_digest"],
            per_pass=tuple(PassTiming(**p) for p in data["per_pass"]), parts=dict(data["parts"]),
            nested_step_seconds=data["nested_step_seconds"], to_executorch_seconds=data["to_executorch_seconds"],
            pte_digest=data["pte_digest"], mode_switch_seconds=data["mode_switch_seconds"])


IDENTITY_FIELDS = ("program_digest", "payload_digests", "delegate_tosa_digests", "final_graph_digest", "pte_digest")


def identity_problems(stock: WorkerRun, fast: WorkerRun) -> tuple[str, ...]:
    """What differs between two lowerings of one pair: the quantized program they started from
    (else the pair compares nothing), and the checks' view as digests
    (verify.compare.digests.LoweringDigests: the delegates' bytes and TOSA, the final graph), and
    the serialized program (.pte)."""
    return tuple(f"{name} differs" for name in IDENTITY_FIELDS if getattr(stock, name) != getattr(fast, name))


@dataclass(frozen=True)
class Spread:
    """Median, minimum and maximum of one figure over the pairs (None: no pair had it)."""

    median: float | None
    min: float | None
    max: float | None
    count: int

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        present = [v for v in values if v is not None]
        if not present:
            return cls(None, None, None, 0)
        return cls(statistics.median(present), min(present), max(present), len(present))

    def scaled(self, factor: float) -> Spread:
        scale = lambda v: None if v is None else v * factor  # noqa: E731
        return Spread(scale(self.median), scale(self.min), scale(self.max), self.count)


@dataclass(frozen=True)
class Metric:
    """One row of the table: how to read the figure from a run, and how to show it."""

    key: str  # the JSON name
    label: str  # the table's
    read: Callable[[WorkerRun], float | None]
    unit_scale: float = 1.0  # table unit per JSON unit
    fastpass_only: bool = False  # stock has no such figure (fastpass's counters)
    ratio: bool = True  # False: stock's figure is not the same thing (no stock/fastpass ratio)


def _counter(name: str) -> Callable[[WorkerRun], float | None]:
    return lambda run: None if run.fastpass is None else getattr(run.fastpass, name)


# How the table and the floor line name each part.
PART_LABELS: dict[Part, str] = {
    Part.DECOMPOSITIONS: "decompositions re-trace", Part.TO_EDGE: "to_edge conversion",
    Part.PARTITIONING: "partitioning", Part.PIPELINE_SETUP: "ARM pipeline setup", Part.PASS_MANAGERS: "pass managers",
    Part.TOSA_SERIALIZATION: "TOSA serialization", Part.VELA: "Vela",
}


def _part(part: Part) -> Metric:
    return Metric(f"{part.value}_seconds", f"  {PART_LABELS[part]} s", lambda run: run.part_seconds(part))


METRICS: tuple[Metric, ...] = (
    Metric("lower_seconds", "lower() s", lambda r: r.lower_seconds),
    Metric("pass_pipeline_seconds", "ARM pass pipeline s", lambda r: r.pass_pipeline_seconds),
    Metric("outside_pipeline_seconds", "outside the pipeline s", lambda r: r.outside_pipeline_seconds),
    # outside the pipeline, part by part (exclusive times, in the order a lowering reaches them)
    _part(Part.DECOMPOSITIONS),
    _part(Part.TO_EDGE),
    Metric("edge_pass_seconds", "  edge passes s", lambda r: r.edge_pass_seconds),
    _part(Part.PARTITIONING),
    _part(Part.PIPELINE_SETUP),
    _part(Part.PASS_MANAGERS),
    _part(Part.TOSA_SERIALIZATION),
    _part(Part.VELA),
    # stock switches nothing on (its figure is the observers' alone): no ratio
    Metric("mode_switch_seconds", "  fastpass on/off, observers s", lambda r: r.mode_switch_seconds, ratio=False),
    Metric("other_seconds", "  other s", lambda r: r.other_seconds),
    Metric("to_executorch_seconds", "to_executorch() s, after lower()", lambda r: r.to_executorch_seconds),
    Metric("peak_rss_bytes", "peak RSS MiB", lambda r: r.memory.peak_rss_bytes, 1 / MIB),
    Metric("rss_before_bytes", "RSS before lower() MiB", lambda r: r.memory.rss_before_bytes, 1 / MIB),
    Metric("rss_increase_bytes", "RSS increase MiB", lambda r: r.memory.increase_bytes, 1 / MIB),
    Metric("pass_invocations", "pass invocations", lambda r: r.pass_invocations),
    Metric("passes_skipped", "passes skipped", _counter("passes_skipped"), fastpass_only=True),
    Metric("nodes_copied", "nodes copied", _counter("nodes_copied"), fastpass_only=True),
    Metric("nodes_dispatched", "nodes dispatched", _counter("nodes_dispatched"), fastpass_only=True),
    Metric("seconds_per_copied_node", "ms per copied node", _counter("seconds_per_copied_node"), 1e3,
           fastpass_only=True),
    Metric("seconds_per_dispatched_node", "ms per dispatched node", _counter("seconds_per_dispatched_node"),
           1e3, fastpass_only=True),
    Metric("fakecache_hits", "FakeTensor cache hits", _counter("fakecache_hits"), fastpass_only=True),
    Metric("fakecache_misses", "FakeTensor cache misses", _counter("fakecache_misses"), fastpass_only=True),
)


@dataclass(frozen=True)
class Pair:
    """One stock lowering and the fastpass lowering run right after it, on the same program."""

    index: int
    stock: WorkerRun
    fastpass: WorkerRun
    problems: tuple[str, ...]  # identity_problems(stock, fastpass); empty: identical

    @property
    def identical(self) -> bool:
        return not self.problems

    def ratio(self, metric: Metric) -> float | None:
        """stock/fastpass of one figure (None where either side has none or fastpass's is 0)."""
        stock, fast = metric.read(self.stock), metric.read(self.fastpass)
        if not metric.ratio or stock is None or fast is None or fast <= 0:
            return None
        return stock / fast


@dataclass(frozen=True)
class MetricSummary:
    key: str
    stock: Spread
    fastpass: Spread
    ratio: Spread  # of the per-pair stock/fastpass ratios


@dataclass(frozen=True)
class Floor:
    """What no fastpass feature shortens in a case: the floor parts (FLOOR_PARTS, those that ran),
    measured in its fastpass lowerings."""

    parts: tuple[Part, ...]
    seconds: Spread  # their sum per fastpass lowering
    share: Spread  # of that lowering's lower() time
    ceiling: Spread  # per pair, stock lower() / fastpass floor: lower()'s ratio if all else took no time

    def to_json(self) -> dict[str, Any]:
        return {"parts": [p.value for p in self.parts], "fastpass_seconds": asdict(self.seconds),
                "share_of_fastpass_lower": asdict(self.share), "ceiling_ratio": asdict(self.ceiling)}


@dataclass(frozen=True)
class CaseResult:
    """One model on one target over all pairs."""

    model: str  # as the user named it (e.g. `resnet8`, `random10:3`)
    target: str
    pairs: tuple[Pair, ...]
    graph_spec: dict[str, Any] | None = None  # a random graph's GraphSpec (replay: graphspec:<file>)
    error: str | None = None  # why a lowering of this case failed (its later pairs were not run)

    @property
    def identical(self) -> bool:
        return self.error is None and bool(self.pairs) and all(p.identical for p in self.pairs)

    @property
    def relied_on(self) -> dict[str, str]:
        """Every annotation a fastpass lowering of the case skipped or copied by, with its status."""
        return dict(sorted({name: status for p in self.pairs if p.fastpass.fastpass is not None
                            for name, status in p.fastpass.fastpass.relied_on.items()}.items()))

    def summary(self, metric: Metric) -> MetricSummary:
        return MetricSummary(
            metric.key,
            Spread.of(metric.read(p.stock) for p in self.pairs),
            Spread.of(metric.read(p.fastpass) for p in self.pairs),
            Spread.of(p.ratio(metric) for p in self.pairs),
        )

    def summaries(self) -> list[MetricSummary]:
        return [self.summary(m) for m in METRICS]

    @property
    def floor(self) -> Floor:
        fast = [p.fastpass for p in self.pairs]
        return Floor(
            tuple(part for part in FLOOR_PARTS if any(run.part_seconds(part) is not None for run in fast)),
            Spread.of(run.floor_seconds for run in fast),
            Spread.of(run.floor_seconds / run.lower_seconds for run in fast if run.lower_seconds > 0),
            Spread.of(p.stock.lower_seconds / p.fastpass.floor_seconds for p in self.pairs
                      if p.fastpass.floor_seconds > 0))

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "target": self.target, "identical": self.identical,
            "pairs_identical": sum(p.identical for p in self.pairs), "pairs": len(self.pairs),
            "graph_spec": self.graph_spec, "error": self.error, "relied_on": self.relied_on,
            "summary": {s.key: _jsonable(asdict(s)) for s in self.summaries()},
            "floor": self.floor.to_json(),
            "pair_runs": [{"index": p.index, "identical": p.identical, "problems": list(p.problems),
                           Mode.STOCK.value: p.stock.to_json(), Mode.FASTPASS.value: p.fastpass.to_json()}
                          for p in self.pairs],
        }


@dataclass(frozen=True)
class AblationRow:
    """One fastpass configuration, one lowering, against the stock lowerings of the same case.

    `stock` is the ablation's own stock lowering: the output the configuration must match.
    `timing_stocks` are every stock lowering of the case in this run (the pairs' and `stock`),
    and the ratios divide their median by the configuration's time. Why not `stock` alone: one
    stock lowering carries its own run-to-run noise into every row of the ablation at once
    (measured: a 30.5 s stock SleepNet lowering among pairs at 32.6-34.9 s put three
    configurations at 0.90-0.95x that interleaved pairs then measured at 1.02-1.05x)."""

    model: str
    target: str
    config: str
    features: tuple[str, ...]
    stock: WorkerRun
    run: WorkerRun
    problems: tuple[str, ...]
    timing_stocks: tuple[WorkerRun, ...]

    @property
    def identical(self) -> bool:
        return not self.problems

    def _stock_median(self, read: Callable[[WorkerRun], float]) -> float:
        return statistics.median(read(r) for r in self.timing_stocks)

    @property
    def stock_lower_seconds(self) -> float:
        return self._stock_median(lambda r: r.lower_seconds)

    @property
    def stock_pass_pipeline_seconds(self) -> float:
        return self._stock_median(lambda r: r.pass_pipeline_seconds)

    @property
    def ratio_lower(self) -> float:
        return self.stock_lower_seconds / self.run.lower_seconds

    @property
    def ratio_pipeline(self) -> float:
        return self.stock_pass_pipeline_seconds / max(self.run.pass_pipeline_seconds, 1e-9)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "target": self.target, "config": self.config, "features": list(self.features),
                "identical": self.identical, "problems": list(self.problems), "ratio_lower": self.ratio_lower,
                "ratio_pass_pipeline": self.ratio_pipeline, "lower_seconds": self.run.lower_seconds,
                "pass_pipeline_seconds": self.run.pass_pipeline_seconds,
                "stock_lower_seconds": self.stock_lower_seconds,
                "stock_pass_pipeline_seconds": self.stock_pass_pipeline_seconds,
                "stock_lowerings": len(self.timing_stocks)}


@dataclass(frozen=True)
class BenchResult:
    hash_seed: int
    features: tuple[str, ...]  # fastpass's, as enabled (all of them when the user chose 'all')
    pairs: int  # per case
    cases: tuple[CaseResult, ...]
    ablation: tuple[AblationRow, ...] = field(default=())
    # The machine's 1-minute load average when the run started and ended, and its CPUs: timings
    # on a shared machine mean little without it (the ratios less so: pairs share the load).
    load_at_start: float | None = None
    load_at_end: float | None = None
    cpus: int | None = None
    # The signal that stopped the run (SIGINT, SIGTERM), or None: a stopped run still reports the
    # pairs it finished (an hour of measurements is not thrown away), marked incomplete.
    stopped_by: str | None = None

    @property
    def complete(self) -> bool:
        return self.stopped_by is None

    @property
    def identical(self) -> bool:
        """Every case lowered, and every pair of it and every ablation run gave the same output as stock."""
        return all(c.identical for c in self.cases) and all(r.identical for r in self.ablation)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "fastpass-bench/2", "hash_seed": self.hash_seed, "features": list(self.features),
            "pairs": self.pairs, "identical": self.identical, "complete": self.complete,
            "stopped_by": self.stopped_by, "load_at_start": self.load_at_start,
            "load_at_end": self.load_at_end, "cpus": self.cpus,
            "ratio": "stock/fastpass, per pair, then median/min/max over the pairs",
            "metrics": {m.key: m.label for m in METRICS},
            "cases": [c.to_json() for c in self.cases],
            "ablation": [r.to_json() for r in self.ablation],
        }


def _jsonable(value: Any) -> Any:
    """asdict() output with enums as their values and tuples as lists."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
