"""Save the input of a divergent call so that one command replays it, and load it back
(verify.crosscheck.replay makes the call again).

What round-trips (measured on executorch 1.5.1): an ExportedProgram does not pickle (edge ops
are not importable objects) and `torch.export.save` cannot load an edge-dialect program back;
executorch's own serde (`executorch.exir.serde.serialize`) round-trips both ATen and edge
programs with their `meta["val"]`. Pass instances do not pickle (FakeTensor bookkeeping), but
the Arm test harness builds them from their class alone or from the program (`RunPasses.
_instantiate_pass`), so a pass is saved as its class and the program it was given. Everything
else (partitioners, compile specs, configs) is pickled as is.

The serde is not exact: it passes positional arguments by keyword (undone on load) and drops
the meta keys original_aten, seq_nr and tensor_meta. A replay that no longer diverges may have
lost what triggered the divergence; the test that produced it (the plugin prints its id) is
the exact reproducer. The active TosaLoweringContext
spec is saved too: Arm passes read it, and a pass test runs its passes inside one.

File: verify.report.reproducer's format (a manifest line, then the payload); the payload is a
pickle of {"entry_point", "context", "tosa_spec", "programs", "call"}, where `call` is the
pickled (args, kwargs) with programs and passes replaced by persistent ids.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.crosscheck.record import EntryPoint
from verify.crosscheck.inputs import is_pass_wrapper
from verify.report import reproducer as saved_format
from verify.report.reproducer import Manifest, Producer, Reproducer, ReproducerError

SUFFIX = ".xcheck"
log = logging.getLogger(__name__)
__all__ = ["ReproducerError", "SavedCall", "load", "replay", "save"]


class _CallPickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, programs: dict[str, Any]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.programs = programs
        self.keys: dict[int, str] = {}

    def _program_key(self, program: Any) -> str:
        from executorch.exir.serde.serialize import serialize

        key = self.keys.get(id(program))
        if key is None:
            key = self.keys[id(program)] = f"program{len(self.keys)}"
            self.programs[key] = serialize(program)
        return key

    def persistent_id(self, obj: Any) -> Any:
        from torch.export import ExportedProgram
        from torch.fx.passes.infra.pass_base import PassBase

        from executorch.exir.pass_base import ExportedProgramPassBase

        if isinstance(obj, ExportedProgram):
            return ("program", self._program_key(obj))
        if is_pass_wrapper(obj):
            return ("wrapped", obj.__wrapped__)  # what ExportedProgramPassManager makes of a graph pass
        if isinstance(obj, (PassBase, ExportedProgramPassBase)):
            cls = type(obj)
            program = getattr(obj, "exported_program", None)
            program_key = self._program_key(program) if isinstance(program, ExportedProgram) else None
            return ("pass", cls.__module__, cls.__qualname__, program_key)
        return None


class _CallUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, programs: dict[str, Any]) -> None:
        super().__init__(file)
        self.programs = programs

    def persistent_load(self, pid: Any) -> Any:
        if pid[0] == "program":
            return self.programs[pid[1]]
        if pid[0] == "wrapped":
            from torch.fx.passes.infra.pass_manager import pass_result_wrapper

            return pass_result_wrapper(pid[1])
        _, module, qualname, program_key = pid
        cls: Any = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        if program_key is not None and "exported_program" in inspect.signature(cls.__init__).parameters:
            return cls(self.programs[program_key])
        return cls()


def _active_tosa_spec() -> Any:
    try:
        from executorch.backends.arm.tosa.specification import get_context_spec

        return get_context_spec()
    except Exception:  # noqa: BLE001 - no lowering context: nothing to save
        return None


def save(path: Path, entry: EntryPoint, args: tuple, kwargs: dict, context: str, features: tuple[str, ...] = (),
         first_divergent_pass: str | None = None, trust: str = "proven") -> str | None:
    """Write the reproducer; returns why it cannot replay the call by itself, or None. `trust`: the
    fastpass run's (replayed with the same)."""
    programs: dict[str, Any] = {}
    buffer = io.BytesIO()
    _CallPickler(buffer, programs).dump((args, kwargs))
    spec = _active_tosa_spec()
    limitation = None
    try:
        pickle.dumps(spec)
    except Exception as exc:  # noqa: BLE001
        limitation, spec = f"the active TOSA spec does not pickle ({exc})", None
    payload = pickle.dumps({"entry_point": entry.value, "context": context, "tosa_spec": spec,
                            "programs": programs, "call": buffer.getvalue()})
    manifest = Manifest(Producer.CROSSCHECK, str(spec) if spec is not None else "", tuple(features),
                        first_divergent_pass, f"{entry.value} diverged in {context or 'an unnamed call'}",
                        settings={"entry_point": entry.value, "context": context, "limitation": limitation,
                                  "trust": trust})
    saved_format.save(path, manifest, payload, notes=[f"crosscheck reproducer: {entry.value} from {context or '?'}",
                                                      f"first divergent pass: {first_divergent_pass}"])
    return limitation


