"""Which passes the gate checks, and how one pass is isolated for a check.

* `resolve(ref)`: `package.module:Class` or `path/to/file.py:Class` -> the class.
* `annotated_passes()`: every ExportPass subclass that carries a skip- or copy-sound annotation
  (fastpass registry entries + auto-discovered ARM passes).
* `only(cls)`: a context in which every other pass's annotation is neutral (not skip-, not
  copy-sound), so `fastpass.enabled(...)` changes the treatment of `cls` only.
* `changed_since(rev)`: passes whose annotation claims (entries compared, not source lines)
  changed since a git revision.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import inspect
import itertools
import logging
import pkgutil
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

# The names of ops and what an annotation claims are fastpass's own (its proof ledger digests the
# claims the same way): one definition, used here for the gate's changed-since and everywhere else.
from fastpass.annotations import claimed_ops, op_name
from verify.gate.aim import ops_reached

_log = logging.getLogger(__name__)
_LOADED_FILES: dict[str, Any] = {}
ANNOTATIONS_DIR = "fastpass/annotations"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


class PassRefError(ValueError):
    pass


def qualname(cls: type) -> str:
    from fastpass.annotations import qualname as q

    return q(cls)


def _split(ref: str) -> tuple[str, str, bool]:
    """(where, name, where is a file) of a pass reference; PassRefError when it has no two parts."""
    if ":" in ref:
        where, _, name = ref.rpartition(":")
    else:
        where, _, name = ref.rpartition(".")
    if not where or not name:
        raise PassRefError(f"bad pass reference {ref!r}: use module:Class or path/to/file.py:Class")
    return where, name, where.endswith(".py") or "/" in where


def reference_problem(ref: str) -> str | None:
    """What is wrong with a pass reference on its face, in the words `resolve` would use, or None:
    checked before the gate imports the lowering stack (torch, executorch: seconds, and their
    warnings on stderr), so that a usage error is one quick line. Nothing is imported or run (the
    file or module is read: verify.usage.references); whether the class imports and is an ExportPass is
    `resolve_pass`'s to find out."""
    from verify.usage.references import binds, module_source

    try:
        where, name, is_file = _split(ref)
    except PassRefError as exc:
        return str(exc)
    if is_file:
        source: Path | None = Path(where)
        if not source.is_file():
            return f"no such file {where!r} (from pass reference {ref!r})"
    elif where in sys.modules:  # imported already: asked, as resolve will
        found = getattr(sys.modules[where], name.split(".")[0], None) is not None
        return None if found else f"{where!r} has no attribute {name!r}"
    else:
        source, missing = module_source(where)
        if missing:
            return f"cannot import {where!r}: {missing}"
    if source is not None and binds(source, name.split(".")[0]) is False:
        return f"{where!r} has no attribute {name!r}"
    return None


