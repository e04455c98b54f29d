"""How a model reference becomes a module (a case, a model on a target, is
verify.report.case.Case).

A model reference is one of:
- a built-in name (generators.models.MODELS), e.g. `resnet8`;
- `path/to/file.py:factory` or `package.module:factory`, a callable returning
  `(nn.Module, example_inputs)`;
- `graphspec:path/to/spec.json`, a random graph drawn by generators.random.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

import torch

from verify.usage.references import binds


class ModelError(RuntimeError):
    """The model reference cannot be turned into a module and inputs."""


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


def usage_problem(ref: str) -> str | None:
    """What is wrong with a model reference on its face (checked before any work), or None.

    Without running the user's code: an unknown built-in name, a missing file or module, a factory
    name the file or module does not bind (read from its source; a module already imported is
    asked). Whether the factory imports, runs and returns a model is the worker's to find out
    (and a case error); so is a name only running the code could tell (a star import)."""
    if ref.startswith("graphspec:"):
        path = Path(ref[len("graphspec:"):])
        return None if path.is_file() else f"model {ref!r}: no such file {path}"
    if ":" not in ref:
        if ref in builtin_models():
            return None
        return (f"unknown model {ref!r}; built-in models: {', '.join(builtin_models())}; "
                "or pass file.py:factory / module:factory")
    location, _, attr = ref.rpartition(":")
    if not location or not attr:
        return f"model {ref!r}: expected a built-in name, 'file.py:factory' or 'module:factory'"
    if location.endswith(".py"):
        if not Path(location).is_file():
            return f"model {ref!r}: no such file {location}"
        source: str | None = location
    else:
        if location in sys.modules:
            found = callable(getattr(sys.modules[location], attr, None))
            return None if found else f"model {ref!r}: {location} has no callable {attr!r}"
        try:
            spec = importlib.util.find_spec(location)  # imports the parent packages only, not the module
        except ModuleNotFoundError as exc:
            return f"model {ref!r}: no module named {exc.name or location!r}"
        except Exception:  # noqa: BLE001 - a parent package fails to import: the worker says how
            return None
        if spec is None:
            return f"model {ref!r}: no module named {location!r}"
        source = spec.origin if spec.origin and spec.origin.endswith(".py") else None
    if source is not None and binds(Path(source), attr) is False:
        return f"model {ref!r}: {location} has no {attr!r} (no def, class, import or assignment of it)"
    return None


def load_model_code(ref: str) -> None:
    """Import the code behind a model reference without building the model: a worker that
    loads a saved program needs whatever the model's file registers (custom ops)."""
    if ref.startswith("graphspec:"):
        return
    from generators.models import MODELS

    if ref not in MODELS:
        _load_factory(ref)


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
    expected = "factory must return (nn.Module, example_inputs)"
    if not isinstance(built, tuple):
        raise ModelError(f"model {ref!r}: {expected}, got {type(built).__name__}")
    if len(built) != 2:
        raise ModelError(f"model {ref!r}: {expected}, got a tuple of {len(built)} items")
    module, inputs = built
    if not isinstance(module, torch.nn.Module):
        raise ModelError(f"model {ref!r}: {expected}, got ({type(module).__name__}, ...) as the first item")
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list)):
        # A string would be split into characters, one positional argument each.
        raise ModelError(f"model {ref!r}: example_inputs must be a tensor or a tuple of them, "
                         f"got {type(inputs).__name__}")
    return module, tuple(inputs)


def build_digest(module: torch.nn.Module, inputs: tuple) -> dict[str, str]:
    """A digest per parameter/buffer and per example input: two builds of a deterministic
    factory give equal digests; where they differ says what the factory randomises."""

    def digest(value) -> str:
        h = hashlib.blake2b(digest_size=12)
        if isinstance(value, torch.Tensor):
            tensor = value.detach().cpu().contiguous()
            h.update(f"{tensor.dtype}{tuple(tensor.shape)}".encode())
            h.update(tensor.view(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
        elif isinstance(value, (tuple, list)):
            for item in value:
                h.update(digest(item).encode())
        else:
            h.update(repr(value).encode())
        return h.hexdigest()

    digests = {f"state_dict[{name!r}]": digest(tensor) for name, tensor in module.state_dict().items()}
    digests.update({f"example_inputs[{i}]": digest(value) for i, value in enumerate(inputs)})
    return digests
