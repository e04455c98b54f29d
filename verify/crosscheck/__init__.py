"""Crosscheck mode: every lowering a program makes, verified against fastpass as it happens.

    from verify.crosscheck import crosscheck
    with crosscheck() as session:          # or crosscheck(strict=True): raise at a divergence
        edge = to_edge_transform_and_lower(ep, partitioner=[part])   # stock result, unchanged
    print(session.records)                 # one CrosscheckRecord per lowering / top-level pass call

Each intercepted call (to_edge_transform_and_lower, to_edge, EdgeProgramManager.to_backend, and
top-level pass calls through _transform / EdgeProgramManager.transform; see intercept.py for
where and why) runs stock first, and its result (or exception) is what the caller gets; then
the same call runs with fastpass on a deep copy of the input taken before the stock call, in
the same process (a second lowering in one process is byte-identical to the first), and the
two are compared with every check in verify.compare.CHECKS. A divergence is recorded with the
first divergent pass and a reproducer file (`python -m verify replay FILE`).

What an "identical" rests on: the checks that ran (`record.checks_run`) and what fastpass did
in its run (`record.fastpass_work`: passes skipped, nodes copied). fastpass keeps its creation
signatures only while it is enabled, so a call whose input comes from a stock run starts
without them: a single top-level pass call is retraced by dispatch, and its skip/copy work is
what that record's fastpass_work shows.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from verify.crosscheck import intercept
from verify.crosscheck.record import (
    CrosscheckDivergence, CrosscheckRecord, EntryPoint, FastpassWork, SavedReproducer,
)
from verify.crosscheck.session import Session, Settings
from verify.lowering.mode import Mode
from verify.vocabulary import Verdict  # re-exported: the records' verdict

_session: Session | None = None


def enable(strict: bool = False, features: tuple[str, ...] = (), reference_sets: int = 1,
           reproducer_dir: Path | str = Path("verify-out/crosscheck"), second_mode: Mode | str = Mode.FASTPASS,
           fresh_recheck: bool = True, trust: str = "proven") -> Session:
    """Start crosschecking every lowering; returns the session that collects the records.
    `fresh_recheck`: replay each divergence in a fresh process before reporting it (fresh.py);
    `trust`: which annotations the fastpass run uses (fastpass.enabled's)."""
    global _session
    import fastpass

    if fastpass.is_enabled():
        raise RuntimeError("verify.crosscheck: fastpass is already enabled; crosscheck enables it itself "
                           "for the second lowering of each call")
    unknown = set(features) - set(fastpass.FEATURES)
    if unknown:
        raise ValueError(f"unknown fastpass features {sorted(unknown)}; features are {fastpass.FEATURES}")
    try:
        second_mode = Mode(second_mode)
    except ValueError:
        raise ValueError(f"second_mode is {Mode.FASTPASS.value!r} or {Mode.STOCK.value!r} (the null run), "
                         f"not {second_mode!r}") from None
    session = Session(Settings(strict, tuple(features), reference_sets, Path(reproducer_dir), second_mode,
                               fresh_recheck, trust))
    intercept.install(session.handle)
    _session = session
    return session


def disable() -> Session | None:
    """Stop crosschecking; returns the session that was active (None if none was)."""
    global _session
    intercept.uninstall()
    session, _session = _session, None
    return session


def is_enabled() -> bool:
    return intercept.installed()


def current() -> Session | None:
    return _session


@contextlib.contextmanager
def crosscheck(strict: bool = False, features: tuple[str, ...] = (), reference_sets: int = 1,
               reproducer_dir: Path | str = Path("verify-out/crosscheck"), second_mode: Mode | str = Mode.FASTPASS,
               fresh_recheck: bool = True, trust: str = "proven") -> Iterator[Session]:
    """`second_mode=Mode.STOCK`: stock against stock, crosscheck's own null run."""
    session = enable(strict, features, reference_sets, reproducer_dir, second_mode, fresh_recheck, trust)
    try:
        yield session
    finally:
        disable()


__all__ = ["CrosscheckDivergence", "CrosscheckRecord", "EntryPoint", "FastpassWork",
           "SavedReproducer", "Session", "Settings", "Verdict", "crosscheck", "current", "disable", "enable",
           "is_enabled"]
