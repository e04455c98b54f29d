"""Verify random graphs: one graph, both modes, every check — and keep what fails.

Used by the fuzz tests (Hypothesis drives and shrinks the graphs) and by
`python -m verify run --random N`. Both modes run in this process under its hash seed:
that is what makes a graph cost seconds, not tens of seconds.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from verify.compare.checks import CheckResult, compare, first_divergent_pass
from verify.lowering.heap import freeze_long_lived_heap, release_long_lived_heap
from verify.lowering.lower import LoweringResult, lower
from verify.lowering.quantize import RANDOM_GRAPH_CALIBRATION, PrepareError, export_program
from verify.lowering.targets import get_target


@dataclass
class GraphVerdict:
    spec: object
    target: str
    checks: dict[str, CheckResult]
    full: LoweringResult
    fast: LoweringResult
    started: float = 0.0  # wall clock (time.time) around the whole verification
    finished: float = 0.0
    prepare_seconds: float = 0.0  # build + export + quantize, shared by both modes

    @property
    def failed(self) -> list[str]:
        return [name for name, r in self.checks.items() if not r.passed]

    @property
    def first_divergent_pass(self) -> str | None:
        return first_divergent_pass(self.full, self.fast, self.checks)

    def explain(self) -> str:
        lines = [f"{self.target}: fastpass differs from stock in {', '.join(self.failed)}; "
                 f"first divergent pass: {self.first_divergent_pass}"]
        for name in self.failed:
            lines += [f"  {name}: {d}" for d in self.checks[name].details[:4]]
        return "\n".join(lines)


def verify_graph(spec, target: str = "tosa-int", features: tuple[str, ...] = (),
                 reference_sets: int = 1, calibration: str = RANDOM_GRAPH_CALIBRATION) -> GraphVerdict:
    """Lower `spec` stock and with fastpass and compare. Export/quantize failures raise GeneratorBug:
    a drawn graph that does not build is the generator's bug, never silently filtered."""
    from generators.random import GeneratorBug

    started = time.time()
    chosen = get_target(target)
    module, inputs = spec.build()
    try:
        program = export_program(module, inputs, chosen, calibration)
    except PrepareError as exc:
        raise GeneratorBug(f"drawn graph does not build for {target}: {exc}", spec) from exc
    prepared = time.time()
    full = lower(program, chosen, "full", reference_sets=reference_sets)
    fast = lower(program, chosen, "fast", features, reference_sets=reference_sets)
    return GraphVerdict(spec, target, compare(full, fast), full, fast, started, time.time(), prepared - started)


