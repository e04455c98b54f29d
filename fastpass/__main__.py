"""`python -m fastpass run [--features F,..] [--trust proven|all] SCRIPT [ARGS]`: run a lowering script
with fastpass on for the whole of it, the way `coverage run` runs one under coverage.

Why a command: a user's script lowers however it likes (`to_edge_transform_and_lower`, a test
pipeline, several models); wrapping it needs no edit of the script, so what is measured is the
script as it is. fastpass is enabled before the script's first line and disabled after its last;
the script runs as `__main__` with `sys.argv` = [SCRIPT, *ARGS] and its folder first on `sys.path`,
as `python SCRIPT ARGS` would run it. Its exit status is the command's (an uncaught exception: the
traceback and 1), and fastpass's totals are printed to stderr at the end, so that the script's own
stdout stays exactly what it prints.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from types import TracebackType
from typing import Any, Callable, Optional


def run_script(script: str, args: list[str]) -> int:
    """Run `script` as `python script args` would, in this process; its exit status."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as exc:
        return _exit_status(exc.code)
    except BaseException as exc:  # noqa: BLE001 - the script's own failure: shown as python would, exit 1
        traceback.print_exception(type(exc), exc, _from_script(exc.__traceback__, script))
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _from_script(tb: Optional[TracebackType], script: str) -> Optional[TracebackType]:
    """`tb` from the script's own first frame on: what `python SCRIPT` would show, without this
    module's and runpy's frames above it (they are the wrapper, not the user's code). None when
    the script has no frame in it (a SyntaxError: python shows none either)."""
    path = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    return tb


def _exit_status(code: Any) -> int:
    """What the interpreter would exit with for `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def summary(stats: dict[str, Any]) -> list[str]:
    """fastpass.stats() as the lines printed at exit."""
    relied_on = stats.get("relied_on") or {}
    by_status: dict[str, int] = {}
    for status in relied_on.values():
        by_status[status] = by_status.get(status, 0) + 1
    statuses = ", ".join(f"{n} {status}" for status, n in sorted(by_status.items())) or "none"
    return [f"fastpass: {stats.get('passes_run', 0)} passes run, {stats.get('passes_skipped', 0)} skipped; "
            f"{stats.get('nodes_copied', 0)} nodes copied, {stats.get('nodes_dispatched', 0)} dispatched; "
            f"FakeTensor cache {stats.get('fakecache_hits', 0)} hits, {stats.get('fakecache_misses', 0)} misses",
            f"fastpass: relied on {len(relied_on)} annotations ({statuses})"]


def _features(text: str) -> tuple[str, ...]:
    from fastpass import FEATURES

    wanted = tuple(f for f in text.split(",") if f)
    unknown = [f for f in wanted if f not in FEATURES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown feature(s) {', '.join(unknown)}; known: {', '.join(FEATURES)}")
    return wanted


def main(argv: list[str] | None = None, run: Callable[[str, list[str]], int] = run_script) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastpass", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run SCRIPT [ARGS] with fastpass on; print its stats at exit",
                       usage="python -m fastpass run [-h] [--features F,..] [--trust {proven,all}] SCRIPT [ARGS]")
    from fastpass import FEATURES

    p.add_argument("--features", type=_features, default=None, metavar="F,..",
                   help=f"fastpass features, comma-separated, of {', '.join(FEATURES)} (default: all of them)")
    p.add_argument("--trust", choices=("proven", "all"), default="proven",
                   help="which annotations fastpass uses: those the proof ledger proves (default), or all")
    p.add_argument("script", nargs="?", help="the Python script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    options = parser.parse_args(argv)
    if options.script is None:  # (argparse's own message would name the script's ARGS as required too)
        p.error("no SCRIPT given")
    if not os.path.isfile(options.script):
        parser.error(f"no such script: {options.script}")
    import fastpass
    from fastpass.annotations import LedgerError

    fastpass.reset_stats()
    try:
        fastpass.enable(options.features, trust=options.trust)
    except LedgerError as exc:  # before the script's first line: one line, nothing run, usage's exit status
        print(f"python -m fastpass run: {exc}", file=sys.stderr)
        return 2
    try:
        status = run(options.script, options.args)
    finally:
        fastpass.disable()
    for line in summary(fastpass.stats()):
        print(line, file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
