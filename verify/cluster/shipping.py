"""A worker's files, carried to a cluster node and back, as if the worker had run here.

Why not a shared file system: the machines of a CI farm share none, and a test cluster whose
nodes share one would hide every file a job forgot to declare. So a job's files travel with it
(verify.jobs.launcher.JobFiles says which):

- out: the inputs, read here (`pack`) into a `Parcel`; on the node (`unpack`) the job's folder
  becomes a fresh folder of the node's own, and each input outside it (a user's model or pass
  file) a file of its own, keeping its name (a module loaded from a file is named after it);
- the job description names those paths as the harness spelled them (relative or absolute), so
  on the node every path in the worker's arguments and in every shipped `.json` file is
  re-spelled for the node (`Layout.relocate`: a whole string, or one that continues with `/` or
  `:` as `file.py:factory` does; nothing else in a string is touched);
- back: every file the worker created or changed under the node's folder (`Layout.changed`),
  its text files (`TEXT_SUFFIXES`: logs, JSON results naming a reproducer) re-spelled the other
  way, written here atomically under the job's folder (`deliver`), where a local worker would
  have written them. Binary files (pickled lowerings, saved programs) are returned byte for
  byte: no path is ever rewritten inside them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from verify.jobs.launcher import JobFiles
from verify.report.atomic import write_bytes

TEXT_SUFFIXES = (".json", ".jsonl", ".log", ".txt", ".py", ".xml")


@dataclass(frozen=True)
class Place:
    """One shipped place: the job's folder (`folder` True: `files` by path relative to it) or an
    input outside it (a file: `files` = {"": bytes}; a folder: by relative path). `spellings`:
    how the job may name it: absolute, then as given (the last one is how the harness spells it)."""

    spellings: tuple[str, ...]
    folder: bool
    files: dict[str, bytes]


@dataclass(frozen=True)
class Parcel:
    """What travels to the node with a worker: the job's folder first, then the outside inputs."""

    places: tuple[Place, ...]

    @property
    def size(self) -> int:
        return sum(len(data) for place in self.places for data in place.files.values())


def _spellings(path: Path) -> tuple[str, ...]:
    given, absolute = str(path), os.path.abspath(path)
    return (given,) if given == absolute else (absolute, given)


def _read_tree(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()}


def pack(files: JobFiles) -> Parcel:
    """Read the job's inputs (those that exist) into a parcel."""
    folder = Path(os.path.abspath(files.folder))
    inside: dict[str, bytes] = {}
    outside: list[Place] = []
    for given in dict.fromkeys((*files.inputs, *files.awaited)):
        path = Path(os.path.abspath(given))
        if not path.exists():
            continue
        if path.is_relative_to(folder):
            relative = path.relative_to(folder)
            inside.update({str(relative / name) if name else str(relative): data
                           for name, data in _read_tree(path).items()})
        else:
            outside.append(Place(_spellings(Path(given)), path.is_dir(), _read_tree(path)))
    return Parcel((Place(_spellings(files.folder), True, inside), *outside))


@dataclass(frozen=True)
class Layout:
    """A parcel unpacked on the node: `folder` stands for the job's folder, `mapping` takes each
    spelling of a shipped place to its node path (longest first), `back` each node path to the
    spelling the harness gave, `before` is what the folder held when the worker started
    (path -> size, mtime)."""

    folder: Path
    mapping: tuple[tuple[str, str], ...]
    back: tuple[tuple[str, str], ...]
    before: dict[str, tuple[int, int]]

    def relocate(self, value: str) -> str:
        """`value` with a shipped place's spelling at its start re-spelled for the node."""
        for spelling, node_path in self.mapping:
            if value == spelling or (value.startswith(spelling) and value[len(spelling)] in "/:"):
                return node_path + value[len(spelling):]
        return value

    def changed(self) -> dict[str, bytes]:
        """Every file the worker created or changed in the folder, by relative path, its text
        re-spelled for the harness's machine."""
        changed = {}
        for path in sorted(self.folder.rglob("*")):
            if not path.is_file():
                continue
            relative = str(path.relative_to(self.folder))
            stat = path.stat()
            if self.before.get(relative) == (stat.st_size, stat.st_mtime_ns):
                continue
            data = path.read_bytes()
            if path.suffix in TEXT_SUFFIXES:
                for node_path, spelling in self.back:
                    data = data.replace(node_path.encode(), spelling.encode())
            changed[relative] = data
        return changed


def _relocated_json(data: bytes, layout: Layout) -> bytes:
    def walk(value):
        if isinstance(value, str):
            return layout.relocate(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    try:
        document = json.loads(data)
    except ValueError:  # not ours to judge: the worker reads it as it was
        return data
    return json.dumps(walk(document), indent=1).encode()


def unpack(parcel: Parcel, root: Path) -> Layout:
    """Write the parcel under `root` (a fresh folder on the node): the job's folder at
    root/folder, outside input i at root/inputs/i/<its name>; `.json` files relocated."""
    folder = root / "folder"
    folder.mkdir(parents=True)
    targets: list[tuple[Path, dict[str, bytes]]] = [(folder, parcel.places[0].files)]
    for index, place in enumerate(parcel.places[1:]):
        targets.append((root / "inputs" / str(index) / Path(place.spellings[-1]).name, place.files))
    mapping = [(s, str(target)) for place, (target, _) in zip(parcel.places, targets) for s in place.spellings]
    back = [(str(target), place.spellings[-1]) for place, (target, _) in zip(parcel.places, targets)]
    layout = Layout(folder, tuple(sorted(mapping, key=lambda m: -len(m[0]))),
                    tuple(sorted(back, key=lambda b: -len(b[0]))), {})
    for target, files in targets:
        for name, data in files.items():
            path = target / name if name else target
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_relocated_json(data, layout) if path.suffix == ".json" else data)
    before = {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
              for p in folder.rglob("*") if p.is_file()}
    return Layout(folder, layout.mapping, layout.back, before)


def deliver(changed: dict[str, bytes], folder: Path) -> None:
    """Write what the node returned under the job's folder here, each file atomically."""
    for relative, data in changed.items():
        write_bytes(Path(folder) / relative, data)