def save_reproducer(spec, folder: Path, reason: str, target: str = "tosa-int",
                    calibration: str = RANDOM_GRAPH_CALIBRATION) -> Path:
    """A runnable .py: the model, its inputs, and the one command that replays the case."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"graph-{spec.fingerprint()}.py"
    command = (f"python -m verify run --models none --model {path}:make_model --targets {target} "
               f"--calibration {calibration} --null-seed -1")
    header = "\n".join("# " + line for line in
                       [f"Reproducer saved by the fastpass fuzz tests. Replay: {command}", "", *reason.splitlines()])
    path.write_text(header + "\n" + spec.to_python())
    return path


# ---- pass coverage ---------------------------------------------------------------------------

def coverage_file() -> Path | None:
    folder = os.environ.get("FASTPASS_COVERAGE_DIR")
    if not folder:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return Path(folder) / f"coverage-{worker}.jsonl"


def record_coverage(verdict: GraphVerdict) -> None:
    """One line per verified graph: for every pass, whether stock and fastpass ran it."""
    path = coverage_file()
    if path is None:
        return
    stock = sorted({s.pass_name for s in verdict.full.observation.steps if s.index >= 0})
    fast = defaultdict(lambda: [0, 0])
    for record in (verdict.fast.fastpass_stats or {}).get("per_pass", []):
        fast[record["name"]][0 if record.get("skipped") else 1] += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps({"graph": verdict.spec.fingerprint(), "target": verdict.target,
                            "started": verdict.started, "finished": verdict.finished,
                            "ops": len(verdict.spec.ops), "seconds": {"prepare": verdict.prepare_seconds,
                                                                      "stock": verdict.full.seconds,
                                                                      "fastpass": verdict.fast.seconds},
                            "stock": stock,
                            "fast": {k: {"skipped": v[0], "ran": v[1]} for k, v in fast.items()}}) + "\n")


def summarize_coverage(folder: Path) -> str:
    rows = []
    workers = 0
    for path in sorted(folder.glob("coverage-*.jsonl")):
        workers += 1
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    if not rows:
        return "pass coverage: no graphs recorded"
    stock_ran: dict[str, int] = defaultdict(int)
    fast_ran: dict[str, int] = defaultdict(int)
    for row in rows:
        for name in row["stock"]:
            stock_ran[name] += 1
        for name, counts in row["fast"].items():
            if counts["ran"]:
                fast_ran[name] += 1
    names = sorted(set(stock_ran) | set(fast_ran))
    width = max(len(n) for n in names)
    lines = [f"pass coverage over {len(rows)} graphs (graphs in which the pass ran; with skip on, "
             "'fast ran' = graphs that contained its targeted ops)",
             f"{'pass':<{width}}  stock ran  fast ran"]
    lines += [f"{n:<{width}}  {stock_ran[n]:>9}  {fast_ran[n]:>8}" for n in names]
    never = [n for n in names if fast_ran[n] == 0]
    lines.append(f"never exercised with fastpass on ({len(never)}): {', '.join(never) or '-'}")
    targets = sorted({r["target"] for r in rows})
    lines += [_throughput(target, [r for r in rows if r["target"] == target], workers) for target in targets]
    if len(targets) > 1:  # per-target walls overlap when targets share the workers
        lines.append(_throughput("all targets", rows, workers))
    return "\n".join(line for line in lines if line)


def _throughput(target: str, rows: list[dict], workers: int) -> str:
    """Graphs/min for one target, with the graphs' size and where a graph's time went.

    Wall time runs from the first start to the last finish of this target's graphs, so it
    is a per-target figure only when the target had the workers to itself (tox -e fuzz
    with FASTPASS_FUZZ_TARGETS=tosa-int); otherwise read the "all targets" line."""
    timed = [r for r in rows if r.get("started") and r.get("finished")]
    if not timed:
        return ""
    wall = max(r["finished"] for r in timed) - min(r["started"] for r in timed)
    busy = sum(r["finished"] - r["started"] for r in timed)
    text = (f"throughput {target}: {len(timed)} graphs fully verified (both modes, every check, reference model) "
            f"in {wall / 60:.1f} min wall on {workers} worker(s) = {len(timed) / max(wall, 1e-9) * 60:.1f} graphs/min; "
            f"{busy / len(timed):.1f} s per graph inside verification")
    split = [r for r in timed if "seconds" in r]
    if split:
        mean = {k: sum(r["seconds"][k] for r in split) / len(split) for k in ("prepare", "stock", "fastpass")}
        ops = sum(r["ops"] for r in split) / len(split)
        text += (f"\n  graphs of {ops:.1f} ops on average; per graph: prepare {mean['prepare']:.2f} s, "
                 f"stock lowering {mean['stock']:.2f} s, fastpass lowering {mean['fastpass']:.2f} s (both with "
                 f"per-pass snapshots); final snapshots, reference model and checks the rest; "
                 f"stock lowering alone caps this at "
                 f"{60 / max(mean['stock'], 1e-9) * workers:.0f} graphs/min on {workers} worker(s)")
    return text


# ---- the fuzz property -----------------------------------------------------------------------

def fuzz(target: str, repro_dir: Path, max_ops: int = 12, features: tuple[str, ...] = (),
         settings=None, seed: str | None = None) -> None:
    """Hypothesis over random graphs: every graph must lower identically in both modes.

    On failure Hypothesis shrinks the graph; the last failing graph it tries is the minimal
    one, and that one is saved as a runnable reproducer named in the assertion message.
    `seed` pins the draw (Hypothesis's @seed), e.g. to give parallel shards distinct graphs.
    """
    from hypothesis import given
    from hypothesis import seed as hypothesis_seed

    from generators.random import GeneratorBug, graphs

    last: dict = {}

    def prop(spec):
        try:
            verdict = verify_graph(spec, target, features)
        except GeneratorBug as exc:
            last.update(spec=spec, why=f"generator bug: {exc}")
            raise
        record_coverage(verdict)
        if verdict.failed:
            last.update(spec=spec, why=verdict.explain())
            raise AssertionError(verdict.explain())
        del verdict
        freeze_long_lived_heap()  # once, after the first graph: every import is done by now

    test = given(graphs(max_ops=max_ops))(prop)
    if settings is not None:
        test = settings(test)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    try:
        test()
    except BaseException as exc:
        if "spec" not in last:
            raise
        path = save_reproducer(last["spec"], repro_dir, last["why"], target)
        raise AssertionError(f"{last['why']}\nminimal reproducer: {path}") from exc
    finally:
        release_long_lived_heap()


def draw_graphs(count: int, seed: int, max_ops: int = 12) -> list:
    """`count` distinct random graphs, the same ones for the same seed (for `run --random`)."""
    from hypothesis import HealthCheck, Phase, given
    from hypothesis import seed as hypothesis_seed
    from hypothesis import settings as hypothesis_settings

    from generators.random import graphs

    drawn: dict[str, object] = {}

    @hypothesis_seed(seed)
    @hypothesis_settings(max_examples=max(count * 3, 10), database=None, deadline=None, phases=[Phase.generate],
                         suppress_health_check=list(HealthCheck), derandomize=False)
    @given(graphs(max_ops=max_ops))
    def collect(spec):
        if len(drawn) < count:
            drawn.setdefault(spec.fingerprint(), spec)

    collect()
    return list(drawn.values())