def resolve(ref: str) -> type:
    """`module:Class`, `path/file.py:Class` or a fully qualified `module.Class` name."""
    where, name, is_file = _split(ref)
    if is_file:
        path = Path(where).resolve()
        if not path.is_file():
            raise PassRefError(f"no such file {where!r} (from pass reference {ref!r})")
        module = _LOADED_FILES.get(str(path))
        if module is None:
            mod_name = "gate_user_" + re.sub(r"\W", "_", path.stem) + f"_{len(_LOADED_FILES)}"
            try:
                module = _exec_module(mod_name, path)
            except BaseException as exc:  # noqa: BLE001 - a user's file: any failure is bad input
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise PassRefError(f"cannot load {where!r}: {_one_line(exc)}") from None
            _LOADED_FILES[str(path)] = module
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise PassRefError(f"cannot import {where!r}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - the module exists but fails while importing
            raise PassRefError(f"cannot import {where!r}: {_one_line(exc)}") from None
    obj = module
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise PassRefError(f"{where!r} has no attribute {name!r}")
    if not isinstance(obj, type):
        raise PassRefError(f"{ref!r} is not a class")
    return obj


def resolve_pass(ref: str) -> type:
    """`resolve(ref)`, refusing anything but an ExportPass subclass: fastpass's skip and copy only
    ever apply to ExportPass calls, so any other class has nothing the gate could prove."""
    from executorch.exir.pass_base import ExportPass

    cls = resolve(ref)
    if not issubclass(cls, ExportPass):
        raise PassRefError(f"{ref!r} is {cls.__module__}.{cls.__qualname__}, not an ExportPass subclass "
                           "(fastpass skips and copies only in ExportPass calls)")
    return cls


def _exec_module(name: str, path: Path, package_dir: str | None = None) -> Any:
    """Import the file `path` as module (or, with `package_dir`, package) `name`; it stays in
    `sys.modules` (a pass class's module must be found there) unless executing it fails."""
    extra = {} if package_dir is None else {"submodule_search_locations": [package_dir]}
    spec = importlib.util.spec_from_file_location(name, path, **extra)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _one_line(exc: BaseException) -> str:
    """`SyntaxError: invalid syntax (passes.py, line 3)`: the exception, without a traceback."""
    if isinstance(exc, SyntaxError):
        where = f" ({Path(exc.filename or '?').name}, line {exc.lineno})"
        return f"SyntaxError: {exc.msg}{where}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def import_pass_modules() -> None:
    """Import every ARM pass module (and the exir passes the registry names) so that
    `ExportPass.__subclasses__()` sees them all.

    Modules no one asked for are imported here, and one of them prints on import (executorch's
    devtools visualization: "Error: 'model_explorer' is not installed" on stdout, which reached
    the end of every gate log): what they print is a debug message, not the command's output."""
    import io

    import executorch.backends.arm._passes as arm_passes
    from fastpass.annotations import registered_names

    modules = [f"{arm_passes.__name__}.{info.name}" for info in pkgutil.iter_modules(arm_passes.__path__)]
    modules += [name.rsplit(".", 1)[0] for name in registered_names()]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception:  # noqa: BLE001 - optional debug modules need extra packages
                pass
    if printed.getvalue().strip():
        _log.debug("importing the pass modules printed: %s", printed.getvalue().strip())


def export_pass_classes() -> list[type]:
    from executorch.exir.pass_base import ExportPass

    seen, out, todo = set(), [], [ExportPass]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                out.append(sub)
                todo.append(sub)
    return out


def _registry_class(name: str) -> type | None:
    module, _, cls_name = name.rpartition(".")
    try:
        obj = importlib.import_module(module)
    except Exception:  # noqa: BLE001
        return None
    return getattr(obj, cls_name, None)


def annotated_passes() -> dict[str, type]:
    """qualname -> class of every pass with a skip- or copy-sound annotation."""
    from fastpass.annotations import lookup, registered_names

    import_pass_modules()
    out: dict[str, type] = {}
    for name in registered_names():
        cls = _registry_class(name)
        if isinstance(cls, type):
            out[name] = cls
    for cls in export_pass_classes():
        if inspect.isabstract(cls) or cls.__module__.startswith("gate_user_"):
            continue
        ann = lookup(cls)
        if ann.skip_sound or ann.copy_sound:
            out.setdefault(qualname(cls), cls)
    return dict(sorted(out.items()))


def ensure_annotation(cls: type) -> str:
    """Give a user pass that declares `targeted_ops` (and optionally `skip_sound`/`copy_sound`
    class attributes) an annotation, if fastpass does not know it yet. Returns its source."""
    from fastpass.annotations import lookup, register

    ann = lookup(cls)
    if ann.skip_sound or ann.copy_sound:
        return ann.source
    ops = getattr(cls, "targeted_ops", None)
    if ops is None:
        return ann.source
    if callable(ops) and not hasattr(ops, "__iter__"):
        ops = ops()
    register(cls, frozenset(ops), skip_sound=bool(getattr(cls, "skip_sound", True)),
             copy_sound=bool(getattr(cls, "copy_sound", True)), why="verify gate: class attribute targeted_ops")
    return "class attribute targeted_ops"


@contextlib.contextmanager
def only(keep: Iterable[type] | type | None, copy_only: Iterable[type] = ()) -> Iterator[None]:
    """Neutralise the annotation of every known pass except `keep` (an `annotations.overridden`
    context: leaving it restores the entries exactly). The passes in `copy_only` (among `keep`)
    keep their annotation with its skip claim withdrawn: fastpass then runs them and copies in
    them, where its skip would have taken every call (the copy claim's only way to be exercised)."""
    from dataclasses import replace

    from fastpass.annotations import Entry, entries, overridden

    keep_set = {keep} if isinstance(keep, type) else set(keep or ())
    keep_names = {qualname(c) for c in keep_set}
    neutral = Entry(frozenset(), skip_sound=False, copy_sound=False, why="verify gate: neutralised")
    names = set(entries()) | {qualname(c) for c in export_pass_classes()}
    changes = {name: neutral for name in names - keep_names}
    registry = entries()
    for cls in copy_only:
        name = qualname(cls)
        if name in keep_names and name in registry:
            changes[name] = replace(registry[name], skip_sound=False)
    with overridden(changes):
        yield


def upstream_skip_covers(cls: type) -> bool:
    """True if upstream already skips the pass whenever fastpass could: an ARM op-targeted pass
    (`ArmOpTargetedPass`) returns before `call()` unless one of its `target_ops` is in the graph;
    when each of those is also a targeted op of the annotation, a call upstream lets through has a
    targeted op, so fastpass's skip never applies (fastpass checks upstream's skip first). An
    override of `should_run_pass` that only adds reasons to skip keeps that true
    (`_only_narrows_should_run`)."""
    from fastpass.annotations import lookup

    try:
        from executorch.backends.arm._passes.arm_pass import ArmOpTargetedPass
    except ImportError:  # pragma: no cover
        return False
    if not (isinstance(cls, type) and issubclass(cls, ArmOpTargetedPass)):
        return False
    if cls.should_run_pass is not ArmOpTargetedPass.should_run_pass and not _only_narrows_should_run(cls):
        return False
    upstream = set(getattr(cls, "target_ops", ()) or ())
    return bool(upstream) and upstream <= set(lookup(cls).targeted_ops)


def aten_level(cls: type) -> bool:
    """True for passes whose targeted ops are all plain ATen overloads (the passes ARM's quantizer
    runs in transform_for_annotation, before the edge dialect): run them on ATen graphs."""
    import torch
    from fastpass.annotations import lookup

    ops = lookup(cls).targeted_ops or frozenset(getattr(cls, "target_ops", ()) or ())
    return bool(ops) and all(type(o) is torch._ops.OpOverload for o in ops)


def edge_only(cls: type) -> bool:
    """Does the pass see edge graphs only? Not one the quantizer's transform_for_annotation
    pipeline also runs (ATen graphs), not one run on the exported graph itself, not one whose
    targeted ops are all ATen overloads (`aten_level`)."""
    from generators.random.reach import QUANTIZER_ONLY, RUN_OUTSIDE_MANAGERS, quantizer_first

    name = cls.__name__
    return (not aten_level(cls) and name not in RUN_OUTSIDE_MANAGERS
            and name not in quantizer_first() and name not in QUANTIZER_ONLY)


def in_place_overload(name: str) -> bool:
    """`aten.add_.Tensor`, not `aten._to_copy.default`: an ATen op that writes its input."""
    namespace, op = (name.split(".") + [""])[:2]
    return namespace == "aten" and op.endswith("_") and not op.startswith("_")


def never_in_edge_graph(name: str) -> bool:
    """An op name no program to_edge hands the passes holds: an in-place ATen overload (the
    program is functional) or the ATen form of a view op (to_edge made it its ``*_copy`` form)."""
    from generators.random.reach import VIEW_OPS

    namespace, op = (name.split(".") + [""])[:2]
    return in_place_overload(name) or (namespace == "aten" and op in VIEW_OPS)


def aimed_ops(cls: type, targeted: Iterable[Any], annotation: bool = False) -> list[Any]:
    """The targeted ops a drawn graph can put in front of the pass: for a pass that sees edge
    graphs only, not the ones `never_in_edge_graph` names; in the quantizer's transform_for_annotation
    pipeline (`annotation`: an ATen graph), only ATen overloads (no edge-dialect op is there).

    Why: a vocabulary op is matched in every form it presents (`x.permute` presents both
    `aten.permute.default` and `aten.permute_copy.default`), so an entry of an edge pass that
    targets only the ATen form of a view op (a dropped `permute_copy`) counted every permute
    graph as targeted: the skip check never drew one, and the annotation, which makes fastpass
    skip the pass on every permute graph, was called sound (the gate's self-test: a
    RewriteHighRankSingletonPermutePass mutant survived)."""
    if annotation:
        import torch

        return [o for o in targeted if type(o) is torch._ops.OpOverload]
    if not edge_only(cls):
        return list(targeted)
    return [o for o in targeted if not never_in_edge_graph(op_name(o))]


def _syntax_tree(code: Any):
    """The syntax tree of `code` (source text, or a function/class whose source is read), or None
    when it cannot be read or parsed. Both readers of pass code below decide from the tree, so
    that words in docstrings and comments do not count; each decides what unreadable code means."""
    import ast
    import textwrap

    try:
        source = code if isinstance(code, str) else inspect.getsource(code)
        return ast.parse(textwrap.dedent(source))
    except (OSError, TypeError, SyntaxError):
        return None


def _reaches_export_call(source: str) -> bool:
    """Does this code call ExportPass.call: `super().call(...)`, `ExportPass.call(...)` or a
    name of ExportPass's retracing base (`_ExportPassBase...`)?"""
    import ast

    tree = _syntax_tree(source)
    if tree is None:
        return True  # unreadable: assume it may retrace
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "_ExportPassBase":
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "call":
            owner = node.func.value
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                return True
            if isinstance(owner, ast.Name) and owner.id in ("ExportPass", "_ExportPassBase"):
                return True
    return False


@functools.lru_cache(maxsize=None)
def never_retraces(cls: type) -> str | None:
    """Why fastpass's copy can never act in `cls`, or None: its `call()` is its own (not
    ExportPass's, which retraces), and neither it nor any method of its ExportPass bases below
    ExportPass, nor a function of their modules they call by name, reaches ExportPass.call (by
    `super().call(...)` or by name). fastpass copies nodes only inside a retrace: such a pass
    edits the graph in place, and a copy-sound claim on it has nothing to act on.

    Read from the code, not concluded from a search: a pass that retraces only after an edit it
    made would look the same in a search that never presented its form."""
    from executorch.exir.pass_base import ExportPass

    owner = next((k for k in cls.__mro__ if "call" in vars(k)), None)
    if owner is None or owner is ExportPass or not issubclass(owner, ExportPass):
        return None
    sources = []
    for klass in cls.__mro__:
        if klass is ExportPass or klass is object or not issubclass(klass, ExportPass):
            continue
        try:
            sources.append(inspect.getsource(klass))
        except (OSError, TypeError):
            return None  # unread code may retrace
        module = sys.modules.get(klass.__module__)
        for value in vars(klass).values():
            code = getattr(getattr(value, "__func__", value), "__code__", None)
            for name in code.co_names if code is not None else ():
                helper = getattr(module, name, None)
                if inspect.isfunction(helper) and helper.__module__ == klass.__module__:
                    try:
                        sources.append(inspect.getsource(helper))
                    except (OSError, TypeError):
                        return None
    if any(_reaches_export_call(source) for source in sources):
        return None
    return (f"its call() ({owner.__name__}.call) edits the graph in place: neither it nor its methods and "
            f"helpers reach ExportPass.call, and fastpass copies nodes only inside a retrace")


def _only_narrows_should_run(cls: type) -> bool:
    """Does every override of `should_run_pass` between `cls` and ArmOpTargetedPass only add
    reasons to skip: each of its returns is `False` or `super().should_run_pass(...)`? Then it
    runs the pass in no call ArmOpTargetedPass's own test would skip (e.g. DecomposePermuteForU55Pass:
    `if not U55: return False; return super().should_run_pass(graph_module)`; a conjunction with
    super's test: `return fp and not int and super().should_run_pass(gm)`). Read from the
    syntax tree; anything else (another return, unreadable source) is not taken as narrowing."""
    import ast

    from executorch.backends.arm._passes.arm_pass import ArmOpTargetedPass

    for klass in cls.__mro__:
        if klass is ArmOpTargetedPass:
            return True
        fn = vars(klass).get("should_run_pass")
        if fn is None:
            continue
        tree = _syntax_tree(fn)
        if tree is None:
            return False
        for node in ast.walk(tree):
            if not isinstance(node, ast.Return):
                continue
            value = node.value
            if isinstance(value, ast.Constant) and value.value is False:
                continue
            if _is_super_should_run(value):
                continue
            # `return A and ... and super().should_run_pass(gm)`: true only where super's is
            # (CastIntComparisonInputsPass: FP-only spec and super's test)
            if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And) and any(
                    _is_super_should_run(v) for v in value.values):
                continue
            return False
    return False


