"""The symbolic-shape environments a crosschecked call shares with its caller, saved and put back.

A deep copy of a program does not copy its ShapeEnv: FakeTensor.__deepcopy__ re-fakes the tensor
in the tensor's own fake mode (ignoring the memo), so every copy crosscheck makes (the fastpass
run's input, the deep copy verify.lowering's `program` check serializes) guards, specializes and
refines ranges in the caller's ShapeEnv. Found by tox -e peer: executorch's
test_rewrite_conv_symbolic_comparison_with_int_specializes_to_hint asserts its ShapeEnv has no
guards after a `to_edge`, and the `to_executorch()` of the crosscheck's copies had added three.

Building an independent ShapeEnv for the copy would mean re-faking every tensor with fresh
symbols (and the graph's SymInts would no longer be the ones the caller's nodes name), so the
state is saved and restored instead, in place (the caller's SymNodes hold the object itself):
every attribute of the ShapeEnv, its containers copied down to their immutable leaves (guards,
sympy expressions, value ranges, sources). Objects a ShapeEnv holds that are not containers
(its DimConstraints, settings, logger) are kept as they are: no lowering writes to them.
ShapeEnv's `_lru_cache`s are cleared after a restore: they are per method, not per ShapeEnv, and
drop their entries only when the version counter differs from the one they last saw, so a
counter restored to an older value and then bumped back to the same number by other changes
would serve answers from the state that was undone.
The containers a restored ShapeEnv holds are new objects with the saved contents (a caller that
kept a reference to, say, `env.guards` itself would see the list it had, not the restored one).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterable

def _copy_containers(value: Any) -> Any:
    """`value` with every dict/list/set/OrderedSet in it copied (keys and leaves shared)."""
    from torch.utils._ordered_set import OrderedSet

    if isinstance(value, dict):
        copied = copy.copy(value)  # keeps the type: Counter, defaultdict and its factory
        for key, item in value.items():
            copied[key] = _copy_containers(item)
        return copied
    if isinstance(value, list):
        copied = copy.copy(value)
        copied[:] = [_copy_containers(item) for item in value]
        return copied
    if isinstance(value, (set, OrderedSet)):
        return copy.copy(value)  # elements are hashable: symbols, sources, ids
    return value


@dataclass
class ShapeEnvState:
    """The state of some ShapeEnvs at one moment; `restore()` puts it back in the same objects."""

    saved: list[tuple[Any, dict[str, Any]]]

    @classmethod
    def capture(cls, shape_envs: Iterable[Any]) -> "ShapeEnvState":
        return cls([(env, {name: _copy_containers(value) for name, value in vars(env).items()})
                    for env in shape_envs])

    def restore(self) -> None:
        for env, attributes in self.saved:
            state = vars(env)
            state.clear()
            state.update({name: _copy_containers(value) for name, value in attributes.items()})
            _clear_caches(type(env))

    def __len__(self) -> int:
        return len(self.saved)


def _clear_caches(shape_env_type: type) -> None:
    for klass in shape_env_type.__mro__:
        for member in vars(klass).values():
            if callable(getattr(member, "cache_clear", None)):
                member.cache_clear()


def shape_envs_of(*objects: Any) -> list[Any]:
    """The ShapeEnvs behind the fake values of every program among `objects` (in tuples, lists,
    dicts, EdgeProgramManagers, ExportedPrograms, GraphModules), each once, in first-seen order."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.export import ExportedProgram
    from torch.utils import _pytree as pytree

    found: dict[int, Any] = {}
    stack = list(objects)
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif hasattr(item, "exported_program") and hasattr(item, "methods"):  # Edge/ExecuTorch managers
            stack.extend(item.exported_program(name) for name in item.methods)
        elif isinstance(item, ExportedProgram):
            stack.append(item.graph_module)
        elif isinstance(item, torch.fx.GraphModule):
            for node in item.graph.nodes:
                for leaf in pytree.tree_leaves(node.meta.get("val")):
                    env = None
                    if isinstance(leaf, FakeTensor):
                        env = leaf.fake_mode.shape_env
                    elif isinstance(leaf, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                        env = leaf.node.shape_env
                    if env is not None:
                        found.setdefault(id(env), env)
    return list(found.values())
