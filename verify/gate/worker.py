"""The gate's job handlers, each run in a process of its own by `python -m verify.jobs.worker`.

Started by verify.gate.workers as verify.jobs jobs (own process group, pinned hash seed, log
file, timeout, killed with the gate). Two kinds:

- `JobKind.GATE_PASS` (`run_pass_job`): one pass's check, `verify.gate.run.gate_pass`; its
  result is the verdict as JSON (`PassVerdict.to_json`), and the verdict so far, after every
  example, is written to the job's `partial` path;
- `JobKind.GATE_STAGE` (`run_stage_job`): one stage's search of a registry run,
  `verify.gate.search.search_stage`; its result is `{"stage": ..., "verdicts": {key:
  PassVerdict.to_json()}}` (each pass's verdict for this stage alone, plus the stage's own error
  entries), written in the same form, after every graph, to the job's `partial` path: the
  evidence so far, which the gate keeps when this worker is killed (stop, timeout) or dies
  before its result.

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
import time
from pathlib import Path

from verify.vocabulary import Route

FAULT_VARIABLE = "VERIFY_GATE_WORKER_FAULT"
FAULT_EXIT_STATUS = 3

log = logging.getLogger(__name__)


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


def _begin(job: dict) -> None:
    """Before the search: the harness's own records to the events file, relayed to the parent's
    terminal (other libraries' import-time warnings, the same in every worker, stay in the log
    file); then the test-only fault, before torch is imported (a faulty worker costs a second)."""
    from verify.gate.events import EventFile

    logging.getLogger("verify").addHandler(EventFile(Path(job["events"])))
    _inject_fault(job["name"])


def run_pass_job(job: dict) -> dict:
    _begin(job)
    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import reproducer, run
    from verify.gate.verdict import PassVerdict
    from verify.lowering.heap import freeze_long_lived_heap
    from verify.report.atomic import write_text

    cls = gp.resolve_pass(job["ref"])
    stage, how = job["stage"], Route(job["how"])
    if how is Route.UNDECIDED:
        # Decide pipeline or direct before the search (it lowers the stage's pipeline once, which
        # also imports everything), then freeze that heap as the gate process did (see
        # verify.lowering.heap). A failure here is gate_pass's to report: it decides again.
        with contextlib.suppress(Exception), check.quiet():
            how = reproducer.how_to_run(cls, stage)
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
    return verdict.to_json()


def run_stage_job(job: dict) -> dict:
    _begin(job)
    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate.plan import StagePlan
    from verify.gate.search import search_stage
    from verify.lowering.heap import freeze_long_lived_heap
    from verify.report.atomic import write_text

    classes = {qn: gp.resolve_pass(ref) for qn, ref in job["passes"].items()}
    # Lower the stage's pipeline once (it imports everything), then freeze that heap as the gate
    # process did (see verify.lowering.heap).
    check.pipeline_pass_names(check.target_for(job["stage"]))
    freeze_long_lived_heap()
    # The parent's cap, sent as seconds left when the job was written: this clock's own base.
    not_after = None if job["not_after_in"] is None else time.monotonic() + job["not_after_in"]
    plan = StagePlan(job["stage"], tuple(classes), job["examples"], job["top_up"], job["top_up_seconds"],
                     job["seconds"], not_after, job["seed"])
    def document(verdicts: dict) -> dict:
        return {"stage": plan.stage, "verdicts": {key: v.to_json() for key, v in verdicts.items()}}

    # After every graph: the evidence so far, for the gate to keep if this worker is killed (a stop,
    # its timeout) or dies before its result. Atomic, so whenever it is killed the last one is whole.
    partial = Path(job["partial"]) if job.get("partial") else None
    checkpoint = None if partial is None else (
        lambda verdicts: write_text(partial, json.dumps(document(verdicts), default=str)))
    verdicts = search_stage(plan, classes, Path(job["out"]), job["max_ops"], job["shrink_seconds"],
                            job["ops"], job["min_evidence"], checkpoint=checkpoint)
    return document(verdicts)