def _is_super_should_run(value) -> bool:
    """Is this expression `super().should_run_pass(...)`?"""
    import ast

    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "should_run_pass" and isinstance(value.func.value, ast.Call)
            and isinstance(value.func.value.func, ast.Name) and value.func.value.func.id == "super")


_NAMED_OP = re.compile(r"(?:exir_ops\.edge|torch\.ops)\.(\w+)\.(\w+)\.(\w+)")
_HELPER_DEPTH = 3  # helper of a helper of a helper: deeper calls are the library's, not the pass's


def ops_declared_by(cls: type) -> frozenset[str]:
    """Op names the pass itself declares it acts on: its `target_ops` (ArmOpTargetedPass and
    passes like it; upstream's own should_run_pass runs the pass only with one of them present),
    else its `_TARGET_OPS` (the set a few passes' call() matches nodes against: DecomposeGroupNormPass,
    DecomposeLayerNormPass, ConvertMinMaxPass).
    Why: an op the pass declares but its annotation leaves out is the likeliest wrong annotation
    (a reviewer drops or forgets one of a list); the gate draws it on purpose
    (`verify.gate.graphs.DrawKind.DECLARED_UNTARGETED`)."""
    ops = getattr(cls, "target_ops", None)
    if ops is None:
        ops = getattr(cls, "_TARGET_OPS", None)
    if ops is None or callable(ops) or isinstance(ops, (str, bytes)):
        return frozenset()
    try:
        return frozenset(op_name(o) for o in ops)
    except TypeError:  # not a collection of ops: nothing declared
        return frozenset()


