"""One pass's gate check in a process of its own: `python -m verify.gate.worker JOB.json`.

Started by verify.gate.workers through verify.launcher (own process group, pinned hash seed,
log file, timeout, killed with the gate). It runs `verify.gate.run.gate_pass` — the same
search and verdict as in-process — and writes the verdict as JSON (`PassVerdict.to_json`) to
the job's `result` path; the parent rebuilds the dataclass with `PassVerdict.from_json`. A
worker that dies before writing it leaves the parent to give the pass an `error` verdict.

Fault injection (tests only): `VERIFY_GATE_WORKER_FAULT=NAME:exit` makes the worker of the pass
whose class is named NAME (the job's `name`) end with `os._exit(3)` before its search, `NAME:hang` makes it sleep
until it is killed; several, comma-separated (`A:exit,B:hang`). The harness's own crash,
timeout and stop handling is what these test; nothing else reads the variable.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path

from verify.launcher import die_with_parent

FAULT_VARIABLE = "VERIFY_GATE_WORKER_FAULT"
FAULT_EXIT_STATUS = 3

log = logging.getLogger("verify.gate.worker")  # not __name__: run with -m, that is "__main__"


def _inject_fault(pass_name: str) -> None:
    """The test-only fault point (see the module docstring); inert unless the variable names this pass."""
    faults = dict(item.partition(":")[::2] for item in os.environ.get(FAULT_VARIABLE, "").split(",") if item)
    fault = faults.get(pass_name)
    if fault is None:
        return
    log.warning("gate worker: injected fault %r for %s (%s)", fault, pass_name, FAULT_VARIABLE)
    if fault == "exit":
        os._exit(FAULT_EXIT_STATUS)
    if fault == "hang":
        while True:
            time.sleep(60)
    raise ValueError(f"{FAULT_VARIABLE}: unknown fault {fault!r} for {pass_name} (exit or hang)")


def run_job(job: dict) -> None:
    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import run
    from verify.gate.verdict import PassVerdict
    from verify.lowering.heap import freeze_long_lived_heap
    from verify.report.atomic import write_text

    cls = gp.resolve_pass(job["ref"])
    stage, how = job["stage"], job["how"]
    if how is None:
        # Decide pipeline or direct before the search (it lowers the stage's pipeline once, which
        # also imports everything), then freeze that heap as the gate process did (see
        # verify.lowering.heap). A failure here is gate_pass's to report: it decides again.
        with contextlib.suppress(Exception), check.quiet():
            how = run.how_to_run(cls, stage)
    freeze_long_lived_heap()
    verdict: PassVerdict = run.gate_pass(
        cls, job["ref"], job["examples"], stage, Path(job["out"]), job["seed"], how=how,
        max_ops=job["max_ops"], shrink_seconds=job["shrink_seconds"], ops=job["ops"],
        min_evidence=job["min_evidence"])
    write_text(Path(job["result"]), json.dumps(verdict.to_json(), indent=1, default=str))


def main(job_path: str) -> None:
    from verify import verbosity
    from verify.gate.events import EventFile

    job = json.loads(Path(job_path).read_text())
    verbosity.configure(job["log_level"])  # stderr: the worker's log file
    # ... and the harness's own records for the parent's terminal (other libraries' import-time
    # warnings, the same in every worker, stay in the log file)
    logging.getLogger("verify").addHandler(EventFile(Path(job["events"])))
    _inject_fault(job["name"])  # before torch is imported: a faulty worker costs a second, not twenty
    run_job(job)


if __name__ == "__main__":
    die_with_parent()
    main(sys.argv[1])
