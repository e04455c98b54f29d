"""`python -m verify peer [OPTIONS] [SUITES]`: executorch's own Arm tests in each mode, compared
(verify.peer; `python -m verify.peer` is the same command). Registered here so that every command
is one `python -m verify` away and lists itself in `python -m verify --help`."""

from __future__ import annotations


def add_parser(sub) -> None:
    from verify import peer

    p = sub.add_parser("peer", help="run executorch's Arm tests stock, with fastpass and crosschecked; compare",
                       description=peer.__doc__.splitlines()[0])
    peer.add_arguments(p)
    p.set_defaults(handler=peer.cmd_peer)
