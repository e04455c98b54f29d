"""Pass coverage of a fuzz campaign: per target and per pass, what stock did and what fastpass did.

Each verified graph appends one JSON line (`record_coverage`); `summarize_coverage` reads the
lines of every worker and prints, per target, one row per pass:

- `stock`: graphs in which the stock lowering invoked the pass;
- `presented`: graphs in which the pass's targeted ops were in the graph it received (stock):
  the graph reached the pass in the form it rewrites (`all` for passes without targeted ops);
- `fast ran`: graphs in which the pass ran with fastpass on (not skipped);
- `skipped`: pass calls fastpass skipped; `copied`: nodes fastpass copied in it;
- `acted`: graphs in which fastpass skipped the pass or copied at least one of its nodes.

Then the annotated passes never exercised with fastpass on (never ran) and those whose targeted
ops were never presented, each with its reason when generators.random lists it unreachable.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from verify.lowering.mode import Mode


def coverage_file() -> Path | None:
    folder = os.environ.get("FASTPASS_COVERAGE_DIR")
    if not folder:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return Path(folder) / f"coverage-{worker}.jsonl"


@functools.lru_cache(maxsize=1)
def annotated_targeted_ops() -> dict[str, frozenset[str]]:
    """Class name -> targeted op names (``aten.add.Tensor``) of every annotated pass."""
    from fastpass.annotations import lookup
    from verify.gate.passes import annotated_passes, op_name

    return {cls.__name__: frozenset(op_name(o) for o in (lookup(cls).targeted_ops or ()))
            for cls in annotated_passes().values()}


_EDGE_TARGET = re.compile(r"<EdgeOpOverload: ([^>]+)>")


def _op_names(snapshot) -> set[str]:
    """Op names (``aten.add.Tensor``, ``tosa.CONV2D.default``) of a snapshot's call_function nodes."""
    names = set()
    for node in snapshot.nodes:
        if node.op != "call_function":
            continue
        match = _EDGE_TARGET.search(node.target)
        names.add(match.group(1) if match else node.target.rsplit(":", 1)[-1])
    return names


def presented_passes(observation) -> list[str]:
    """Annotated passes whose targeted ops were in the graph the stock lowering gave them."""
    targeted = annotated_targeted_ops()
    previous: dict[tuple[str, str], str | None] = {}
    ops_of: dict[str, set[str]] = {}
    found = set()
    for step in sorted(observation.steps, key=lambda s: s.seq):
        key = (step.phase, step.manager)
        received = previous.get(key)
        previous[key] = step.digest
        wanted = targeted.get(step.pass_name)
        if step.index < 0 or not wanted or received is None or received not in observation.snapshots:
            continue
        if received not in ops_of:
            ops_of[received] = _op_names(observation.snapshots[received])
        if wanted & ops_of[received]:
            found.add(step.pass_name)
    return sorted(found)


def record_coverage(verdict) -> None:
    """One line per verified graph: for every pass, what stock and fastpass did with it."""
    path = coverage_file()
    if path is None:
        return
    stock = sorted({s.pass_name for s in verdict.stock.observation.steps if s.index >= 0})
    fast: dict[str, dict[str, int]] = defaultdict(lambda: {"skipped": 0, "ran": 0, "copied": 0})
    for record in (verdict.fastpass.fastpass_stats or {}).get("per_pass", []):
        counts = fast[record["name"]]
        counts["skipped" if record.get("skipped") else "ran"] += 1
        counts["copied"] += int(record.get("copied", 0))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps({"graph": verdict.spec.fingerprint(), "target": verdict.target,
                            "started": verdict.started, "finished": verdict.finished,
                            "ops": len(verdict.spec.ops), "op_names": sorted(set(verdict.spec.op_names())),
                            "seconds": {"prepare": verdict.prepare_seconds, Mode.STOCK: verdict.stock.seconds,
                                        Mode.FASTPASS: verdict.fastpass.seconds},
                            Mode.STOCK: stock, "presented": presented_passes(verdict.stock.observation),
                            Mode.FASTPASS: dict(fast)}) + "\n")


@dataclass
class PassCoverage:
    """What one target's graphs did with one pass (see the module docstring for each count)."""

    stock: int = 0
    presented: int = 0
    fast_ran: int = 0
    skipped: int = 0
    copied: int = 0
    acted: int = 0


@dataclass
class TargetCoverage:
    target: str
    graphs: int = 0
    passes: dict[str, PassCoverage] = field(default_factory=lambda: defaultdict(PassCoverage))


def read_coverage(folder: Path) -> tuple[list[dict], int]:
    """(rows of every worker's file, number of worker files)."""
    rows, workers = [], 0
    for path in sorted(folder.glob("coverage-*.jsonl")):
        workers += 1
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows, workers


