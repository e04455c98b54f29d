"""One process, one hash seed: lower the case's quantized program in each mode asked.

A run job's handler (`JobKind.RUN_LOWERINGS`, run by `python -m verify.jobs.worker`, started by
verify.run.runner through verify.jobs) with PYTHONHASHSEED already set by the parent: the hash
seed must be fixed before the interpreter starts, which is why each seed gets its own process.
Its outputs are files of its own (`NAME.status.json`, a pickled LoweringResult per lowering),
not a JSON result: a lowering result is not JSON.

The pinned worker (`"save_program": true`) builds the model — twice, to tell whether the
factory is deterministic — quantizes it once and saves the program (verify.run.saved_program);
every worker, this one included, lowers the loaded copy, so the null check and the recheck
lower exactly what the pinned run lowered. Both modes of one comparison run here, one after
the other, on deep copies of that program (measured: a second stock lowering in a process
gives the same bytes as the first; the test suite keeps that true).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import time
import traceback
from pathlib import Path

from verify.usage.output_paths import CannotWrite
from verify.report.atomic import atomic_output, write_text

log = logging.getLogger(__name__)


def _factory_determinism(first: dict[str, str], second: dict[str, str]) -> dict:
    differs = sorted(k for k in first.keys() | second.keys() if first.get(k) != second.get(k))
    return {"deterministic": not differs, "differs_in": differs[:10], "differing": len(differs)}


def _prepare(job: dict, status: dict, target):
    """The program to lower: built, quantized and saved here (pinned), or loaded (null, recheck)."""
    from verify.cases import build_digest, build_model, load_model_code
    from verify.lowering.quantize import export_program
    from verify.run.saved_program import load_program, save_program, wait_for_program

    program_path = Path(job["program"])
    if job.get("save_program"):
        module, inputs = build_model(job["model"])
        first = build_digest(module, inputs)
        second = build_digest(*build_model(job["model"]))
        status["factory"] = _factory_determinism(first, second)
        program = export_program(module, inputs, target, job.get("calibration", "histogram"))
        save_program(program, program_path)
    else:
        load_model_code(job["model"])  # whatever the model's file registers (custom ops)
        wait_for_program(program_path)
    return load_program(program_path)


def _node_order(order: str | None):
    """Node hashing in `order` for one lowering (lower() copies the program inside it), or as is."""
    import contextlib

    if order is None:
        return contextlib.nullcontext()
    from verify.lowering.node_order import NodeOrder, ordered_node_hashes

    return ordered_node_hashes(NodeOrder(order))


def run_job(job: dict) -> None:
    """Prepare the program, then each lowering the job names, each written as it finishes; a
    failure to prepare is the status's `prepare_error`. CannotWrite is the worker's to report."""
    out = Path(job["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    status: dict = {"hash_seed": os.environ.get("PYTHONHASHSEED"), "lowerings": []}

    def write_status() -> None:
        write_text(out / f"{job['name']}.status.json", json.dumps(status, indent=1))

    from verify.lowering.lower import lower
    from verify.lowering.targets import get_target

    try:
        target = get_target(job["target"])
        start = time.perf_counter()
        program = _prepare(job, status, target)
        status["prepare_seconds"] = time.perf_counter() - start
    except CannotWrite:
        raise  # the disk, not the case: see verify.jobs.worker
    except Exception as exc:  # noqa: BLE001
        status["prepare_error"] = f"{type(exc).__name__}: {exc}"
        status["prepare_traceback"] = traceback.format_exc()
        write_status()
        return
    write_status()
    for label, mode, features, *node_order in job["lowerings"]:
        log.info("[worker] lowering %s (%s %s)", label, mode, ",".join(features))
        # A node order (verify.lowering.node_order) for run's recheck of stock; none: address order.
        with _node_order(node_order[0] if node_order else None):
            result = lower(program, target, mode, tuple(features), snapshots=job.get("snapshots", True),
                           reference_sets=job.get("reference_sets", 3), hash_seed=status["hash_seed"])
        with atomic_output(out / f"{job['name']}.{label}.pkl", "wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        status["lowerings"].append({"label": label, "seconds": result.seconds, "error": result.error_type})
        write_status()