@functools.lru_cache(maxsize=None)
def ops_named_by(cls: type) -> frozenset[str]:
    """Op names (`aten.mean.dim`) that `cls`'s code names: the source of the class and of each
    ExportPass base (`exir_ops.edge.NS.OP.OVERLOAD`, `torch.ops.NS.OP.OVERLOAD`), the op objects
    its methods and class attributes reach by name (a module constant `NEG = ...edge.aten.neg`,
    a table of ops), the attribute chains and literal `getattr`s its source evaluates to against
    its module's globals (`verify.gate.aim.ops_reached`: `A = exir_ops.edge.aten` ... `A.neg.default`,
    imports under another name), and the same for the functions and classes its methods call by
    name, wherever they live (a helper in another module), a few calls deep.

    Why: the gate biases graphs toward a pass's *annotated* ops, so an annotation that misses an
    op the pass really rewrites would never meet that op, and a copy-sound claim would look
    sound. The ops a pass's code names are a superset of the ops it can rewrite (it names the
    ops it matches and the ops it emits), so drawing them too puts a missing op in front of the
    pass. Read per class, not per module: ops another pass of the same module names would
    take their share of the aimed graphs from the ones this pass's code names. If no class
    source can be read, the modules' sources are. Nothing is concluded from the names alone:
    they only steer which graphs are drawn (`verify.gate.graphs.Aim`)."""
    from executorch.exir.pass_base import ExportPass

    names: set[str] = set()
    seen: set[int] = set()
    read_any = False
    for klass in cls.__mro__:
        if klass is ExportPass or klass is object or not issubclass(klass, ExportPass):
            continue
        read_any |= _names_in_class(klass, names, seen, 0)
    if not read_any:
        for klass in cls.__mro__:
            if klass is ExportPass or klass is object or not issubclass(klass, ExportPass):
                continue
            try:
                source = inspect.getsource(sys.modules[klass.__module__])
            except (OSError, TypeError, KeyError):
                continue
            names |= {".".join(m) for m in _NAMED_OP.findall(source)}
            names |= ops_reached(_syntax_tree(source), vars(sys.modules[klass.__module__]))
    return frozenset(names)


