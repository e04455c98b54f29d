"""A `where:name` reference (a model factory, a pass class) read on its face: is `where` there,
and does its source bind `name`, without importing or running any of it.

Why: a usage error is refused with one line before any work, and before the heavy imports a run
needs (torch, executorch: seconds, and third-party noise on stderr). Whether the code imports, and
whether the name is what it must be, is for the run to find out; where reading cannot tell (a
star import, an extension module), nothing is refused.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def module_source(module: str) -> tuple[Path | None, str | None]:
    """The source file of `module`, found without importing anything: the top-level package's spec
    (finding it imports nothing), then the file system, package by package. (path, None); (None,
    why) when there is no such module; (None, None) when reading cannot tell (an extension or
    namespace module, a finder of the package's own)."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None, None
    if spec is None:
        return None, f"No module named {top!r}"
    if not rest:
        return (Path(spec.origin), None) if spec.origin and spec.origin.endswith(".py") else (None, None)
    folders = [Path(f) for f in (spec.submodule_search_locations or ())]
    for i, part in enumerate(rest):
        name = ".".join([top, *rest[:i + 1]])
        package = next((f / part for f in folders if (f / part / "__init__.py").is_file()), None)
        plain = next((f / f"{part}.py" for f in folders if (f / f"{part}.py").is_file()), None)
        if package is None and plain is None:
            if any((f / part).is_dir() or any(f.glob(f"{part}.*")) for f in folders):
                return None, None  # a namespace package or an extension module
            return None, f"No module named {name!r}"
        if i == len(rest) - 1:
            return (package / "__init__.py" if package else plain), None
        if package is None:
            return None, f"No module named {module!r} ({name!r} is not a package)"
        folders = [package]
    return None, None


_DYNAMIC_CALLS = frozenset({"globals", "vars", "setattr", "exec", "eval", "__import__"})


def binds(path: Path, name: str) -> bool | None:
    """Whether the module source at `path` binds `name` at its top level (def, class, import,
    assignment, also inside if/try/with/for blocks): True, False, or None when reading cannot
    tell (it does not parse, a star import, a module `__getattr__`, `global`, `globals()`...)."""
    import ast

    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    dynamic = False

    def visit(node: ast.AST) -> None:
        nonlocal dynamic
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
                dynamic = dynamic or any(isinstance(n, ast.Global) for n in ast.walk(child))
                continue  # its body binds its own names
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for alias in child.names:
                    dynamic = dynamic or alias.name == "*"
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, ast.ExceptHandler) and child.name:
                names.add(child.name)
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in _DYNAMIC_CALLS:
                dynamic = True
            visit(child)

    visit(tree)
    if name in names:
        return True
    return None if dynamic or "__getattr__" in names else False
