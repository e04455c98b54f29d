"""`python -m verify.crosscheck replay FILE`: replay a saved divergent call under crosscheck
(an alias of `python -m verify replay FILE` with crosscheck's own options).

Exit 0 if the replayed call is identical, 1 if it diverges again (or stock fails where it did
not), 2 for bad usage or an unreadable reproducer. The payload is a pickle: like `verify replay`,
it is unpickled only with `--trust` (verify/report/trust.py)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from verify.crosscheck.replay import replay
from verify.report.reproducer import ReproducerError
from verify.report.trust import authorize, read
from verify.usage import UsageError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.crosscheck", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    replay_parser = sub.add_parser("replay", help="lower a saved input stock and with fastpass, compare, report")
    replay_parser.add_argument("file", type=Path)
    replay_parser.add_argument("--features", default=None,
                               help="fastpass features, comma-separated (default: those it was saved under; "
                                    "'' = all)")
    replay_parser.add_argument("--reference-sets", type=int, default=1)
    replay_parser.add_argument("--trust", action="store_true",
                               help="unpickle the file (a pickle runs the code it names); required")
    replay_parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                               help="where a call that diverges again is saved (default: a new folder under "
                                    "verify-out/replay, never beside FILE)")
    replay_parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    from verify import verbosity

    verbosity.configure(logging.INFO if args.verbose else logging.WARNING)  # verify's loggers, not the root
    try:
        saved = read(args.file)
        for line in authorize(saved, args.trust).what:  # refuses (exit 2) before unpickling unless trusted
            print(f"replay: {line}", file=sys.stderr)
        features = tuple(f for f in args.features.split(",") if f) if args.features is not None else None
        from verify.usage.output_paths import check_output_folder, run_dir_name

        if args.out is not None:
            check_output_folder(args.out, "--out")
        replayed = replay(saved, features, args.reference_sets, out=args.out or run_dir_name(Path("verify-out/replay")))
    except (UsageError, ReproducerError) as exc:
        print(f"verify.crosscheck replay: {exc}", file=sys.stderr)
        return 2
    print(replayed.describe())
    return replayed.exit_status


if __name__ == "__main__":
    sys.exit(main())
