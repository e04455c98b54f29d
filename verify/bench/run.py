"""Run the benchmark: interleaved pairs (stock, fastpass) of fresh processes, same hash seed.

Every pair is also checked for identical output (delegate bytes, delegate TOSA, final graph,
same quantized program): a fast number with a different output is a failure, not a result.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from fastpass import FEATURES as ALL_FEATURES
from verify.lowering.mode import Mode


@dataclass
class BenchOptions:
    model: str = "sleepnet"
    target: str = "ethos-u55"
    pairs: int = 3
    features: tuple[str, ...] = ()
    hash_seed: int = 0
    ablation: bool = False
    timeout: float = 1800.0
    work_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fastpass-bench-")))


class BenchError(RuntimeError):
    pass


def _lower_in_fresh_process(options: BenchOptions, mode: Mode, features: tuple[str, ...], tag: str) -> dict:
    """One lowering in a fresh process, started by verify.launcher like every harness worker
    (own process group: nothing it starts outlives a timeout, a stop or the bench itself)."""
    from verify.launcher import WorkerTimeout, launch
    from verify.report.atomic import write_text

    job = {"model": options.model, "target": options.target, "mode": mode, "features": list(features)}
    job_path, out_path = options.work_dir / f"{tag}.job.json", options.work_dir / f"{tag}.out.json"
    write_text(job_path, json.dumps(job))
    log_path = options.work_dir / f"{tag}.log"
    try:
        returncode = launch("verify.bench.worker", [str(job_path), str(out_path)], log_path=log_path,
                            env={"PYTHONHASHSEED": str(options.hash_seed)}, timeout=options.timeout)
    except WorkerTimeout:
        raise BenchError(f"{tag}: timed out after {options.timeout:.0f} s") from None
    if returncode != 0 or not out_path.exists():
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
        raise BenchError(f"{tag}: lowering process failed (exit {returncode}); log tail:\n{tail}")
    return json.loads(out_path.read_text())


def _identity(stock: dict, fast: dict) -> list[str]:
    problems = []
    for key in ("program_digest", "payload_digests", "delegate_tosa_digests", "final_graph_digest"):
        if stock[key] != fast[key]:
            problems.append(f"{key} differs")
    return problems


def _spread(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _per_node_cost(stats: dict | None, seconds_key: str, count_key: str) -> float | None:
    seconds, count = (stats or {}).get(seconds_key), (stats or {}).get(count_key)
    return seconds / count if seconds is not None and count else None


def _summary(runs: list[dict]) -> dict:
    stats = [r["fastpass_stats"] or {} for r in runs]
    pick = lambda key: _spread([s.get(key) for s in stats])  # noqa: E731
    return {
        "lower_seconds": _spread([r["lower_seconds"] for r in runs]),
        "pass_pipeline_seconds": _spread([r["pass_pipeline_seconds"] for r in runs]),
        "pass_invocations": _spread([r["pass_invocations"] for r in runs]),
        "passes_run": pick("passes_run"), "passes_skipped": pick("passes_skipped"),
        "nodes_copied": pick("nodes_copied"), "nodes_dispatched": pick("nodes_dispatched"),
        "fakecache_hits": pick("fakecache_hits"), "fakecache_misses": pick("fakecache_misses"),
        "seconds_per_copied_node": _spread([_per_node_cost(s, "copy_seconds", "nodes_copied") for s in stats]),
        "seconds_per_dispatched_node": _spread([_per_node_cost(s, "dispatch_seconds", "nodes_dispatched") for s in stats]),
    }


def ablation_configs() -> list[tuple[str, tuple[str, ...]]]:
    alone = [(f"{f} alone", (f,)) for f in ALL_FEATURES]
    cumulative = [(" + ".join(ALL_FEATURES[: i + 1]), ALL_FEATURES[: i + 1]) for i in range(1, len(ALL_FEATURES))]
    return alone + cumulative


def run_bench(options: BenchOptions, progress: Callable[[str], None] = lambda s: None) -> dict:
    options.work_dir.mkdir(parents=True, exist_ok=True)
    pairs = []
    for i in range(options.pairs):
        progress(f"pair {i + 1}/{options.pairs}: stock ...")
        stock = _lower_in_fresh_process(options, Mode.STOCK, (), f"pair{i}-{Mode.STOCK}")
        progress(f"pair {i + 1}/{options.pairs}: stock {stock['lower_seconds']:.1f} s; fastpass ...")
        fast = _lower_in_fresh_process(options, Mode.FASTPASS, options.features, f"pair{i}-{Mode.FASTPASS}")
        problems = _identity(stock, fast)
        pair = {Mode.STOCK.value: stock, Mode.FASTPASS.value: fast, "identical": not problems, "problems": problems,
                "ratio_lower": stock["lower_seconds"] / fast["lower_seconds"],
                "ratio_passes": stock["pass_pipeline_seconds"] / max(fast["pass_pipeline_seconds"], 1e-9)}
        pairs.append(pair)
        progress(f"pair {i + 1}/{options.pairs}: fastpass {fast['lower_seconds']:.1f} s, "
                 f"lower() ratio {pair['ratio_lower']:.2f}x, pass pipeline ratio {pair['ratio_passes']:.2f}x, "
                 f"{'identical' if not problems else 'NOT IDENTICAL: ' + ', '.join(problems)}")
    result = {
        "model": options.model, "target": options.target, "hash_seed": options.hash_seed,
        "features": list(options.features) or list(ALL_FEATURES), "pairs": len(pairs),
        "identical": all(p["identical"] for p in pairs),
        "ratio_lower_median": statistics.median(p["ratio_lower"] for p in pairs),
        "ratio_lower_range": [min(p["ratio_lower"] for p in pairs), max(p["ratio_lower"] for p in pairs)],
        "ratio_passes_median": statistics.median(p["ratio_passes"] for p in pairs),
        "ratio_passes_range": [min(p["ratio_passes"] for p in pairs), max(p["ratio_passes"] for p in pairs)],
        **{mode.value: _summary([p[mode] for p in pairs]) for mode in Mode},
        "pair_details": [{k: v for k, v in p.items() if k not in tuple(Mode)} for p in pairs],
        "per_pass_last_pair": {mode.value: pairs[-1][mode]["per_pass"] for mode in Mode},
    }
    if options.ablation:
        result["ablation"] = _run_ablation(options, progress)
    return result


def _run_ablation(options: BenchOptions, progress) -> list[dict]:
    """One round: stock, then each configuration, each in a fresh process; ratio against that stock."""
    progress("ablation: stock ...")
    stock = _lower_in_fresh_process(options, Mode.STOCK, (), f"ablation-{Mode.STOCK}")
    rows = []
    for name, features in ablation_configs():
        progress(f"ablation: {name} ...")
        run = _lower_in_fresh_process(options, Mode.FASTPASS, features, "ablation-" + "-".join(features))
        rows.append({"config": name, "features": list(features), "lower_seconds": run["lower_seconds"],
                     "pass_pipeline_seconds": run["pass_pipeline_seconds"],
                     "ratio_lower": stock["lower_seconds"] / run["lower_seconds"],
                     "ratio_passes": stock["pass_pipeline_seconds"] / max(run["pass_pipeline_seconds"], 1e-9),
                     "identical": not _identity(stock, run)})
    return rows


def format_table(result: dict) -> str:
    s, f = result[Mode.STOCK], result[Mode.FASTPASS]
    fmt = lambda d, unit="": "-" if d["median"] is None else (  # noqa: E731
        f"{d['median']:.3g}{unit} ({d['min']:.3g}–{d['max']:.3g})")
    rows = [
        ("lower() seconds", fmt(s["lower_seconds"]), fmt(f["lower_seconds"])),
        ("ARM pass pipeline seconds", fmt(s["pass_pipeline_seconds"]), fmt(f["pass_pipeline_seconds"])),
        ("pass invocations", fmt(s["pass_invocations"]), fmt(f["pass_invocations"])),
        ("passes run / skipped", "all / 0", f"{fmt(f['passes_run'])} / {fmt(f['passes_skipped'])}"),
        ("nodes copied / dispatched", "0 / all", f"{fmt(f['nodes_copied'])} / {fmt(f['nodes_dispatched'])}"),
        ("ms per copied node", "-", fmt({k: v * 1e3 if v is not None else None
                                          for k, v in f["seconds_per_copied_node"].items()})),
        ("ms per dispatched node", "-", fmt({k: v * 1e3 if v is not None else None
                                              for k, v in f["seconds_per_dispatched_node"].items()})),
        ("FakeTensor cache hits / misses", "-", f"{fmt(f['fakecache_hits'])} / {fmt(f['fakecache_misses'])}"),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"{result['model']} on {result['target']}, {result['pairs']} interleaved pairs, "
             f"PYTHONHASHSEED={result['hash_seed']}, features {','.join(result['features'])}",
             f"{'':<{width}}  {'stock median (min–max)':<28}  fastpass median (min–max)"]
    lines += [f"{a:<{width}}  {b:<28}  {c}" for a, b, c in rows]
    lines.append(f"lower() ratio stock/fastpass: median {result['ratio_lower_median']:.2f}x "
                 f"(range {result['ratio_lower_range'][0]:.2f}–{result['ratio_lower_range'][1]:.2f})")
    lines.append(f"ARM pass pipeline ratio:      median {result['ratio_passes_median']:.2f}x "
                 f"(range {result['ratio_passes_range'][0]:.2f}–{result['ratio_passes_range'][1]:.2f})")
    lines.append("output identical in every pair: " + ("yes" if result["identical"] else "NO"))
    for row in result.get("ablation", []):
        lines.append(f"  ablation {row['config']:<36} lower() {row['ratio_lower']:.2f}x  passes "
                     f"{row['ratio_passes']:.2f}x  {'identical' if row['identical'] else 'NOT IDENTICAL'}")
    return "\n".join(lines)
