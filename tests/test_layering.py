"""The import layers, fenced: a module may import only from its own layer or those below it;
and one name per concept: a public class name is defined in one module.

Why a test: the layering is what lets a newcomer read the flow off the folders (a command starts
a campaign, a campaign runs jobs, a job lowers, lowerings are compared, results are reported),
and lets a lower layer be reused without the ones above it (the report package by every command;
generators and fastpass without the harness). An import that points upward is easy to add and
invisible in review; this test reads every module's imports (statically, with `ast`: nothing is
imported) and names each one that breaks a rule. The last tests plant forbidden imports in a
scratch tree and show that each rule catches them.

No import circles in verify/: modules that import each other (at the top or inside a function:
an import put off to call time closes a circle all the same) cannot be read, tested or moved one
at a time, and a layer order cannot hold through them.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("verify", "fastpass", "generators")

# The modules above the report package: the commands, what they drive, the jobs they run and the
# models they load. verify.report must import none of them.
ABOVE_REPORT = ("verify.run", "verify.cli", "verify.commands", "verify.__main__", "verify.peer", "verify.fuzz",
                "verify.gate", "verify.bench", "verify.crosscheck", "verify.pytest_plugin", "verify.cases",
                "verify.jobs", "verify.cluster")

# Known breaches, each with its owner's reason; an entry that no longer breaks its rule fails
# the test (remove it), so the list only ever shrinks.
KNOWN = {
    # generators.random.check_buildable builds a graph with the harness's own recipe (one quantize
    # recipe); generators/ belongs to the gate's owner, who is moving it (issue 31).
    ("generators.random._check", "verify.lowering.targets"),
    ("generators.random._check", "verify.lowering.quantize"),
}


@dataclass(frozen=True)
class Import:
    """One imported name: `module` (absolute) and, for `from module import name`, `name`."""

    importer: str
    module: str
    name: str | None
    line: int

    @property
    def target(self) -> str:
        return f"{self.module}.{self.name}" if self.name else self.module


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> list[Import]:
    """Every import in the file at `path`, relative ones made absolute; also `alias._name`
    attribute reads on an imported project module (a private name reached through its module)."""
    importer = module_name(path, root)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    found: list[Import] = []
    aliases: dict[str, str] = {}
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(importer, alias.name, None, node.lineno))
                if not alias.asname:
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
                else:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                found.append(Import(importer, module, alias.name, node.lineno))
                aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and _private(node.attr)):
            found.append(Import(importer, aliases[node.value.id], node.attr, node.lineno))
    return found


def project_imports(root: Path = ROOT) -> list[Import]:
    return [imp for package in PACKAGES if (root / package).is_dir()
            for path in sorted((root / package).rglob("*.py")) for imp in imports_of(path, root)
            if imp.module.split(".")[0] in PACKAGES]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


# ---- the rules: each takes the imports and returns the breaches ------------------------------

def report_imports_upward(imports: list[Import]) -> list[Import]:
    """verify.report imports nothing above it (the runner, the commands, the campaigns)."""
    return [imp for imp in imports if _within(imp.importer, "verify.report")
            and any(_within(imp.target, above) or _within(imp.module, above) for above in ABOVE_REPORT)]


def compare_imports_report(imports: list[Import]) -> list[Import]:
    """verify.compare imports nothing from verify.report: the report prints compare's values
    (checks, divergences), so compare sits below it; the verdicts both speak are
    verify.vocabulary's, below both."""
    return [imp for imp in imports if _within(imp.importer, "verify.compare")
            and (_within(imp.module, "verify.report") or _within(imp.target, "verify.report"))]


def vocabulary_imports_verify(imports: list[Import]) -> list[Import]:
    """verify.vocabulary, the verdict enums every layer speaks, is the bottom of verify: it imports
    nothing of verify (fastpass's names only, which stand without the harness)."""
    return [imp for imp in imports if imp.importer == "verify.vocabulary" and _within(imp.module, "verify")]


