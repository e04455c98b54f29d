"""`python -m verify.crosscheck replay FILE`: replay a saved divergent call under crosscheck.

Exit 0 if the replayed call is identical, 1 if it diverges again (or stock fails where it did
not), 2 for bad usage or an unreadable reproducer."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from verify.crosscheck.reproducer import ReproducerError, load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.crosscheck", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    replay = sub.add_parser("replay", help="lower a saved input stock and with fastpass, compare, report")
    replay.add_argument("file", type=Path)
    replay.add_argument("--features", default="", help="fastpass features, comma-separated (default: all)")
    replay.add_argument("--reference-sets", type=int, default=1)
    replay.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    if not args.file.is_file():
        print(f"error: no such reproducer: {args.file}", file=sys.stderr)
        return 2
    try:
        saved = load(args.file)
    except ReproducerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from verify.crosscheck import crosscheck

    features = tuple(f for f in args.features.split(",") if f)
    print(f"replaying {saved.entry_point.value} from {saved.context or args.file}")
    with crosscheck(features=features, reference_sets=args.reference_sets,
                    reproducer_dir=args.file.parent / "replayed") as session:
        session.context = f"replay of {args.file.name}"
        with saved.lowering_context():
            try:
                saved.call()
            except Exception as exc:  # noqa: BLE001 - stock failing is reported, its verdict still stands
                print(f"stock call raised: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    for record in session.records:
        print(record.describe())
        for name, check in record.failed_checks.items():
            for line in check.details[:5]:
                print(f"  {name}: {line}")
    if not session.records:
        print("nothing was crosschecked (the saved call made no lowering)")
        return 1
    return 1 if any(r.divergent for r in session.records) else 0


if __name__ == "__main__":
    sys.exit(main())