def tally(rows: list[dict]) -> dict[str, TargetCoverage]:
    per_target: dict[str, TargetCoverage] = {}
    for row in rows:
        cov = per_target.setdefault(row["target"], TargetCoverage(row["target"]))
        cov.graphs += 1
        for name in row[Mode.STOCK]:
            cov.passes[name].stock += 1
        for name in row.get("presented", []):
            cov.passes[name].presented += 1
        # "fast": what files written before the one mode vocabulary call it
        for name, counts in row.get(Mode.FASTPASS, row.get("fast", {})).items():
            p = cov.passes[name]
            p.fast_ran += bool(counts["ran"])
            p.skipped += counts["skipped"]
            p.copied += counts.get("copied", 0)
            p.acted += bool(counts["skipped"] or counts.get("copied", 0))
    return dict(sorted(per_target.items()))


def _target_table(cov: TargetCoverage, targeted: dict[str, frozenset[str]]) -> list[str]:
    names = sorted(cov.passes)
    width = max([len(n) for n in names] + [4])
    lines = [f"pass coverage, {cov.target}: {cov.graphs} graphs (graphs in which; skipped = calls, copied = nodes; "
             "* = annotated)",
             f"{'pass':<{width}}    stock  presented  fast ran  skipped   copied    acted"]
    for n in names:
        p = cov.passes[n]
        presented = "all" if n in targeted and not targeted[n] else ("-" if n not in targeted else str(p.presented))
        mark = "*" if n in targeted else " "
        lines.append(f"{n:<{width}} {mark} {p.stock:>7}  {presented:>9}  {p.fast_ran:>8}  {p.skipped:>7}  "
                     f"{p.copied:>7}  {p.acted:>7}")
    return lines


def _reason(name: str, campaign_targets: set[str], invoked: bool) -> str:
    from generators.random import reach

    if name in reach.UNREACHABLE:
        return f"listed unreachable: {reach.UNREACHABLE[name]}"
    only = reach.TARGET_ONLY.get(name)
    if only and not set(only) & campaign_targets:
        return f"acts only on {', '.join(only)}, not in this campaign"
    if not invoked:
        return "not invoked by this campaign's pipelines, and NOT listed unreachable"
    return "NOT listed unreachable: a generator gap (or too few graphs)"


def summarize_coverage(folder: Path) -> str:
    rows, workers = read_coverage(folder)
    if not rows:
        return "pass coverage: no graphs recorded"
    targeted = annotated_targeted_ops()
    per_target = tally(rows)
    lines: list[str] = []
    for cov in per_target.values():
        lines += _target_table(cov, targeted)
    invoked = {n for cov in per_target.values() for n, p in cov.passes.items() if p.stock or p.fast_ran or p.skipped}
    ran = {n for cov in per_target.values() for n, p in cov.passes.items() if p.fast_ran}
    presented = {n for cov in per_target.values() for n, p in cov.passes.items() if p.presented}
    campaign = set(per_target)
    never_ran = sorted(n for n in targeted if n not in ran)
    lines.append(f"annotated passes never exercised with fastpass on (never ran, {len(rows)} graphs on "
                 f"{', '.join(sorted(campaign))}): {len(never_ran)} of {len(targeted)}; "
                 f"{len([n for n in never_ran if n in invoked])} of them invoked by the pipelines")
    lines += [f"  {n}: {_reason(n, campaign, n in invoked)}" for n in never_ran]
    never_presented = sorted(n for n, ops in targeted.items() if ops and n not in presented and n not in never_ran)
    lines.append(f"annotated passes that ran with fastpass on but never received their targeted ops: "
                 f"{len(never_presented)}")
    lines += [f"  {n}: {_reason(n, campaign, True)}" for n in never_presented]
    lines += [_throughput(target, [r for r in rows if r["target"] == target], workers) for target in per_target]
    if len(per_target) > 1:  # per-target walls overlap when targets share the workers
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
        mean = {k: sum(r["seconds"][k] for r in split) / len(split) for k in ("prepare", Mode.STOCK, Mode.FASTPASS)}
        ops = sum(r["ops"] for r in split) / len(split)
        text += (f"\n  graphs of {ops:.1f} ops on average; per graph: prepare {mean['prepare']:.2f} s, "
                 f"stock lowering {mean[Mode.STOCK]:.2f} s, fastpass lowering {mean[Mode.FASTPASS]:.2f} s (both with "
                 f"per-pass snapshots); final snapshots, reference model and checks the rest; "
                 f"stock lowering alone caps this at "
                 f"{60 / max(mean['stock'], 1e-9) * workers:.0f} graphs/min on {workers} worker(s)")
    return text