def junit_built_outside_report(imports: list[Import]) -> list[Import]:
    """Reports are written only from verify.report (one module per report kind: files.py for run,
    gate.py for the gate, document.py the one JSON writer): no module outside it builds JUnit,
    i.e. imports verify.report.junit; a command builds its typed values and calls its report."""
    return [imp for imp in imports if not _within(imp.importer, "verify.report")
            and (_within(imp.target, "verify.report.junit") or _within(imp.module, "verify.report.junit"))]


def libraries_import_the_harness(imports: list[Import]) -> list[Import]:
    """generators and fastpass stand without the harness: neither imports verify."""
    return [imp for imp in imports if imp.importer.split(".")[0] in ("generators", "fastpass")
            and _within(imp.module, "verify")]


def private_names_across_modules(imports: list[Import]) -> list[Import]:
    """A `_private` name is used only in the module that defines it; a private *module*
    (`fastpass._patches`, `fastpass.annotations._proofs`) only inside its own top-level package
    (fastpass's modules share their private ones; verify reads fastpass's public names)."""
    breaches = []
    for imp in imports:
        parts = imp.target.split(".")
        for depth, part in enumerate(parts):
            if not _private(part):
                continue
            owner = ".".join(parts[:depth])  # the package (or module) the private part belongs to
            is_module = (ROOT / Path(*parts[: depth + 1])).with_suffix(".py").is_file() or \
                (ROOT / Path(*parts[: depth + 1])).is_dir()
            allowed = (imp.importer.split(".")[0] == parts[0]) if is_module else imp.importer == owner
            if not allowed:
                breaches.append(imp)
            break
    return breaches


def unexplained(breaches: list[Import]) -> list[str]:
    return [f"{imp.importer} (line {imp.line}) imports {imp.target}" for imp in breaches
            if (imp.importer, imp.module) not in KNOWN]


# ---- the repository ---------------------------------------------------------------------------

def test_report_does_not_import_the_runner_or_the_commands():
    assert unexplained(report_imports_upward(project_imports())) == []


def test_compare_does_not_import_the_report_and_the_vocabulary_nothing_of_verify():
    imports = project_imports()
    assert unexplained(compare_imports_report(imports) + vocabulary_imports_verify(imports)) == []


def test_junit_is_built_only_in_the_report_package():
    assert unexplained(junit_built_outside_report(project_imports())) == []


def test_generators_and_fastpass_do_not_import_verify():
    breaches = libraries_import_the_harness(project_imports())
    assert unexplained(breaches) == []


def test_no_private_name_is_imported_from_another_module():
    assert unexplained(private_names_across_modules(project_imports())) == []


def test_every_known_breach_still_breaks_its_rule():
    """The list only shrinks: a breach fixed is taken off it."""
    imports = project_imports()
    breaches = libraries_import_the_harness(imports) + private_names_across_modules(imports) + \
        report_imports_upward(imports) + junit_built_outside_report(imports) + compare_imports_report(imports) + \
        vocabulary_imports_verify(imports)
    stale = KNOWN - {(imp.importer, imp.module) for imp in breaches}
    assert not stale, f"no longer breaches: remove from KNOWN: {sorted(stale)}"


# ---- each rule catches a planted breach ---------------------------------------------------------

def _plant(root: Path, module: str, source: str) -> None:
    path = root / Path(*module.split(".")).with_suffix(".py")
    for folder in [path.parent, *path.parent.parents]:
        if folder == root:
            break
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").touch()
    path.write_text(source)


