"""The one worker entry point: `python -m verify.jobs.worker JOB`, started by verify.jobs.execute.

JOB is a job file (`NAME.job.json`, see verify.jobs.job) or, for a command or module job run on
this machine, the job itself as JSON (on a cluster node it is a file, so its paths are
re-spelled). The worker arms `die_with_parent` first (its group dies with the harness), configures
logging at the job's level (its stderr is its log file), runs the kind's handler on the job's
settings and writes the JSON value the handler returns, atomically, to `NAME.result.json`.

Exit status: 0 when the handler returned; a handler's exception is a traceback in the log and
exit 1; `WORKER_EXIT_CANNOT_WRITE` when the file system refused one of its writes (said by the
exit status, which needs no disk, so the harness stops the run instead of blaming the job); a
command job exits as its command did (128 + N when killed by signal N), a module job as its module
did (its SystemExit code).

Handlers (`HANDLERS`) are named, not imported: a worker imports only its own kind's module,
and a gate worker's injected fault (verify.gate.worker) fires before torch is imported.
"""

from __future__ import annotations

import importlib
import json
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

from verify.jobs.job import JobKind, result_path_of
from verify.jobs.launcher import die_with_parent

# Each kind's handler: `module:function`, called with the job's settings, returning its JSON
# result (or None: the handler's outputs are files of its own, e.g. run's pickled lowerings).
HANDLERS = {
    JobKind.RUN_LOWERINGS: "verify.run.worker:run_job",
    JobKind.GATE_PASS: "verify.gate.worker:run_pass_job",
    JobKind.GATE_STAGE: "verify.gate.worker:run_stage_job",
    JobKind.BENCH_LOWERING: "verify.bench.worker:run_job",
    JobKind.CROSSCHECK_REPLAY: "verify.crosscheck.replay:run_job",
}


def handler_of(kind: JobKind):
    module, _, function = HANDLERS[kind].partition(":")
    return getattr(importlib.import_module(module), function)


def run_command(argv: list[str]) -> int:
    """A command job: run `argv` in this process group (which dies with the harness), exit as it did."""
    returncode = subprocess.call(argv)
    return 128 - returncode if returncode < 0 else returncode


def run_module(module: str, args: list[str]) -> int:
    """A module job: `python -m module *args` in this very process (nothing left to orphan), its exit status."""
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def main(argument: str) -> int:
    die_with_parent()
    inline = argument.lstrip().startswith("{")
    job: dict[str, Any] = json.loads(argument if inline else Path(argument).read_text())
    kind = JobKind(job["kind"])
    if kind is JobKind.COMMAND:
        return run_command(job["settings"]["argv"])
    if kind is JobKind.MODULE:
        return run_module(job["settings"]["module"], list(job["settings"]["args"]))
    from verify.report import verbosity
    from verify.usage.output_paths import WORKER_EXIT_CANNOT_WRITE, CannotWrite
    from verify.report.atomic import write_text

    verbosity.configure(job["log_level"])  # stderr: the worker's log file
    try:
        value = handler_of(kind)(job["settings"])
        if value is not None:
            write_text(result_path_of(Path(argument)), json.dumps(value, indent=1, default=str))
    except CannotWrite as exc:
        print(f"verify worker: {exc}", file=sys.stderr)
        return WORKER_EXIT_CANNOT_WRITE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
