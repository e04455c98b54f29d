"""Jobs: one worker process each, one job model for every campaign.

A campaign (run, gate, bench, crosscheck, peer, fuzz) says what a worker is to do as a `Job`:
its kind (`JobKind`: which handler runs it), its settings (JSON), where its log goes, the pinned
`PYTHONHASHSEED`, its timeout and memory limit, and what it shares with the harness should it
run on a cluster. `execute(job)` writes the job file and starts the one worker entry point,
`python -m verify.jobs.worker JOB`, through verify.jobs.launcher (own process group, the parent
watched, killed on timeout, stop or memory limit; locally, or on a Ray node through
verify.cluster); it returns a `JobResult`: the exit status, the time taken, and the JSON value
the handler returned (`read()`), written by the worker to the job's result file.

    job.py       Job, JobKind, JobResult, execute (the harness's side)
    worker.py    the entry point (the worker's side): the job's handler, its result written
    launcher.py  how a worker process is started, watched, limited and ended (here, or on a
                 cluster node through a backend)
    pool.py      the one pool campaigns schedule their jobs with (width, order, stop, deadline)

Why one model: each campaign had a worker module of its own with its own job and result
format (a pickled result, a verdict JSON, a bench JSON, a replay JSON) and a command wrapper
beside them; one protocol lets a backend (a cluster) run any of them without knowing which.
"""

from verify.jobs.job import Job, JobKind, JobResult, execute

__all__ = ["Job", "JobKind", "JobResult", "execute"]