def _names_in_class(klass: type, names: set[str], seen: set[int], depth: int) -> bool:
    """Add the ops `klass`'s own source and class dictionary name; True if its source was read."""
    if id(klass) in seen:
        return True
    seen.add(id(klass))
    try:
        source = inspect.getsource(klass)
    except (OSError, TypeError):
        source = None
    module_globals = vars(sys.modules[klass.__module__]) if klass.__module__ in sys.modules else {}
    if source is not None:
        names |= {".".join(m) for m in _NAMED_OP.findall(source)}
        names |= ops_reached(_syntax_tree(source), module_globals)  # aliases, getattr by name
    for value in vars(klass).values():
        value = getattr(value, "__func__", value)  # staticmethod / classmethod
        if isinstance(value, property):
            value = value.fget
        if getattr(value, "__code__", None) is not None:
            _names_in_function(value, names, seen, depth)
        elif not isinstance(value, type):  # a class attribute naming a class (passes required after) is no call
            _names_in_value(value, names, seen, depth, module_globals)
    return source is not None


def _names_in_function(fn: Any, names: set[str], seen: set[int], depth: int) -> None:
    """Add the ops function `fn` reaches by global name (op objects, collections of them), and
    those of the functions and classes it names, to `_HELPER_DEPTH` calls deep."""
    code = getattr(fn, "__code__", None)
    if code is None or id(code) in seen:
        return
    seen.add(id(code))
    module_globals = getattr(fn, "__globals__", {})
    if depth > 0:  # a helper: its own source (the pass's class source was read already)
        try:
            source = inspect.getsource(fn)
            names |= {".".join(m) for m in _NAMED_OP.findall(source)} | ops_reached(_syntax_tree(source),
                                                                                    module_globals)
        except (OSError, TypeError):
            pass
    stack, referenced = [code], []
    while stack:
        c = stack.pop()
        referenced.extend(c.co_names)
        stack.extend(const for const in c.co_consts if hasattr(const, "co_code"))
    for name in referenced:
        if name in module_globals:
            _names_in_value(module_globals[name], names, seen, depth, module_globals)


