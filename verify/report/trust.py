"""Whether a reproducer may be replayed: what replaying it would execute, found without executing
anything from it (`inspect`), and the `--trust` rule (`authorize`).

A reproducer is code. A crosscheck reproducer's payload is a pickle (unpickling runs whatever
it names), a gate reproducer names a pass that replay imports (a `file.py:Class` runs that
file). So before anything runs, replay checks the file without executing it (`inspect`: the
manifest line, the graph, the pass reference, the pickle's opcodes), says what replaying it
would execute, and executes code named by the file only with `--trust` (the prompt-free
opt-in, fit for CI). A fuzz reproducer needs no trust: its replay builds the graph described
in the manifest from generators.random's vocabulary and runs no code from the file.

Every way in checks here: `python -m verify replay` (verify.commands.replay), the one replay
command. It sits beside the
format (verify.report.reproducer), below the producers whose reproducers it checks, so that a
producer's own replay may check its files too.
"""

from __future__ import annotations

import pickletools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from verify.report.reproducer import NO_PASS, Producer, Reproducer, ReproducerError, load
from verify.usage import UsageError

# module:Class, path/file.py:Class or package.module.Class (verify.gate.passes.resolve's forms)
_PASS_REFERENCE = re.compile(r"(?P<where>[^:\s]+):(?P<name>[A-Za-z_][\w.]*)|(?P<module>[A-Za-z_][\w.]*)\.(?P<cls>[A-Za-z_]\w*)")
_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING", "SHORT_BINSTRING"}


@dataclass(frozen=True)
class Execution:
    """What replaying a reproducer executes, found without executing anything from it."""

    runs_code_from_file: bool  # the file names code that replay imports or unpickles
    what: tuple[str, ...]  # lines for the reader


def inspect(saved: Reproducer) -> Execution:
    """Check `saved` without running anything from it and say what its replay would execute.
    ReproducerError (exit 2, one line) when the graph, the pass reference or the pickle is
    malformed: a reproducer that cannot be replayed says so before any work."""
    manifest, path = saved.manifest, saved.path
    if manifest.producer is Producer.CROSSCHECK:
        names = _pickle_globals(saved)
        return Execution(True, (
            f"unpickles the saved call in {path}: a pickle runs whatever it names, and this one names "
            + (", ".join(names) if names else "nothing at its top level")
            + " (and holds the call as a nested pickle, which may name more);",
            "then makes the call stock and with fastpass under crosscheck"))
    spec = _graph(saved)
    lowering = f"lowers the graph in its manifest ({len(spec)} ops from generators.random's vocabulary)"
    if manifest.producer is Producer.FUZZ:
        return Execution(False, (f"{lowering} stock and with fastpass on {manifest.target}; "
                                 "runs no code from the file",))
    if manifest.pass_ref == NO_PASS:
        return Execution(False, (f"{lowering} stock and with fastpass on for the annotated passes of the registry "
                                 f"it names ({manifest.target}); runs no code from the file",))
    where, name = _pass_reference(saved)
    if where.endswith(".py") or "/" in where:
        source = f"imports (executes) the Python file {where} for the pass {name}"
    else:
        source = f"imports the module {where} for the pass {name}"
    return Execution(True, (f"{source};", f"then {lowering} stock and with fastpass on for that pass "
                                          f"({manifest.target})"))


def _graph(saved: Reproducer):
    """The GraphSpec of a graph reproducer (data: building it runs nothing from the file)."""
    from generators.random import GraphSpec

    if not isinstance(saved.manifest.graph, dict):
        raise ReproducerError(f"malformed {saved.manifest.producer} reproducer {saved.path}: no graph in its manifest")
    try:
        return GraphSpec.from_dict(saved.manifest.graph)
    except Exception as exc:  # noqa: BLE001 - any way a saved dict fails to be a graph is a bad file
        raise ReproducerError(f"malformed {saved.manifest.producer} reproducer {saved.path}: bad graph "
                              f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None


def _pass_reference(saved: Reproducer) -> tuple[str, str]:
    """(module or file, class) of a gate reproducer's pass, read, not imported."""
    ref = saved.manifest.pass_ref
    match = _PASS_REFERENCE.fullmatch(ref) if isinstance(ref, str) else None
    if match is None:
        raise ReproducerError(f"malformed gate reproducer {saved.path}: bad pass reference {ref!r} "
                              "(module:Class or path/to/file.py:Class)")
    return (match["where"], match["name"]) if match["where"] else (match["module"], match["cls"])


def _pickle_globals(saved: Reproducer) -> list[str]:
    """The `module.name`s a pickle imports, read off its opcodes (pickletools: nothing runs)."""
    names: list[str] = []
    stack: list[object] = []  # the values string ops pushed, enough for STACK_GLOBAL's two
    memo: dict[int, object] = {}
    try:
        for op, arg, _ in pickletools.genops(saved.payload):
            if op.name in _STRING_OPS:
                stack.append(arg)
            elif op.name == "MEMOIZE":
                memo[len(memo)] = stack[-1] if stack else None
            elif op.name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1] if stack else None
            elif op.name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo.get(arg))
            elif op.name == "GLOBAL":
                names.append(str(arg).replace(" ", "."))
            elif op.name == "STACK_GLOBAL":
                names.append(f"{stack[-2] if len(stack) > 1 else '?'}.{stack[-1] if stack else '?'}")
            elif op.name == "STOP":
                break
    except Exception as exc:  # noqa: BLE001 - not a pickle, or a truncated one
        raise ReproducerError(f"malformed crosscheck reproducer {saved.path}: its payload is not a pickle "
                              f"({type(exc).__name__}: {exc})") from None
    return list(dict.fromkeys(names))


def authorize(saved: Reproducer, trust: bool) -> Execution:
    """`inspect(saved)`, and refuse (UsageError, exit 2: nothing has run) to replay a file that
    names code to run unless the user said `--trust`."""
    execution = inspect(saved)
    if execution.runs_code_from_file and not trust:
        for line in execution.what:
            print(f"replay would: {line}", file=sys.stderr)
        raise UsageError(f"{saved.path} is a {saved.manifest.producer} reproducer: replaying it runs code the file "
                         "names (above); replay only files you trust, with --trust")
    return execution


def read(path: Path) -> Reproducer:
    """The reproducer at `path`; UsageError (exit 2) if there is none or it is not one."""
    if not path.is_file():
        raise UsageError(f"no such reproducer: {path}")
    try:
        return load(path)
    except ReproducerError as exc:
        raise UsageError(str(exc)) from None
