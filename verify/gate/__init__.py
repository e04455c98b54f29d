"""The annotation gate: prove `targeted_ops` annotations skip- and copy-sound, pass by pass.

    passes.py   which passes (annotated registry, module:Class / file.py:Class, --changed-since),
                and `only(...)`: neutralise every other pass's annotation for a check
    graphs.py   per-pass biased Hypothesis strategies over generators.random graphs
    check.py    one example: pipeline (stock vs fastpass lowering, verify.compare) or direct
                (the pass alone on an edge/ATen graph, harness snapshot checks)
    run.py      Hypothesis drivers (per pass; whole registry), shrinking, reproducers, replay
    workers.py  each pass's check (run.gate_pass) in a worker via verify.jobs.launcher, -j N at a time
    worker.py   the job handlers (verify.jobs): a pass's check or a stage's search, verdicts as JSON
    events.py   the worker's log records relayed to the gate's terminal while it runs
    infer.py    `infer`: the minimal copy-sound targeted_ops a pass actually needs
    cli.py      `python -m verify gate` / `python -m verify infer`
"""