def _names_in_value(value: Any, names: set[str], seen: set[int], depth: int, module_globals: dict) -> None:
    import torch

    if isinstance(value, torch._ops.OpOverload) or type(value).__name__ == "EdgeOpOverload":
        names.add(op_name(value))
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in list(value)[:512]:
            _names_in_value(item, names, seen, _HELPER_DEPTH, module_globals)
    elif isinstance(value, dict):
        for key, item in list(value.items())[:512]:
            _names_in_value(key, names, seen, _HELPER_DEPTH, module_globals)
            _names_in_value(item, names, seen, _HELPER_DEPTH, module_globals)
    elif depth < _HELPER_DEPTH and _is_own_code(value):  # not inside a table: data names no helper
        if isinstance(value, type):
            _names_in_class(value, names, seen, depth + 1)
        else:
            _names_in_function(value, names, seen, depth + 1)


def _is_own_code(value: Any) -> bool:
    """A function or class of the passes' world (not torch's or Python's): the helpers worth
    following. Library internals name ops they dispatch, not ops a pass rewrites."""
    module = getattr(value, "__module__", None) or ""
    if not (isinstance(value, type) or inspect.isfunction(value)):
        return False
    return not module.startswith(("torch", "builtins", "typing", "functools", "collections", "sympy", "numpy"))


