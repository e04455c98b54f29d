"""Which cluster a command runs on, and connecting to it — never starting one.

`--cluster ADDRESS`, `--cluster auto` (the cluster Ray finds on this machine) or, without the
option, the `RAY_ADDRESS` environment variable; none of them: the local pool, exactly as before.
The harness only ever submits to an address it was given: `ray.init` without an address starts a
private cluster, which a typo must never do, so every path here passes an address.

An address that does not answer is bad usage (verify.usage.UsageError: one line, exit 2) found
before any work. It is checked with a plain TCP connection first, because `ray.init` on a dead
address retries for minutes (measured here: > 2 min, still retrying). A connection accepted is
not enough: at an address where something listens but never answers, `ray.init` retried for
over 10 minutes here, printing Ray's C++ warnings ("Failed to connect to GCS ... within 5
seconds") every few seconds. So the address is then asked the way Ray's own client opens every
connection: a Ray head (its GCS, or the Ray Client server behind ray://) is a gRPC server, which
answers an HTTP/2 client preface with its SETTINGS frame at once (RFC 9113 section 3.4; a
loopback GCS answered in 1 ms here; ray:// not measured: no ray[client] installed); no such
frame within ANSWER_TIMEOUT is one line naming what happened, not Ray's retries. With Ray's TLS
on (RAY_USE_TLS) the preface would have to go through TLS: only the TCP check runs.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
from dataclasses import dataclass
from typing import Iterator

from verify.usage import UsageError

log = logging.getLogger(__name__)

ADDRESS_VARIABLE = "RAY_ADDRESS"
LOOPBACK_VARIABLE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
CONNECT_TIMEOUT = 5.0  # s: a reachable head answers a TCP connection at once
ANSWER_TIMEOUT = 2.0  # s: a gRPC server sends its SETTINGS frame as soon as it reads the preface
TLS_VARIABLE = "RAY_USE_TLS"
# HTTP/2's client connection preface, then an empty SETTINGS frame (length 0, type 4, no flags, stream 0)
_CLIENT_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(3) + b"\x04" + bytes(5)
_FRAME_HEADER = 9  # bytes: length (3), type (1), flags (1), stream (4)
_SETTINGS = 0x04


@dataclass(frozen=True)
class ClusterAddress:
    """Where to submit: `address` as given to ray.init (host:port, or ray://host:port for Ray
    Client), `host` and `port` to check first; `source` says where it came from, for messages."""

    address: str
    host: str
    port: int
    source: str


def resolve(option: str | None, environ: dict[str, str] | os._Environ = os.environ) -> ClusterAddress | None:
    """The cluster asked for, or None for the local pool. UsageError for an address that cannot
    be one, or `auto` with no cluster on this machine."""
    if option is None:
        value, source = environ.get(ADDRESS_VARIABLE) or None, ADDRESS_VARIABLE
        if value is None:
            return None
    else:
        value, source = option, "--cluster"
    if value == "auto":
        value = _find_local_cluster(source)
    host, _, port = value.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"{source} {value!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    if not 1 <= int(port) <= 65535:  # else the connection attempt reports it as refused, not as a bad port
        raise UsageError(f"{source} {value!r}: port {port} is not a TCP port (1..65535)")
    return ClusterAddress(value, host, int(port), source)


def _find_local_cluster(source: str) -> str:
    from ray._private.services import get_ray_address_from_environment  # Ray's own `auto` lookup

    try:
        return get_ray_address_from_environment("auto", None)
    except ConnectionError:
        raise UsageError(f"{source} auto: no Ray cluster runs on this machine (the harness never starts one; "
                         "start it with `ray start --head`, or give its address)") from None


def _unanswered(cluster: ClusterAddress) -> OSError | None:
    """Why a TCP connection to the cluster's address fails, or None: it answers."""
    try:
        with socket.create_connection((cluster.host, cluster.port), timeout=CONNECT_TIMEOUT):
            return None
    except OSError as exc:
        return exc


def _not_grpc(cluster: ClusterAddress) -> str | None:
    """What the address did when asked as a gRPC client asks, or None: it answered as a gRPC
    server does (its first frame a SETTINGS frame)."""
    head = b""
    try:
        with socket.create_connection((cluster.host, cluster.port), timeout=CONNECT_TIMEOUT) as connection:
            connection.settimeout(ANSWER_TIMEOUT)
            connection.sendall(_CLIENT_PREFACE)
            while len(head) < _FRAME_HEADER:
                chunk = connection.recv(_FRAME_HEADER - len(head))
                if not chunk:
                    return ("it accepted a connection, then closed it without an answer" if not head else
                            "it answered, then closed the connection, not as a Ray cluster (a gRPC server) does")
                head += chunk
    except socket.timeout:
        return (f"it accepted a connection but sent no answer within {ANSWER_TIMEOUT:g} s" if not head else
                "it answered, but not as a Ray cluster (a gRPC server) does")
    except OSError as exc:
        return f"it accepted a connection, then failed ({exc.strerror or type(exc).__name__})"
    if head[3] != _SETTINGS:
        return "it answered, but not as a Ray cluster (a gRPC server) does"
    return None


def check_reachable(cluster: ClusterAddress) -> None:
    """UsageError (one line: the address and what happened) unless a Ray cluster may answer there."""
    failure = _unanswered(cluster)
    if failure is not None:
        raise UsageError(f"{cluster.source} {cluster.address}: cannot reach a Ray cluster there "
                         f"({failure.strerror or type(failure).__name__}); nothing was run")
    if os.environ.get(TLS_VARIABLE, "0").strip().lower() in ("1", "true"):
        return  # the preface would have to be sent through TLS
    silence = _not_grpc(cluster)
    if silence is not None:
        raise UsageError(f"{cluster.source} {cluster.address}: no Ray cluster answers there ({silence}); "
                         "nothing was run")


@contextlib.contextmanager
def connected(cluster: ClusterAddress) -> Iterator[int]:
    """While inside: this process is a driver of `cluster` and every launcher job with files
    runs there (verify.cluster.backend); yields the cluster's CPUs. The connection is closed on
    the way out."""
    check_reachable(cluster)
    if _is_loopback(cluster.host):
        # Ray turns a loopback address into the machine's interface address (where a loopback
        # cluster, e.g. ray.cluster_utils.Cluster, does not listen: ray.init then retries for
        # minutes) unless told the cluster is a single-machine one; read when ray is imported.
        os.environ.setdefault(LOOPBACK_VARIABLE, "0")
    import ray

    from verify.cluster.backend import RayBackend
    from verify.jobs.launcher import using_backend

    previous = os.environ.get(ADDRESS_VARIABLE)
    os.environ[ADDRESS_VARIABLE] = cluster.address  # ray.init prefers the variable to its argument
    try:
        ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UsageError(f"{cluster.source} {cluster.address}: cannot connect to a Ray cluster there "
                         f"({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__})") from None
    finally:
        _restore(previous)
    try:
        cpus = int(ray.cluster_resources().get("CPU", 0))
        log.info("cluster: connected to %s: %d node(s), %d CPU(s)", cluster.address,
                 sum(1 for n in ray.nodes() if n.get("Alive")), cpus)
        with using_backend(RayBackend(answers=lambda: _unanswered(cluster) is None)):
            yield cpus
    finally:
        ray.shutdown()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def _restore(previous: str | None) -> None:
    if previous is None:
        os.environ.pop(ADDRESS_VARIABLE, None)
    else:
        os.environ[ADDRESS_VARIABLE] = previous
