"""`python -m verify measure-cluster`: Ray's per-job overhead on this machine, and from it what two
big campaigns would take on 8/32/128 nodes (verify/cluster/README.md, "Measured here, and projected").

Why a command of its own: it reads the campaigns' outputs (a whole-registry `verify gate --json`,
a fuzz campaign's coverage folder) to project them, which the cluster layer below the campaigns
must not import; the measurement (verify.cluster.measure, on a loopback cluster of its own) and
the simulation (verify.cluster.plan) stay there. Exit 0; 2 for bad usage (one line, nothing run).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from verify.commands.arguments import at_least, csv
from verify.usage import UsageError


def add_parser(sub) -> None:
    parser = sub.add_parser("measure-cluster",
                            help="Ray's per-job overhead here (a loopback cluster of its own) and a projection of "
                                 "the registry gate and a big fuzz campaign on 8/32/128 nodes",
                            description="Ray's per-job overhead on this machine (a two-node loopback cluster of its "
                                        "own, stopped at the end), and from it what the registry gate and a big fuzz "
                                        "campaign would take on 8/32/128 nodes.")
    parser.add_argument("--jobs", type=int, default=20, help="trivial jobs timed each way (default %(default)s)")
    parser.add_argument("--gate-json", type=Path, default=Path("/tmp/gate-full.json"),
                        help="a whole-registry `verify gate --json` (default %(default)s; left out when not there)")
    parser.add_argument("--fuzz-graphs", type=int, default=10_000,
                        help="graphs of the projected fuzz campaign (default %(default)s)")
    parser.add_argument("--fuzz-shard", type=int, default=6, help="graphs per fuzz job (tox -e fuzz: 6)")
    parser.add_argument("--fuzz-graph-seconds", type=float, default=10.0,
                        help="mean seconds per graph when no --fuzz-coverage is given (default %(default)s)")
    parser.add_argument("--fuzz-coverage", type=Path, default=None, metavar="DIR",
                        help="a real campaign's coverage folder (verify fuzz --coverage): its per-graph seconds")
    parser.add_argument("--nodes", default="8,32,128", help="node counts projected (default %(default)s)")
    parser.add_argument("--overhead", type=float, default=None, metavar="S",
                        help="skip the measurement: this per-job overhead (with --startup)")
    parser.add_argument("--startup", type=float, default=None, metavar="S",
                        help="with --overhead: a worker's start-up seconds (default 0)")
    parser.add_argument("--json", type=Path, default=None, help="also write inputs and projections here")
    parser.set_defaults(handler=cmd_measure_cluster)


def _node_counts(text: str) -> list[int]:
    try:
        counts = [int(n) for n in csv(text)]
    except ValueError:
        raise UsageError(f"--nodes {text!r}: node counts are whole numbers, comma-separated") from None
    if not counts or min(counts) < 1:
        raise UsageError(f"--nodes {text!r}: at least one node count, each at least 1")
    return counts


def measured_graph_seconds(coverage: Path) -> list[float]:
    """Each graph's seconds inside verification, from a real campaign's coverage folder
    (`verify fuzz --coverage DIR`: one row per graph, with its start and finish)."""
    from verify.fuzz.coverage import read_coverage

    rows, _ = read_coverage(coverage)
    return [r["finished"] - r["started"] for r in rows if r.get("started") and r.get("finished")]


def cmd_measure_cluster(args) -> int:
    for value, least, option in ((args.jobs, 1, "--jobs"), (args.fuzz_graphs, 1, "--fuzz-graphs"),
                                 (args.fuzz_shard, 1, "--fuzz-shard"),
                                 (args.fuzz_graph_seconds, 0, "--fuzz-graph-seconds"),
                                 (args.overhead, 0, "--overhead"), (args.startup, 0, "--startup")):
        at_least(value, least, option)
    nodes = _node_counts(args.nodes)
    if args.fuzz_coverage is not None and not args.fuzz_coverage.is_dir():
        raise UsageError(f"--fuzz-coverage {args.fuzz_coverage}: no such folder")
    if args.json is not None:
        from verify.usage.output_paths import check_output_file

        check_output_file(args.json, "--json")
    from verify.cluster.measure import Overhead, fuzz_campaign, gate_campaigns, measure_overhead
    from verify.cluster.plan import Stragglers, project, table

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
                   for c in campaigns for n in nodes]
    print("\n".join(notes))
    print(table(projections))
    if args.json:
        args.json.write_text(json.dumps({"overhead": {**asdict(overhead), "per_job": overhead.per_job},
                                         "notes": notes, "projections": [asdict(p) for p in projections]}, indent=1))
    return 0