def describe_annotation(cls: type) -> dict:
    from fastpass.annotations import lookup

    ann = lookup(cls)
    return {"targeted_ops": sorted(op_name(o) for o in ann.targeted_ops), "skip_sound": ann.skip_sound,
            "copy_sound": ann.copy_sound, "source": ann.source}


def changed_since(rev: str, repo: Path | None = None) -> tuple[set[str], bool]:
    """(qualnames whose annotation changed, everything_changed).

    Loads the annotation package (fastpass/annotations/*.py) as it was at `rev` and as it is in
    the working tree, each in isolation, and compares what they claim: per registry entry its
    `AnnotationClaim` (op set, or UPSTREAM; skip_sound; copy_sound), and per ExportPass class what
    `lookup` answers (so a change to discovery or lookup names exactly the passes it moves). A
    reworded `why`, a comment, a reformatted table or a new representation gates nothing. A
    package that cannot be loaded at either side, and a change to fastpass's own copy/skip
    machinery (fastpass/*.py outside the annotations), affect every annotation."""
    repo = repo or PROJECT_ROOT
    check = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=repo,
                           capture_output=True, text=True)
    if check.returncode != 0:
        raise PassRefError(f"unknown git revision {rev!r}: {check.stderr.strip()}")
    # The copy/skip machinery is what makes an annotation sound or not: a change to it puts every
    # annotation up for proof again.
    core = subprocess.run(["git", "diff", "--name-only", rev, "--", "fastpass"], cwd=repo,
                          capture_output=True, text=True)
    if core.returncode != 0 or any(line.endswith(".py") and not line.startswith(ANNOTATIONS_DIR + "/")
                                   for line in core.stdout.splitlines()):
        return set(), True
    old_files = _annotation_files_at(rev, repo)
    new_files = {path.name: path.read_text() for path in sorted((repo / ANNOTATIONS_DIR).glob("*.py"))}
    if old_files == new_files:
        return set(), False
    try:
        with _isolated_package(old_files, "at_rev") as old, _isolated_package(new_files, "tree") as new:
            return _changed_claims(old, new), False
    except Exception as exc:  # noqa: BLE001 - either side may be any code: nothing is comparable
        _log.warning("annotations at %s or in the tree cannot be loaded (%s): every annotation is changed",
                     rev, _one_line(exc))
        return set(), True


@dataclass(frozen=True)
class AnnotationClaim:
    """What an annotation claims, and so what the gate proves: `why` and `source` are left out."""

    ops: frozenset[str] | str  # op names, "UPSTREAM" (the pass's own target_ops), or "unresolvable: ..."
    skip_sound: bool
    copy_sound: bool


def _entry_claim(package: Any, value: Any) -> AnnotationClaim:
    """The claim of one registry value: an `Entry`, or the `(ops, skip, copy, why)` tuple of
    registries written before Entry existed (the ledger's gated revision may predate it)."""
    if isinstance(value, tuple):
        ops, skip_sound, copy_sound = value[:3]
    else:
        ops, skip_sound, copy_sound = value.ops, value.skip_sound, value.copy_sound
    if ops is getattr(package.arm_registry, "UPSTREAM", None):
        names: frozenset[str] | str = "UPSTREAM"
    else:
        try:
            names = claimed_ops(ops() if callable(ops) else ops)
        except Exception as exc:  # noqa: BLE001 - e.g. a module the entry names no longer exists
            names = f"unresolvable: {_one_line(exc)}"
    return AnnotationClaim(names, bool(skip_sound), bool(copy_sound))


