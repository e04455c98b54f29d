"""Command-line values more than one command reads (`run`, `bench`, `fuzz`): parsed in one place so
that every command refuses the same bad value with the same one line (a `UsageError`, exit 2)."""

from __future__ import annotations

from verify.usage import UsageError


def csv(text: str) -> list[str]:
    """`a, b,,c` -> ["a", "b", "c"]."""
    return [part.strip() for part in text.split(",") if part.strip()]


def features(text: str) -> tuple[str, ...]:
    """'all' is (); a list names each feature once. An empty list is refused, not read as all
    (which is what () means): `--features ""` from an unset shell variable would otherwise
    quietly verify every feature."""
    if text == "all":
        return ()
    wanted = tuple(csv(text))
    if not wanted:
        raise UsageError(f"--features {text!r}: no feature named; give 'all' or a comma-separated list")
    repeated = sorted({f for f in wanted if wanted.count(f) > 1})
    if repeated:
        raise UsageError(f"--features {text}: {', '.join(repeated)} given more than once")
    try:
        import fastpass
    except ImportError:
        return wanted
    unknown = [f for f in wanted if f not in fastpass.FEATURES]
    if unknown:
        raise UsageError(f"unknown fastpass feature(s) {', '.join(unknown)}; known: {', '.join(fastpass.FEATURES)}")
    return wanted


def timeout(seconds: float) -> float:
    """A worker timeout: a positive number of seconds."""
    if not seconds > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {seconds:g}")
    return seconds
