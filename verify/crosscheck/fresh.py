"""Re-check a divergent call in a fresh process: a verdict must be a function of the program.

A divergence that crosscheck finds in a long test session may depend on what ran before it in
that process (an address a freed graph left, a cache some earlier test filled), not on the call
alone. Such a divergence is a bug all the same (in fastpass or in the harness), but a different
one from a divergence the call makes wherever it runs, and a reader of the report must tell them
apart at once rather than by replaying by hand. So before a divergence is reported, its saved
reproducer is replayed in a fresh process under the same hash seed (a crosscheck-replay job of
verify.jobs, its handler verify.crosscheck.replay.run_job, started by verify.jobs.launcher like every worker), and the
record says what that process found: `reproduced` (divergent there too), not reproduced
(identical there: the divergence depends on this process's history), or why it could not run.

The fresh process replays with crosscheck's own replay, which never rechecks in yet another
process (`Settings.fresh_recheck` off there).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from verify.crosscheck.record import FreshRecheck
from verify.vocabulary import Verdict

# A replay imports torch and executorch and lowers once stock, once with fastpass (and rechecks
# node order when they differ): minutes at most for the calls executorch's own tests make.
TIMEOUT_SECONDS = 1200


def recheck_in_fresh_process(reproducer_path: Path, hash_seed: str | None,
                             timeout: float = TIMEOUT_SECONDS) -> FreshRecheck:
    """Replay the reproducer at `reproducer_path` in a fresh worker process under `hash_seed`
    (this process's seed when None). Never raises: a recheck that cannot run says so."""
    from verify.jobs import Job, JobKind, execute
    from verify.jobs.launcher import WorkerMemoryExceeded, WorkerTimeout

    folder = Path(tempfile.mkdtemp(prefix="fresh-recheck-", dir=reproducer_path.parent))
    seed = hash_seed if hash_seed is not None else os.environ.get("PYTHONHASHSEED", "0")
    job = Job(JobKind.CROSSCHECK_REPLAY, {"reproducer": str(reproducer_path)}, folder / "replay.log", hash_seed=seed,
              timeout=timeout)
    try:
        ended = execute(job)
    except (WorkerTimeout, WorkerMemoryExceeded) as exc:
        return FreshRecheck(None, error=f"{exc} (log: {job.log_path})")
    except Exception as exc:  # noqa: BLE001 - the divergence stands; only the recheck is lost
        return FreshRecheck(None, error=f"{type(exc).__name__}: {exc}")
    if not ended.written:
        return FreshRecheck(None, error=f"the replay exited {ended.returncode} without a result (log: {job.log_path})")
    found = ended.read()
    return FreshRecheck(Verdict(found["verdict"]), found.get("first_divergent_pass"), found.get("error"))
