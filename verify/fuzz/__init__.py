"""The fuzz campaign: random graphs (generators.random), each lowered stock and with fastpass in one
process and compared (verify.compare's one comparison); Hypothesis drives the draw and shrinks a
difference to a minimal reproducer; every graph's pass coverage is recorded and judged at the end.

    search.py    one graph verified (`verify_graph`), the Hypothesis property (`fuzz`), the
                 graphs drawn toward the passes reachable on a target, reproducers and replay
    campaign.py  a campaign's settings as one value (`FuzzCampaign`), read by every xdist worker
    cells.py     the campaign on a Ray cluster: each cell a job, merged here as it returns
    coverage.py  what stock and fastpass did with each pass in each graph, and the verdict
    budget.py    where a graph's time went

Why a folder: the campaign is one job in five modules; the command that runs it is
`python -m verify fuzz` (verify.commands.fuzz), the pytest-xdist run of tests/test_fuzz.py.
"""
