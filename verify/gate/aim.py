"""The ops a pass's code can reach, not only the ones it spells out.

`passes.ops_named_by` reads the suspects the gate aims at (`verify.gate.graphs`) from a pass's
code. Matching the text `exir_ops.edge.aten.neg.default` misses the ops a pass names through a
module alias (`A = exir_ops.edge.aten` ... `A.neg.default`), an import under another name
(`from executorch.exir.dialects._ops import ops as E` ... `E.edge.aten.neg.default`,
`from torch.ops import aten`), or `getattr` with a literal name (`getattr(A, "neg").default`, or
a name a loop takes from a literal tuple of strings). Issue 43: three deliberately unsound
passes written in that common style got no suspect at all, so no graph was aimed at what they
rewrite, and each was called sound.

So every attribute chain and `getattr` of the code's syntax tree is *evaluated* against the
module's globals (the objects the code really reaches at run time), and each value that is an
op overload (or a collection of them) is a name the code reaches. Evaluation only follows
attributes of modules, classes and torch/executorch objects (op namespaces, packets), never
calls anything but `getattr`, and gives up quietly on anything else: the names only steer which
graphs are drawn, a name missed costs aim, a spurious one a share of the graphs."""

from __future__ import annotations

import ast
import types
from typing import Any, Iterable

_MAX_ITEMS = 512  # a table of ops longer than this is read up to here (as passes._names_in_value)


def ops_reached(tree: ast.AST | None, module_globals: dict[str, Any]) -> set[str]:
    """Op names (`aten.neg.default`) that the attribute chains and `getattr(..., "literal")`
    calls in `tree` evaluate to, their roots looked up in `module_globals`. Names bound to
    literal strings inside `tree` (`for name in ("neg", "abs")`, `name = "neg"`, a
    comprehension over such a tuple) stand for each of their strings."""
    if tree is None:
        return set()
    strings = _literal_bindings(tree, module_globals)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Call)):
            for value in _evaluate(node, module_globals, strings):
                _collect(value, found)
    return found


def _literal_bindings(tree: ast.AST, module_globals: dict[str, Any]) -> dict[str, list[str]]:
    """Local name -> the literal strings it is bound to in `tree` (loop and comprehension
    targets over literal collections of strings, or a global tuple of them; plain assignments
    of a string)."""
    bound: dict[str, list[str]] = {}

    def add(target: ast.AST, values: list[str]) -> None:
        if isinstance(target, ast.Name) and values:
            bound.setdefault(target.id, []).extend(v for v in values if v not in bound.get(target.id, []))

    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)):
            add(node.target, _strings_of(node.iter, module_globals))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                add(target, [node.value.value] if isinstance(node.value.value, str) else [])
    return bound


def _strings_of(node: ast.AST, module_globals: dict[str, Any]) -> list[str]:
    """The strings a literal collection (or a global naming one) holds; [] for anything else."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.Name):
        value = module_globals.get(node.id)
        if isinstance(value, (tuple, list, set, frozenset)):
            return [v for v in list(value)[:_MAX_ITEMS] if isinstance(v, str)]
    return []


def _evaluate(node: ast.AST, module_globals: dict[str, Any], strings: dict[str, list[str]]) -> list[Any]:
    """The values `node` may evaluate to (several when a literal-bound name stands for several
    strings); [] when it cannot be evaluated safely."""
    if isinstance(node, ast.Name):
        if node.id in strings:
            return list(strings[node.id])
        return [module_globals[node.id]] if node.id in module_globals else []
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, ast.Attribute):
        return [v for base in _evaluate(node.value, module_globals, strings) for v in _attribute(base, node.attr)]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and "getattr" not in module_globals and len(node.args) in (2, 3)):
        names = [n for n in _evaluate(node.args[1], module_globals, strings) if isinstance(n, str)]
        return [v for base in _evaluate(node.args[0], module_globals, strings) for name in names
                for v in _attribute(base, name)]
    return []


def _attribute(base: Any, name: str) -> list[Any]:
    """[getattr(base, name)] for a base worth following (a module, a class, a torch or executorch
    object such as an op namespace or packet), else []; any error is "cannot tell"."""
    if isinstance(base, str) or not _followable(base):
        return []
    try:
        return [getattr(base, name)]
    except Exception:  # noqa: BLE001 - an op namespace raises for unknown ops; anything else: unknown
        return []


def _followable(value: Any) -> bool:
    if isinstance(value, (types.ModuleType, type)):
        return True
    module = type(value).__module__ or ""
    return module.startswith(("torch", "executorch"))


def _collect(value: Any, found: set[str]) -> None:
    """Add the op names `value` is or holds (one level of collection, as a table of ops)."""
    if _is_op(value):
        found.add(_op_name(value))
    elif isinstance(value, (tuple, list, set, frozenset)):
        _collect_all(list(value)[:_MAX_ITEMS], found)
    elif isinstance(value, dict):
        _collect_all([*list(value)[:_MAX_ITEMS], *list(value.values())[:_MAX_ITEMS]], found)


def _collect_all(values: Iterable[Any], found: set[str]) -> None:
    for item in values:
        if _is_op(item):
            found.add(_op_name(item))


def _is_op(value: Any) -> bool:
    import torch

    return isinstance(value, torch._ops.OpOverload) or type(value).__name__ == "EdgeOpOverload"


def _op_name(value: Any) -> str:
    from fastpass.annotations import op_name

    return op_name(value)
