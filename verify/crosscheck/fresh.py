"""Re-check a divergent call in a fresh process: a verdict must be a function of the program.

A divergence that crosscheck finds in a long test session may depend on what ran before it in
that process (an address a freed graph left, a cache some earlier test filled), not on the call
alone. Such a divergence is a bug all the same (in fastpass or in the harness), but a different
one from a divergence the call makes wherever it runs, and a reader of the report must tell them
apart at once rather than by replaying by hand. So before a divergence is reported, its saved
reproducer is replayed in a fresh process under the same hash seed (`python -m
verify.crosscheck.fresh FILE OUT`, started by verify.launcher like every worker), and the
record says what that process found: `reproduced` (divergent there too), not reproduced
(identical there: the divergence depends on this process's history), or why it could not run.

The fresh process replays with crosscheck's own replay, which never rechecks in yet another
process (`Settings.fresh_recheck` off there).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.report.verdict import Verdict

# A replay imports torch and executorch and lowers once stock, once with fastpass (and rechecks
# node order when they differ): minutes at most for the calls executorch's own tests make.
TIMEOUT_SECONDS = 1200


@dataclass(frozen=True)
class FreshRecheck:
    """What replaying a divergent call's reproducer in a fresh process found."""

    verdict: Verdict | None  # None: the replay could not run (see error)
    first_divergent_pass: str | None = None
    error: str | None = None

    @property
    def reproduced(self) -> bool | None:
        """True: divergent in a fresh process too; False: not there (history-dependent); None: unknown."""
        if self.verdict is None or self.verdict is Verdict.ERROR:
            return None
        return self.verdict is Verdict.DIVERGENT

    def describe(self) -> str:
        if self.reproduced is None:
            return f"fresh-process recheck could not run: {self.error or 'replay error'}"
        if self.reproduced:
            return f"reproduced in a fresh process (at {self.first_divergent_pass or 'not located'})"
        return (f"not reproduced in a fresh process ({self.verdict.value} there): the divergence depends on "
                f"what ran before in this process")

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value if self.verdict else None, "reproduced": self.reproduced,
                "first_divergent_pass": self.first_divergent_pass, "error": self.error}


def recheck_in_fresh_process(reproducer_path: Path, hash_seed: str | None,
                             timeout: float = TIMEOUT_SECONDS) -> FreshRecheck:
    """Replay the reproducer at `reproducer_path` in a fresh worker process under `hash_seed`
    (this process's seed when None). Never raises: a recheck that cannot run says so."""
    from verify.launcher import WorkerMemoryExceeded, WorkerTimeout, launch

    folder = Path(tempfile.mkdtemp(prefix="fresh-recheck-", dir=reproducer_path.parent))
    out, log_path = folder / "result.json", folder / "replay.log"
    seed = hash_seed if hash_seed is not None else os.environ.get("PYTHONHASHSEED", "0")
    try:
        status = launch(__name__, [str(reproducer_path), str(out)], log_path=log_path,
                        env={"PYTHONHASHSEED": seed}, timeout=timeout)
    except (WorkerTimeout, WorkerMemoryExceeded) as exc:
        return FreshRecheck(None, error=f"{exc} (log: {log_path})")
    except Exception as exc:  # noqa: BLE001 - the divergence stands; only the recheck is lost
        return FreshRecheck(None, error=f"{type(exc).__name__}: {exc}")
    if not out.is_file():
        return FreshRecheck(None, error=f"the replay exited {status} without a result (log: {log_path})")
    found = json.loads(out.read_text())
    return FreshRecheck(Verdict(found["verdict"]), found.get("first_divergent_pass"), found.get("error"))


def main(argv: list[str]) -> int:
    """The worker: replay the reproducer `argv[0]`, write what was found to `argv[1]` (JSON)."""
    from verify.launcher import die_with_parent

    die_with_parent()
    from verify.crosscheck.reproducer import replay
    from verify.report.reproducer import load

    path, out = Path(argv[0]), Path(argv[1])
    try:
        replayed = replay(load(path))
        found = {"verdict": replayed.verdict.value, "first_divergent_pass": replayed.first_divergent_pass,
                 "error": "; ".join(replayed.details) if replayed.verdict is Verdict.ERROR else None}
    except Exception as exc:  # noqa: BLE001 - written down for the parent, which reports it
        found = {"verdict": Verdict.ERROR.value, "first_divergent_pass": None, "error": f"{type(exc).__name__}: {exc}"}
    out.write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
