"""One gate job in a process of its own: `python -m verify.gate.worker JOB.json`.

Started by verify.gate.workers through verify.launcher (own process group, pinned hash seed,
log file, timeout, killed with the gate). The job is one of two kinds:

- `pass`: one pass's check, `verify.gate.run.gate_pass`; the verdict is written as JSON
  (`PassVerdict.to_json`) to the job's `result` path, and the verdict so far, after every
  example, to its `partial` path;
- `stage`: one stage's search of a registry run, `verify.gate.run.search_stage`; written as
  `{"stage": ..., "verdicts": {key: PassVerdict.to_json()}}` (each pass's verdict for this
  stage alone, plus the stage's own error entries), and in the same form, after every graph,
  to the job's `partial` path: the evidence so far, which the gate keeps when this worker is
  killed (stop, timeout) or dies before its result.

Either is the same search and verdict as in-process; the parent rebuilds the dataclasses with
`PassVerdict.from_json`. A worker that dies before writing its result leaves the parent to give
the pass (or the stage) an `error` verdict.

Fault injection (tests only): `VERIFY_GATE_WORKER_FAULT=NAME:exit` makes the worker whose job is
named NAME (a pass job: the pass's class name; a stage job: the stage, e.g. `edge-fp`) end with
`os._exit(3)` before its search, `NAME:hang` makes it sleep until it is killed; several,
comma-separated (`A:exit,B:hang`). The harness's own crash, timeout and stop handling is what
these test; nothing else reads the variable.
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
    # After every example: the verdict so far, for the gate to keep if this worker is killed (a
    # stop, its timeout) or dies before its result. Atomic: whenever it is killed, the last is whole.
    partial = Path(job["partial"]) if job.get("partial") else None
    checkpoint = None if partial is None else (
        lambda v: write_text(partial, json.dumps(v.to_json(), default=str)))
    verdict: PassVerdict = run.gate_pass(
        cls, job["ref"], job["examples"], stage, Path(job["out"]), job["seed"], how=how,
        max_ops=job["max_ops"], shrink_seconds=job["shrink_seconds"], ops=job["ops"],
        min_evidence=job["min_evidence"], checkpoint=checkpoint)
    write_text(Path(job["result"]), json.dumps(verdict.to_json(), indent=1, default=str))


def run_stage_job(job: dict) -> None:
    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import run
    from verify.lowering.heap import freeze_long_lived_heap
    from verify.report.atomic import write_text

    classes = {qn: gp.resolve_pass(ref) for qn, ref in job["passes"].items()}
    # Lower the stage's pipeline once (it imports everything), then freeze that heap as the gate
    # process did (see verify.lowering.heap).
    check.pipeline_pass_names(check.target_for(job["stage"]))
    freeze_long_lived_heap()
    # The parent's cap, sent as seconds left when the job was written: this clock's own base.
    not_after = None if job["not_after_in"] is None else time.monotonic() + job["not_after_in"]
    plan = run.StagePlan(job["stage"], tuple(classes), job["examples"], job["top_up"], job["top_up_seconds"],
                         job["seconds"], not_after, job["seed"])
    def document(verdicts: dict) -> str:
        return json.dumps({"stage": plan.stage, "verdicts": {key: v.to_json() for key, v in verdicts.items()}},
                          default=str)

    # After every graph: the evidence so far, for the gate to keep if this worker is killed (a stop,
    # its timeout) or dies before its result. Atomic, so whenever it is killed the last one is whole.
    partial = Path(job["partial"]) if job.get("partial") else None
    checkpoint = None if partial is None else (lambda verdicts: write_text(partial, document(verdicts)))
    verdicts = run.search_stage(plan, classes, Path(job["out"]), job["max_ops"], job["shrink_seconds"],
                                job["ops"], job["min_evidence"], checkpoint=checkpoint)
    write_text(Path(job["result"]), document(verdicts))


def main(job_path: str) -> None:
    from verify import verbosity
    from verify.gate.events import EventFile

    job = json.loads(Path(job_path).read_text())
    verbosity.configure(job["log_level"])  # stderr: the worker's log file
    # ... and the harness's own records for the parent's terminal (other libraries' import-time
    # warnings, the same in every worker, stay in the log file)
    logging.getLogger("verify").addHandler(EventFile(Path(job["events"])))
    _inject_fault(job["name"])  # before torch is imported: a faulty worker costs a second, not twenty
    if job.get("kind", "pass") == "stage":
        run_stage_job(job)
    else:
        run_job(job)


if __name__ == "__main__":
    die_with_parent()
    main(sys.argv[1])