def _lookup_claim(package: Any, cls: type) -> AnnotationClaim:
    ann = package.lookup(cls)
    return AnnotationClaim(claimed_ops(ann.targeted_ops), ann.skip_sound, ann.copy_sound)


def _changed_claims(old: Any, new: Any) -> set[str]:
    old_entries, new_entries = old.arm_registry.REGISTRY, new.arm_registry.REGISTRY
    names: set[str] = set()
    for name in sorted(set(old_entries) | set(new_entries)):
        before = _entry_claim(old, old_entries[name]) if name in old_entries else None
        after = _entry_claim(new, new_entries[name]) if name in new_entries else None
        if before != after:
            _log.info("annotation entry changed: %s: %s -> %s", name, before, after)
            names.add(name)
    import_pass_modules()
    for cls in export_pass_classes():
        if cls.__module__.startswith("gate_user_"):
            continue
        name = qualname(cls)
        before, after = _lookup_claim(old, cls), _lookup_claim(new, cls)
        if before != after and name not in names:  # a changed entry was logged above
            _log.info("annotation lookup changed: %s: %s -> %s", name, before, after)
            names.add(name)
    return names


def _annotation_files_at(rev: str, repo: Path) -> dict[str, str]:
    listing = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:{ANNOTATIONS_DIR}"], cwd=repo,
                             capture_output=True, text=True)
    files = {}
    for name in listing.stdout.split() if listing.returncode == 0 else ():
        if name.endswith(".py"):
            files[name] = subprocess.run(["git", "show", f"{rev}:{ANNOTATIONS_DIR}/{name}"], cwd=repo,
                                         capture_output=True, text=True, check=True).stdout
    return files


_ISOLATED = itertools.count()


@contextlib.contextmanager
def _isolated_package(files: dict[str, str], tag: str) -> Iterator[Any]:
    """The annotation package made of `files`, imported under a private name from a temporary
    folder (its relative imports resolve inside it) and removed from `sys.modules` after."""
    if "arm_registry.py" not in files:
        raise PassRefError("no arm_registry.py")
    name = f"_fastpass_annotations_{tag}_{next(_ISOLATED)}"
    with tempfile.TemporaryDirectory(prefix="fastpass-annotations-") as folder:
        for file_name, text in files.items():
            (Path(folder) / file_name).write_text(text)
        try:
            package = _exec_module(name, Path(folder) / "__init__.py", package_dir=folder)
            importlib.import_module(f"{name}.arm_registry")
            yield package
        finally:
            for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[module]


LEDGER = "fastpass/annotations/proofs.json"  # in the repository (fastpass.annotations.LEDGER_PATH: installed)


def gated_at(repo: Path | None = None) -> str:
    """The revision whose every annotation a whole-registry gate run last proved: the proof
    ledger's `gated_at`. One store: a registry run's `--record-gated` writes it with the proofs it
    records (verify.gate.ledger.record), so the two never disagree."""
    from fastpass.annotations import Ledger, LedgerError

    try:
        revision = Ledger.load((repo or PROJECT_ROOT) / LEDGER).gated_at.strip()
    except LedgerError as exc:
        raise PassRefError(f"cannot read the gated revision: {exc}") from None
    if not revision:
        raise PassRefError(f"{LEDGER} names no gated revision (no whole-registry run recorded)")
    return revision


def head_if_fastpass_committed(repo: Path | None = None) -> str:
    """HEAD, if fastpass in the working tree is HEAD's (else a record would name annotations or
    machinery that were not the ones just proven); PassRefError otherwise."""
    repo = repo or PROJECT_ROOT
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "fastpass"], cwd=repo,
                           capture_output=True, text=True)
    if dirty.returncode != 0 or any(line[3:].endswith(".py") for line in dirty.stdout.splitlines()):
        raise PassRefError("fastpass has uncommitted changes: commit them, then record")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True)
    return head.stdout.strip()
