"""The `run` campaign: cases (model x target) verified in worker processes, each case's result
journaled as it finishes so that nothing is lost.

    runner.py         a case: the pinned worker (stock and fastpass), the null-check worker, the
                      recheck worker; their results compared (verify.compare) into a CaseReport
    worker.py         the worker's handler (a run-lowerings job of verify.jobs): builds,
                      quantizes and saves the program, lowers it in the job's modes
    saved_program.py  why every worker lowers the loaded copy of one saved program
    folder.py         a run's life in its folder (`Run`): lock, journal, resume, the cases, reports
    journal.py        the run folder's journal (one line per finished case), its lock

Why a folder: they are one job -- `python -m verify run` (verify.commands.run) calls `Run` and
verify.report writes what they found. Replaying a saved reproducer of any campaign is the
command's (verify.commands.replay), above every campaign.
"""
