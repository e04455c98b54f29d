"""One reproducer format for every producer (fuzz, gate, crosscheck), and what a replay says.

A reproducer is one file:

    # <lines for the reader: what diverged, where, the command that replays it>
    # reproducer: {"format": 1, "producer": "gate", "target": ..., ...}     <- the manifest
    <payload>

The manifest (`Manifest`) holds what a replay needs and what a reader asks first: the producer,
the target (or gate stage), the fastpass features under test, the pass and annotation under
test (gate), the hash seed the divergence was found under, the first divergent pass, and the
command. It is one line of JSON so that typed fields are read back as written, never parsed
out of prose. The payload is the input program in the form its producer has it:

* a graph (fuzz, gate): the GraphSpec's standalone Python source, so `python FILE` runs it and
  `FILE:make_model` is a model reference for `verify run`; the spec itself is in the manifest;
* a call (crosscheck): the pickled call (verify.crosscheck.reproducer: the serialized programs
  and the arguments), binary.

`python -m verify replay FILE` replays any of them (verify/commands/replay.py; the checks before
anything runs are verify/report/trust.py, the hand-over verify/commands/replay.py): it reads the
manifest, hands the reproducer to its producer's replay, and says identical or divergent, with
the first divergent pass.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from verify.report.atomic import write_bytes
from verify.vocabulary import Verdict

FORMAT = 1
MANIFEST_PREFIX = b"# reproducer: "
_HEADER_SCAN_BYTES = 1 << 20  # the manifest is in the text header; a payload is never scanned


class ReproducerError(ValueError):
    """A file that is not a readable reproducer (a one-line message; exit 2)."""


class Producer(str, Enum):
    """Who saved the reproducer: it decides how the payload is replayed."""

    FUZZ = "fuzz"  # a random graph, both modes in one process (verify.fuzz)
    GATE = "gate"  # a random graph, one pass's annotation under test (verify.gate)
    CROSSCHECK = "crosscheck"  # an intercepted executorch call (verify.crosscheck)

    def __str__(self) -> str:
        return self.value


def current_hash_seed() -> str | None:
    """PYTHONHASHSEED of this process (None: random, the divergence may need luck to recur)."""
    return os.environ.get("PYTHONHASHSEED")


# A gate reproducer's pass reference when the divergence is no annotated pass's (a registry
# search found it after the last pass, in the delegate or the program): its replay lowers with
# every annotated pass of the registry but the excluded ones, and imports nothing of its own.
NO_PASS = "-"


@dataclass(frozen=True)
class Manifest:
    producer: Producer
    target: str  # lowering target (fuzz), gate stage (gate), TOSA spec of the call or "" (crosscheck)
    features: tuple[str, ...]  # fastpass features under test; () = all of them
    first_divergent_pass: str | None  # label of the first pass whose output differs, if located
    reason: str = ""  # what was found, for the reader
    hash_seed: str | None = field(default_factory=current_hash_seed)
    pass_ref: str | None = None  # gate: the pass under test (module:Class or file.py:Class; NO_PASS)
    annotation: dict | None = None  # gate: its annotation when the reproducer was saved
    graph: dict | None = None  # fuzz, gate: the GraphSpec (to_dict) the payload was generated from
    settings: dict[str, Any] = field(default_factory=dict)  # the producer's own replay settings

    def to_json(self) -> dict:
        return {"format": FORMAT, **asdict(self), "producer": self.producer.value, "features": list(self.features)}

    @classmethod
    def from_json(cls, document: dict) -> Manifest:
        fields = {k: v for k, v in document.items() if k != "format"}
        return cls(**{**fields, "producer": Producer(fields["producer"]), "features": tuple(fields["features"])})


def replay_command(path: Path) -> str:
    """The one command that replays any reproducer."""
    return f"{Path(sys.executable).name} -m verify replay {path}"


@dataclass(frozen=True)
class Reproducer:
    """A reproducer read back (or about to be written)."""

    path: Path
    manifest: Manifest
    payload: bytes

    @property
    def command(self) -> str:
        return replay_command(self.path)

    def graph_spec(self):
        """The GraphSpec of a graph reproducer."""
        from generators.random import GraphSpec

        if self.manifest.graph is None:
            raise ReproducerError(f"{self.path} holds no graph (it is a {self.manifest.producer} reproducer of a call)")
        return GraphSpec.from_dict(self.manifest.graph)


def save(path: Path, manifest: Manifest, payload: bytes | str, notes: list[str] = ()) -> Reproducer:
    """Write `path` atomically: `notes` as comment lines, the manifest line, the payload."""
    path = Path(path)
    data = payload.encode() if isinstance(payload, str) else payload
    lines = [f"Reproducer saved by verify ({manifest.producer}). Replay: {replay_command(path)}", *notes]
    header = "".join(f"# {line}".rstrip() + "\n" for text in lines for line in (text.splitlines() or [""]))
    document = json.dumps(manifest.to_json(), sort_keys=True, default=str)
    write_bytes(path, header.encode() + MANIFEST_PREFIX + document.encode() + b"\n" + data)
    return Reproducer(path, manifest, data)


def load(path: Path) -> Reproducer:
    """Read a reproducer written by save(); ReproducerError if it is not one."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReproducerError(f"cannot read reproducer {path}: {exc.strerror or exc}") from exc
    offset = 0
    while offset < min(len(data), _HEADER_SCAN_BYTES) and data.startswith(b"#", offset):
        end = data.find(b"\n", offset)
        end = len(data) if end < 0 else end
        if data.startswith(MANIFEST_PREFIX, offset):
            try:
                document = json.loads(data[offset + len(MANIFEST_PREFIX):end])
                if document.get("format") != FORMAT:
                    raise ReproducerError(f"{path}: reproducer format {document.get('format')}, "
                                          f"this verify reads format {FORMAT}")
                manifest = Manifest.from_json(document)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise ReproducerError(f"cannot read reproducer {path}: bad manifest ({exc})") from exc
            return Reproducer(path, manifest, data[end + 1:])
        offset = end + 1
    raise ReproducerError(f"cannot read reproducer {path}: no '{MANIFEST_PREFIX.decode().strip()}' line "
                          "(not a reproducer saved by verify)")


@dataclass(frozen=True)
class Replayed:
    """What replaying a reproducer found: identical, divergent (at its first divergent pass),
    nondeterministic (stock differs from itself the way it differed from fastpass), or error (the
    replay itself failed, e.g. the graph no longer builds)."""

    verdict: Verdict
    first_divergent_pass: str | None = None
    details: tuple[str, ...] = ()

    @property
    def exit_status(self) -> int:
        return 0 if self.verdict is Verdict.IDENTICAL else 1

    def describe(self) -> str:
        if self.verdict is Verdict.DIVERGENT:
            return f"divergent: first divergent pass {self.first_divergent_pass or 'not located'}"
        if self.verdict is Verdict.NONDETERMINISTIC:
            why = "; ".join(self.details) or "stock differs from itself"
            return f"nondeterministic: {why} (at {self.first_divergent_pass or 'not located'})"
        return self.verdict.value