def test_each_rule_catches_a_planted_forbidden_import(tmp_path):
    _plant(tmp_path, "verify.report.table", "from verify.run.runner import CaseReport\n")
    _plant(tmp_path, "verify.report.files", "from ..commands import fuzz\n")  # relative, two levels up
    _plant(tmp_path, "generators.random.draw", "def f():\n    from verify.lowering.lower import lower\n")
    _plant(tmp_path, "verify.peer", "from verify.cli import _new_run_dir\nimport verify.cli as cli\ncli._features\n")
    _plant(tmp_path, "verify.cli", "def _new_run_dir(): pass\n_features = 1\nx = _new_run_dir\n")
    _plant(tmp_path, "verify.commands.gate", "from verify.report.junit import JunitSuite\nfrom verify.report import junit\n")
    _plant(tmp_path, "verify.report.gate", "from verify.report.junit import JunitSuite\n")  # inside: allowed
    _plant(tmp_path, "verify.compare.comparison", "def f():\n    from verify.report.verdict import Verdict\n"
                                                  "from verify.vocabulary import Verdict\n")  # below: allowed
    _plant(tmp_path, "verify.compare.checks", "from ..report import case\n")  # relative
    _plant(tmp_path, "verify.vocabulary", "from fastpass.annotations import ProofStatus\nfrom verify.usage import UsageError\n")
    imports = project_imports(tmp_path)
    assert {(i.importer, i.target) for i in report_imports_upward(imports)} == {
        ("verify.report.table", "verify.run.runner.CaseReport"), ("verify.report.files", "verify.commands.fuzz")}
    assert [(i.importer, i.module) for i in libraries_import_the_harness(imports)] == [
        ("generators.random.draw", "verify.lowering.lower")]
    assert {(i.importer, i.target) for i in private_names_across_modules(imports)} == {
        ("verify.peer", "verify.cli._new_run_dir"), ("verify.peer", "verify.cli._features")}
    assert [(i.importer, i.target) for i in junit_built_outside_report(imports)] == [
        ("verify.commands.gate", "verify.report.junit.JunitSuite"), ("verify.commands.gate", "verify.report.junit")]
    assert {(i.importer, i.target) for i in compare_imports_report(imports)} == {
        ("verify.compare.comparison", "verify.report.verdict.Verdict"), ("verify.compare.checks", "verify.report.case")}
    assert [(i.importer, i.target) for i in vocabulary_imports_verify(imports)] == [
        ("verify.vocabulary", "verify.usage.UsageError")]


def test_a_private_module_may_be_imported_inside_its_package_only():
    imports = [Import("fastpass.core", "fastpass._patches", "FEATURES", 1),
               Import("fastpass", "fastpass._patches", None, 2),
               Import("verify.lowering.lower", "fastpass._patches", "FEATURES", 3),
               Import("generators.random", "generators.random._spec", "GraphSpec", 4),
               Import("fastpass._passcall", "fastpass.annotations._proofs", None, 5),
               Import("verify.gate.check", "fastpass.annotations._model", "Entry", 6)]
    assert private_names_across_modules(imports) == [imports[2], imports[5]]


# ---- no import circles in verify/ --------------------------------------------------------------

# Known circles, each with its owner's reason; the list only shrinks (a circle broken fails the test
# below: take it off).
KNOWN_CIRCLES = {
    # launcher.launch_command, launch_module and module_job build a verify.jobs Job and execute it
    # (job.py), whose worker job.py starts through the launcher. Moving the three into job.py moves
    # their callers too (peer, cluster, the fuzz command, the gate's self-test, their tests).
    frozenset({"verify.jobs.job", "verify.jobs.launcher"}),
}


def module_files(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(path, root): path for package in PACKAGES if (root / package).is_dir()
            for path in sorted((root / package).rglob("*.py"))}


def import_graph(imports: list[Import], root: Path = ROOT, package: str = "verify") -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line}, both in `package`. `from pkg import name` is an arrow to
    the submodule `pkg.name` if there is one; a name that `pkg/__init__.py` only hands on from a
    submodule (`from verify.jobs import Job`) is an arrow to the submodule that defines it, not to
    the package, whose face would otherwise tie every module that uses it to every other."""
    files = module_files(root)
    handed_on = {(imp.importer, imp.name): imp for imp in imports
                 if imp.name and files.get(imp.importer, Path()).name == "__init__.py"}

    def resolve(module: str, name: str | None) -> str | None:
        if name and f"{module}.{name}" in files:
            return f"{module}.{name}"
        if name and (module, name) in handed_on:
            source = handed_on[module, name]
            return resolve(source.module, source.name) or module
        return module if module in files else None

    graph: dict[str, dict[str, int]] = {}
    for imp in imports:
        target = resolve(imp.module, imp.name)
        if target and target != imp.importer and _within(imp.importer, package) and _within(target, package):
            graph.setdefault(imp.importer, {}).setdefault(target, imp.line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """The modules that reach each other through imports, each circle once (strongly connected
    components of two modules or more, Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, {}):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(graph) + 100))
    try:
        for module in sorted(graph):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return found


