"""A real multi-node Ray cluster on this machine's loopback, for tests and measurements only.

The harness never starts a cluster (verify.cluster.connect); its tests and the overhead
measurement (verify.cluster.measure) need one they own. Measured here: `ray start` binds the
machine's interface address even with `--node-ip-address 127.0.0.1`, so it is not used; Ray's
own test utility `ray.cluster_utils.Cluster`, with `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, gives
separate raylets all at 127.0.0.1 (tasks spread over them; a removed node's tasks run again on
another). No dashboard.

The cluster lives in a process of its own (`python -m verify.cluster.loopback --nodes N`), so
Ray's process-wide state never enters the process that uses it, and it is stopped however that
process ends: it shuts the cluster down when its stdin closes. It prints one JSON line when up:
`{"address": "127.0.0.1:PORT", "nodes": [hex id, ...]}` (the head first), and takes commands on
stdin, each answered with one JSON line: `remove I` (kill node I of the live ones, not the head,
at once, as a machine lost), `add` (one more node), `stop`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

from verify.cluster.connect import LOOPBACK_VARIABLE


def _serve(nodes: int, cpus: int) -> None:
    os.environ[LOOPBACK_VARIABLE] = "0"  # before ray is imported: it reads it then
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, connect=False,
                      head_node_args={"num_cpus": cpus, "include_dashboard": False})
    members = [cluster.head_node]
    try:
        for _ in range(nodes - 1):
            members.append(cluster.add_node(num_cpus=cpus))
        cluster.wait_for_nodes()
        print(json.dumps({"address": cluster.address, "nodes": [m.node_id for m in members]}), flush=True)
        for line in sys.stdin:
            command, *rest = line.split()
            if command == "remove":
                node = members.pop(int(rest[0]))
                cluster.remove_node(node, allow_graceful=False)
                print(json.dumps({"removed": node.node_id}), flush=True)
            elif command == "add":
                members.append(cluster.add_node(num_cpus=cpus))
                cluster.wait_for_nodes()
                print(json.dumps({"added": members[-1].node_id}), flush=True)
            elif command == "stop":
                break
    finally:
        cluster.shutdown()


@dataclass
class LoopbackCluster:
    """The cluster process, from the user's side: `with LoopbackCluster(2) as cluster:` ...
    `cluster.address`, `cluster.nodes`, `cluster.remove(1)`, `cluster.add()`."""

    size: int = 2
    cpus: int = 1
    address: str = ""
    nodes: list[str] = field(default_factory=list)
    _process: subprocess.Popen | None = None

    def __enter__(self) -> LoopbackCluster:
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, "--nodes", str(self.size), "--cpus", str(self.cpus)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, LOOPBACK_VARIABLE: "0"})
        up = self._answer()
        self.address, self.nodes = up["address"], list(up["nodes"])
        return self

    def _answer(self) -> dict:
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the loopback cluster ended (exit {self._process.wait()})")
        return json.loads(line)

    def _command(self, text: str) -> dict:
        self._process.stdin.write(text + "\n")
        self._process.stdin.flush()
        return self._answer()

    def remove(self, index: int) -> str:
        """Kill live node `index` (0 is the head: not allowed) at once; its id."""
        if index == 0:
            raise ValueError("the head node stays")
        removed = self._command(f"remove {index}")["removed"]
        self.nodes.remove(removed)
        return removed

    def add(self) -> str:
        node = self._command("add")["added"]
        self.nodes.append(node)
        return node

    def __exit__(self, *exc_info) -> None:
        if self._process is None:
            return
        try:
            self._process.stdin.close()  # the server shuts the cluster down
            self._process.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m verify.cluster.loopback", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--cpus", type=int, default=1, help="CPUs of each node")
    arguments = parser.parse_args()
    _serve(arguments.nodes, arguments.cpus)
