"""Campaigns past one machine: a command's workers run as Ray tasks on a cluster (issue 34).

The local pool stays the default and is untouched: a cluster is a backend under the one launcher
(verify.jobs.launcher.using_backend), so `verify run` and `verify gate` decide, journal and report
exactly as before and only the running of each worker moves to a node.

- `connect`: which cluster (`--cluster ADDRESS|auto`, `RAY_ADDRESS`), checked before any work;
- `backend`: a launcher job as a Ray task (retries on node loss, cancel, stop);
- `node`: what the task does on its node (the launcher, in a folder of its own);
- `shipping`: the job's files there and back (no shared file system assumed);
- `batch`: independent pytest jobs (the fuzz campaign's cells), each merged as it returns;
- `loopback`: a real multi-node cluster on 127.0.0.1, for tests and `measure` only;
- `measure`, `plan`: Ray's per-job overhead here and a projection to many nodes.
See README.md beside this file.

Every node runs the harness from its own installation of this project (the same version: the
same `tox -e ...` environment), as the local workers do from the harness's.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Iterator

__all__ = ["add_cluster_option", "on_cluster", "referenced_files"]


def add_cluster_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", default=None, metavar="ADDRESS",
                        help="run the workers as tasks on this Ray cluster (HOST:PORT, ray://HOST:PORT, or auto: "
                             "the one on this machine); default: $RAY_ADDRESS if set, else this machine's "
                             "process pool (gate: -j defaults to the cluster's CPUs). The harness never starts a cluster")


@contextlib.contextmanager
def on_cluster(args: argparse.Namespace) -> Iterator[None]:
    """While inside: the command's workers run on the cluster its arguments (or RAY_ADDRESS) name,
    if it takes `--cluster`; otherwise here. UsageError if that cluster cannot be reached."""
    from verify.cluster.connect import connected, resolve

    cluster = resolve(args.cluster) if hasattr(args, "cluster") else None
    if cluster is None:
        yield
        return
    with connected(cluster) as cpus:
        if getattr(args, "jobs", 0) is None:  # `gate -j` not given: as many workers as the cluster has CPUs
            args.jobs = max(1, cpus)
        yield


def referenced_files(ref: str) -> tuple[Path, ...]:
    """The file a model or pass reference names (`path/file.py:name`, `graphspec:path`), if it is
    one: what a job on another machine must take along. Module references name none."""
    location = ref[len("graphspec:"):] if ref.startswith("graphspec:") else ref.rpartition(":")[0]
    path = Path(location)
    return (path,) if location and path.is_file() else ()
