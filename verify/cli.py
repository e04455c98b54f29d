"""`python -m verify`: the command-line contract other tools and CI call.

    python -m verify                      default job: built-in models × {tosa-int, ethos-u55}
    python -m verify run [options]        chosen models, targets, features
    python -m verify run --resume DIR     finish an interrupted run (cases in its journal are kept)
    python -m verify report --from DIR    rebuild report.json / --json / --junit from a run's journal
    python -m verify bench [options]      interleaved stock/fastpass timing, identical output checked
    python -m verify gate [options]       prove targeted_ops annotations skip- and copy-sound
    python -m verify infer module:Class   propose a pass's minimal copy-sound targeted_ops
    python -m verify selftest [options]   the gate's mutation score: wrong annotations gated as CI would
    python -m verify replay REPRODUCER    replay a saved reproducer (fuzz, gate, crosscheck)
    python -m verify fuzz [options]       a fuzz campaign: random graphs, both modes compared; pass coverage
    python -m verify peer [SUITES]        executorch's own Arm tests stock, with fastpass, crosschecked
    python -m verify crosscheck SCRIPT    run a lowering script with every lowering it makes crosschecked
    python -m verify measure-cluster      Ray's per-job overhead here; campaigns projected on 8-128 nodes

Exit status (run, report, bench):
    0    every case `identical` (and every null check ran); bench: output identical in every pair
    1    a case is divergent, nondeterministic or an error, a null check failed to run, the
         run is incomplete (report --from of an interrupted run), or a write was refused (full
         disk, no permission: one line naming the path; the run folder stays resumable)
    2    bad usage, found before any work: unknown model/target/feature, a bad number, an
         output path that cannot be written, a run folder another process is working in; one
         line on stderr
    130  stopped by SIGINT, 143 stopped by SIGTERM: workers killed, reports written from the
         journal of finished cases (resume with --resume DIR)

Each run has a folder of its own (verify-out/<time>-<pid>-<random>, or --out): journal.jsonl
(each finished case, appended as it finishes), report.json, and one artifact folder per case.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from verify.report import verbosity
from verify.usage import UsageError


def main(argv: list[str] | None = None) -> int:
    """Register every command (each module's `add_parser`), parse, run the one asked for (on a Ray
    cluster when one is asked for), and turn a UsageError into one line on stderr and exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, sub = build_parser()
    if not argv:  # the default job
        argv = ["run"]
    args = parser.parse_args(argv)
    verbosity.configure(verbosity.level(args))
    from verify.cluster import on_cluster

    try:
        with on_cluster(args):  # no --cluster (nor RAY_ADDRESS): this machine, as before
            return args.handler(args)
    except UsageError as exc:
        prog = "verify" if args.command in ("run", "report") else f"verify {args.command}"
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2


def build_parser() -> tuple[argparse.ArgumentParser, Any]:
    """The parser of every command (and its subparsers' action): one place, also for the test
    that checks every option has its help."""
    parser = argparse.ArgumentParser(prog="python -m verify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    from verify.commands import bench, crosscheck, fuzz, gate, measure, peer, replay, run, selftest

    run.add_parser(sub)  # `run`
    bench.add_parser(sub)  # `bench`
    run.add_report_parser(sub)  # `report`
    gate.add_parsers(sub)  # `gate` and `infer`
    selftest.add_parser(sub)  # `selftest`
    for command in (replay, fuzz, peer, crosscheck):  # `replay`, `fuzz`, `peer`, `crosscheck`
        command.add_parser(sub)
    measure.add_parser(sub)  # `measure-cluster`
    from verify.cluster import add_cluster_option

    for name in ("run", "gate", "selftest"):  # the campaign commands whose workers may run on a Ray cluster (issue 34)
        add_cluster_option(sub.choices[name])
    verbosity.add_arguments(parser)
    for command_parser in sub.choices.values():
        verbosity.add_arguments(command_parser)
    return parser, sub
