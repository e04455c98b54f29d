"""`python -m verify crosscheck [OPTIONS] SCRIPT [ARGS]`: run a lowering script with every lowering it
makes crosschecked (verify.crosscheck), the way `coverage run` runs a script under coverage.

Why a command: crosscheck is otherwise a context manager the script must be edited to use, or the
pytest plugin for a test suite; a user's own script is checked as it is. The script gets stock's
results (crosscheck returns what the stock call returned, and the fastpass run works on a deep
copy), so its output is what `python SCRIPT ARGS` prints; the summary goes to stderr at exit.
Exit status: the script's own when it failed; else 1 if a lowering diverged, 0 if none did.
"""

from __future__ import annotations

import sys
from pathlib import Path

from verify.commands import arguments
from verify.usage import UsageError

DEFAULT_REPRODUCERS = Path("verify-out/crosscheck")


def add_parser(sub) -> None:
    p = sub.add_parser("crosscheck", help="run SCRIPT [ARGS] with every lowering it makes crosschecked",
                       usage="python -m verify crosscheck [-h] [OPTIONS] SCRIPT [ARGS]",
                       description="Run a lowering script with every lowering it makes crosschecked against "
                                   "fastpass; the script's results unchanged, a summary at exit.")
    p.add_argument("--features", default="all", help="fastpass features of the fastpass runs (default: all)")
    p.add_argument("--trust", choices=("proven", "all"), default="proven",
                   help="which annotations the fastpass runs use: those the proof ledger proves (default), or all")
    p.add_argument("--reproducers", type=Path, default=DEFAULT_REPRODUCERS, metavar="DIR",
                   help=f"where divergent calls' reproducers are saved (default {DEFAULT_REPRODUCERS})")
    p.add_argument("--reference-sets", type=int, default=1,
                   help="TOSA reference-model input sets per delegate (default 1)")
    p.add_argument("--json", type=Path, default=None, help="write the records and totals here")
    p.add_argument("--no-fresh-recheck", dest="fresh_recheck", action="store_false",
                   help="do not replay each divergent call in a fresh process before reporting it")
    p.add_argument("script", type=Path, nargs="?", help="the Python script to run")
    p.add_argument("args", nargs="...", help="the script's own arguments")
    p.set_defaults(handler=cmd_crosscheck)


def cmd_crosscheck(args) -> int:
    from fastpass.__main__ import run_script
    from verify.crosscheck import crosscheck
    from verify.usage.output_paths import check_output_file, check_output_folder
    from verify.report.document import write_document
    from verify.report.crosscheck import summary_lines, totals

    if args.script is None:  # (argparse would name the script's optional ARGS as required too)
        raise UsageError("no SCRIPT given: python -m verify crosscheck [OPTIONS] SCRIPT [ARGS]")
    features = arguments.features(args.features)
    arguments.proof_ledger(args.trust)
    if not args.script.is_file():
        raise UsageError(f"no such script: {args.script}")
    if args.reference_sets < 0:
        raise UsageError(f"--reference-sets must be 0 or more, got {args.reference_sets}")
    check_output_folder(args.reproducers, "--reproducers")
    if args.json is not None:
        check_output_file(args.json, "--json")
    with crosscheck(features=features, reference_sets=args.reference_sets, reproducer_dir=args.reproducers,
                    fresh_recheck=args.fresh_recheck, trust=args.trust) as session:
        session.context = args.script.name
        status = run_script(str(args.script), list(args.args))
    records = [record.to_json() for record in session.records]
    for line, _colour in summary_lines(records):
        print(f"crosscheck: {line}", file=sys.stderr)
    counts = totals(records)
    if args.json is not None:
        write_document(args.json, {"script": str(args.script), "args": list(args.args),
                                   "script_exit_status": status, "crosscheck": counts, "records": records})
    if status != 0:
        return status
    return 1 if counts["divergent"] else 0
