"""`-v`/`-q` for every command, and the one place that configures logging.

Diagnostics (what the harness is doing, why it chose something) go through
`logging.getLogger(__name__)` in each module; results (the verdict tables, the summaries, usage
errors) are printed. The default level is INFO, so progress stays on the terminal; `-q` keeps
only warnings and errors, `-v` adds debugging detail.
"""

from __future__ import annotations

import argparse
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add -v/-q to `parser`. SUPPRESS as default: a sub-command's parser must not reset what
    the top-level parser already counted (`python -m verify -v gate` and `... gate -v` both work)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                       help="more diagnostics (debug logging)")
    group.add_argument("-q", "--quiet", action="count", default=argparse.SUPPRESS,
                       help="only warnings and errors on stderr (no progress)")


def level(args: argparse.Namespace) -> int:
    return logging.INFO - 10 * getattr(args, "verbose", 0) + 10 * getattr(args, "quiet", 0)


# The loggers the harness configures: its own and fastpass's. Never the root logger: that would
# turn on every library's INFO lines (executorch's partitioner logs each lowering) and change a
# crosschecked script's own logging.
OWN_LOGGERS = ("verify", "fastpass", "generators")


class _Stderr(logging.StreamHandler):
    """The one handler `configure` puts on each of OWN_LOGGERS (told apart from anyone else's)."""


def configure(level: int = logging.INFO) -> None:
    """Messages only (no logger names): they read as the command's own lines on stderr. Sets
    OWN_LOGGERS' level and handler (again on every call: the last call wins), nothing else.

    They stop propagating to the root logger while they have that handler: a handler on the
    root, put there by a crosschecked script (`logging.basicConfig`) or by the library it calls
    (a stock Ethos-U lowering installs one), would print each of verify's lines a second time."""
    level = max(logging.DEBUG, min(level, logging.ERROR))
    reset()
    for name in OWN_LOGGERS:
        handler = _Stderr(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False


def reset() -> None:
    """Undo `configure`: OWN_LOGGERS without its handler, at NOTSET (the root logger's level),
    propagating to the root again (so that, e.g., pytest's caplog sees them)."""
    for name in OWN_LOGGERS:
        logger = logging.getLogger(name)
        for handler in [h for h in logger.handlers if isinstance(h, _Stderr)]:
            logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True

