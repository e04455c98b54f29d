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


def configure(level: int = logging.INFO) -> None:
    """Messages only (no logger names): they read as the command's own lines on stderr."""
    logging.basicConfig(level=max(logging.DEBUG, min(level, logging.ERROR)), format="%(message)s",
                        stream=sys.stderr, force=True)