def describe_circle(circle: frozenset[str], graph: dict[str, dict[str, int]]) -> str:
    return "; ".join(f"{a} (line {line}) imports {b}" for a in sorted(circle)
                     for b, line in sorted(graph.get(a, {}).items()) if b in circle)


def test_no_import_circles_in_verify():
    graph = import_graph(project_imports())
    found = circles(graph)
    assert [describe_circle(c, graph) for c in found if c not in KNOWN_CIRCLES] == []
    assert not KNOWN_CIRCLES - set(found), "no longer a circle: remove from KNOWN_CIRCLES"


def test_no_import_circles_in_generators():
    # _ops registered _ops_reach's ops by importing it at its bottom, which imports _ops: the
    # package's __init__ imports _ops_reach first now, and _ops imports no sibling.
    graph = import_graph(project_imports(), package="generators")
    assert [describe_circle(c, graph) for c in circles(graph)] == []


def test_a_planted_import_circle_is_caught(tmp_path):
    _plant(tmp_path, "verify.gate.check", "from verify.gate import passes as gp\n")
    _plant(tmp_path, "verify.gate.passes", "def edge_only(cls):\n    from verify.gate import check\n")  # put off
    _plant(tmp_path, "verify.jobs.job", "class Job:\n    pass\n")
    _plant(tmp_path, "verify.jobs.pool", "from verify.jobs import Job\n")  # through the face: no circle
    (tmp_path / "verify" / "jobs" / "__init__.py").write_text("from verify.jobs.job import Job\nfrom verify.jobs.pool import run\n")
    _plant(tmp_path, "verify.run.replay", "from ..crosscheck import replay\n")
    _plant(tmp_path, "verify.crosscheck.replay", "from verify.crosscheck import session\n")
    _plant(tmp_path, "verify.crosscheck.session", "from verify.run.replay import replay\n")
    graph = import_graph(project_imports(tmp_path), tmp_path)
    assert graph["verify.jobs.pool"] == {"verify.jobs.job": 1}
    assert sorted(map(sorted, circles(graph))) == [
        ["verify.crosscheck.replay", "verify.crosscheck.session", "verify.run.replay"],
        ["verify.gate.check", "verify.gate.passes"]]
    assert describe_circle(frozenset({"verify.gate.check", "verify.gate.passes"}), graph) == (
        "verify.gate.check (line 1) imports verify.gate.passes; verify.gate.passes (line 2) imports verify.gate.check")


# ---- one name per concept ---------------------------------------------------------------------

# Public class names defined in more than one module, each with its owner's reason; the list only
# shrinks (a name defined once again fails the test below: take it off).
DEFINED_TWICE = {
}


def class_definitions(root: Path = ROOT) -> dict[str, set[str]]:
    """Public top-level class name -> the modules that define one."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")) if (root / package).is_dir() else ():
            for node in ast.parse(path.read_text(), str(path)).body:
                if isinstance(node, ast.ClassDef) and not _private(node.name):
                    found.setdefault(node.name, set()).add(module_name(path, root))
    return found


def defined_more_than_once(definitions: dict[str, set[str]]) -> dict[str, set[str]]:
    return {name: modules for name, modules in definitions.items() if len(modules) > 1}


def test_each_public_class_name_is_defined_once():
    twice = defined_more_than_once(class_definitions())
    assert {name: modules for name, modules in twice.items() if DEFINED_TWICE.get(name) != modules} == {}
    assert not set(DEFINED_TWICE) - set(twice), "defined once now: remove from DEFINED_TWICE"


def test_a_second_definition_of_a_name_is_caught(tmp_path):
    _plant(tmp_path, "verify.usage", "class UsageError(Exception):\n    pass\n")
    _plant(tmp_path, "verify.peer", "class UsageError(Exception):\n    pass\nclass _Local:\n    pass\n")
    assert defined_more_than_once(class_definitions(tmp_path)) == {"UsageError": {"verify.usage", "verify.peer"}}
