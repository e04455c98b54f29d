"""Command-line values more than one command reads (`run`, `bench`, `fuzz`): parsed in one place so
that every command refuses the same bad value with the same one line (a `UsageError`, exit 2)."""

from __future__ import annotations

from verify.usage import UsageError


def csv(text: str) -> list[str]:
    """`a, b,,c` -> ["a", "b", "c"]."""
    return [part.strip() for part in text.split(",") if part.strip()]


def at_least(value: float | None, least: int, option: str) -> None:
    """One usage check of a number (None: not given): refused with one line, exit 2."""
    if value is not None and not value >= least:  # NaN too
        raise UsageError(f"{option} must be at least {least}, got {value:g}")


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


HASH_SEED_MAX = 4294967295  # what PYTHONHASHSEED may hold: 0..2**32-1


def hash_seed(seed: int, option: str = "--hash-seed") -> int:
    """A PYTHONHASHSEED for workers: 0..4294967295. Anything else makes every worker die at start
    ("Fatal Python error: PYTHONHASHSEED ...", in its log only), so it is refused here, in one line."""
    if not 0 <= seed <= HASH_SEED_MAX:
        raise UsageError(f"{option} must be an integer 0..{HASH_SEED_MAX} (a PYTHONHASHSEED), got {seed}")
    return seed


def null_seed(seed: int) -> int | None:
    """`run --null-seed`: the null check's hash seed, or -1 for none (None). Another negative number
    is refused, not read as -1: a typo must not quietly drop the check."""
    if seed == -1:
        return None
    if not 0 <= seed <= HASH_SEED_MAX:
        raise UsageError(f"--null-seed must be an integer 0..{HASH_SEED_MAX} (a PYTHONHASHSEED) or -1 (no null "
                         f"check), got {seed}")
    return seed


def proof_ledger(trust: str = "proven") -> None:
    """Under the default trust fastpass reads its proof ledger (fastpass/annotations/proofs.json) at
    every enable and refuses a damaged one: refused here once, before any work, instead of as an
    error in every case or lowering. `trust="all"` needs no ledger."""
    if trust != "proven":
        return
    try:
        from fastpass.annotations import Ledger, LedgerError
    except ImportError:
        return
    try:
        Ledger.load()
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
