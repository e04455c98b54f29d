"""What a case is (a model and a target) and how a model reference becomes a module.

A model reference is one of:
- a built-in name (generators.models.MODELS), e.g. `resnet8`;
- `path/to/file.py:factory` or `package.module:factory`, a callable returning
  `(nn.Module, example_inputs)`;
- `graphspec:path/to/spec.json`, a random graph drawn by generators.random.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import torch


class ModelError(RuntimeError):
    """The model reference cannot be turned into a module and inputs."""


@dataclass(frozen=True)
class Case:
    model: str
    target: str

    @property
    def slug(self) -> str:
        base = self.model.split(":")[-1] if ":" in self.model else self.model
        base = Path(base).stem if self.model.startswith("graphspec:") else base
        return "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{base}-{self.target}")


def builtin_models() -> list[str]:
    from generators.models import MODELS

    return list(MODELS)


def _load_factory(ref: str):
    location, _, attr = ref.rpartition(":")
    if not location or not attr:
        raise ModelError(f"model {ref!r}: expected a built-in name, 'file.py:factory' or 'module:factory'")
    if location.endswith(".py"):
        path = Path(location)
        if not path.is_file():
            raise ModelError(f"model {ref!r}: no such file {path}")
        spec = importlib.util.spec_from_file_location(f"_verify_user_model_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001
            raise ModelError(f"model {ref!r}: importing {path} raised {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(location)
        except Exception as exc:  # noqa: BLE001
            raise ModelError(f"model {ref!r}: cannot import {location}: {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ModelError(f"model {ref!r}: {location} has no callable {attr!r}")
    return factory


def build_model(ref: str) -> tuple[torch.nn.Module, tuple]:
    """Resolve a model reference and call its factory, checking what it returns."""
    if ref.startswith("graphspec:"):
        from generators.random import GraphSpec

        path = Path(ref[len("graphspec:"):])
        return GraphSpec.from_json(path.read_text()).build()
    from generators.models import MODELS

    factory = MODELS.get(ref) or _load_factory(ref)
    try:
        built = factory()
    except Exception as exc:  # noqa: BLE001
        raise ModelError(f"model {ref!r}: factory raised {type(exc).__name__}: {exc}") from exc
    if not (isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], torch.nn.Module)):
        raise ModelError(f"model {ref!r}: factory must return (nn.Module, example_inputs), got {type(built).__name__}")
    module, inputs = built
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    return module, tuple(inputs)