def _positional(program: Any) -> Any:
    """Undo the serde's one rewrite of node arguments: it passes every schema argument that is not
    keyword-only by keyword, where the graph had it by position (passes read `node.args[i]`)."""
    for module in program.graph_module.modules():
        graph = getattr(module, "graph", None)
        if graph is None:
            continue
        for node in graph.nodes:
            schema = getattr(node.target, "_schema", None)
            if node.op != "call_function" or schema is None or not node.kwargs:
                continue
            args, kwargs = list(node.args), dict(node.kwargs)
            for argument in schema.arguments[len(args):]:
                if argument.kwarg_only or argument.name not in kwargs:
                    break
                args.append(kwargs.pop(argument.name))
            node.args, node.kwargs = tuple(args), kwargs
        module.recompile()
    return program


@dataclass
class SavedCall:
    """A reproducer read back: the call to make again, and the context it ran in."""

    entry_point: EntryPoint
    context: str
    tosa_spec: Any
    args: tuple
    kwargs: dict

    def lowering_context(self) -> Any:
        """The TosaLoweringContext the original call ran in (a no-op context if none)."""
        if self.tosa_spec is None:
            return contextlib.nullcontext()
        from executorch.backends.arm.tosa.specification import TosaLoweringContext

        return TosaLoweringContext(self.tosa_spec)

    def call(self) -> Any:
        """Make the call through executorch's own entry point (so that crosscheck intercepts it)."""
        from executorch.exir.program import _program

        if self.entry_point is EntryPoint.TO_EDGE_TRANSFORM_AND_LOWER:
            return _program.to_edge_transform_and_lower(*self.args, **self.kwargs)
        if self.entry_point is EntryPoint.TO_EDGE:
            return _program.to_edge(*self.args, **self.kwargs)
        if self.entry_point is EntryPoint.TO_BACKEND:
            return _program.EdgeProgramManager.to_backend(*self.args, **self.kwargs)
        return _program._transform_with_pass_manager(*self.args, **self.kwargs)


def load(path: Path) -> SavedCall:
    return load_call(saved_format.load(path))


def load_call(saved: Reproducer) -> SavedCall:
    from executorch.exir.serde.serialize import deserialize

    path = saved.path
    if saved.manifest.producer is not Producer.CROSSCHECK:
        raise ReproducerError(f"{path} is a {saved.manifest.producer} reproducer, not a crosscheck one")
    try:
        payload = pickle.loads(saved.payload)
    except (pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise ReproducerError(f"cannot read reproducer {path}: {exc}") from exc
    try:
        programs = {key: _positional(deserialize(artifact)) for key, artifact in payload["programs"].items()}
    except Exception as exc:  # noqa: BLE001 - e.g. symbolic pads on backend ops the serde cannot read back
        first = str(exc).splitlines()[0][:300] if str(exc) else ""
        raise ReproducerError(f"cannot deserialize the program saved in {path} ({type(exc).__name__}: {first}); "
                              f"rerun what made the call instead: {payload.get('context') or '?'}") from exc
    try:
        args, kwargs = _CallUnpickler(io.BytesIO(payload["call"]), programs).load()
    except Exception as exc:  # noqa: BLE001 - e.g. a pass class that is gone or needs other arguments
        raise ReproducerError(f"cannot rebuild the call saved in {path}: {type(exc).__name__}: {exc}") from exc
    return SavedCall(EntryPoint(payload["entry_point"]), payload["context"], payload["tosa_spec"], args, kwargs)
