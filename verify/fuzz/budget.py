"""Where a fuzzed graph's time goes, and what the harness costs against the stock lowering alone.

A campaign's rate is capped by the stock lowering it must run for every graph: nothing fastpass
does can take that away.  What the harness adds on top is the graph's preparation (build, export,
quantize: shared by both modes), fastpass's own lowering, and the checks (per-pass snapshots in
both modes, serialization, the reference model, the comparison).  `TimeBudget` splits a graph's
time that way from the campaign's coverage lines (`time_budget`; the value and its ratios are
verify.report.fuzz_coverage's, which writes them) and gives three ratios against the stock lowering
alone (the stock lowering less its per-pass snapshots: what a user's lowering costs):

- `ratio`: the harness's whole time per graph;
- `ratio_with_free_fastpass`: the same, were fastpass's lowering to take no time at all.  No
  speed-up of fastpass can bring the harness below it; only dropping checks could;
- `ratio_with_free_fastpass_and_snapshots`: were the per-pass snapshots free as well: what the
  graph's preparation, serialization, the reference model and the comparison cost on their own.

The parts come from each line's ``seconds``; lines written before those parts were recorded
give no budget.
"""

from __future__ import annotations

from verify.lowering.mode import Mode
from verify.report.fuzz_coverage import TimeBudget

# Keys of a coverage line's "seconds", besides "prepare" and the two modes' lowering times.
SNAPSHOT_KEYS = {Mode.STOCK: "stock_snapshots", Mode.FASTPASS: "fastpass_snapshots"}
SERIALIZE_KEY = "serialize"  # to_executorch(), both modes
REFERENCE_KEY = "reference"  # reference-model runs, both modes
_PARTS = ("prepare", Mode.STOCK, Mode.FASTPASS, *SNAPSHOT_KEYS.values(), SERIALIZE_KEY, REFERENCE_KEY)


def seconds_of(verdict) -> dict[str, float]:
    """A verified graph's time by part: what `record_coverage` writes as the line's "seconds"."""
    stock, fast = verdict.stock, verdict.fastpass
    return {"prepare": verdict.prepare_seconds, Mode.STOCK: stock.seconds, Mode.FASTPASS: fast.seconds,
            SNAPSHOT_KEYS[Mode.STOCK]: stock.observation.snapshot_seconds,
            SNAPSHOT_KEYS[Mode.FASTPASS]: fast.observation.snapshot_seconds,
            SERIALIZE_KEY: stock.serialize_seconds + fast.serialize_seconds,
            REFERENCE_KEY: stock.reference_seconds + fast.reference_seconds}


def time_budget(rows: list[dict]) -> TimeBudget | None:
    """The budget (mean seconds per graph) of the coverage lines that record every part and their
    start and finish, or None."""
    usable = [r for r in rows if r.get("started") and r.get("finished")
              and all(k in r.get("seconds", {}) for k in _PARTS)]
    if not usable:
        return None

    def mean(read) -> float:
        return sum(read(r) for r in usable) / len(usable)

    def part(key: str) -> float:
        return mean(lambda r: r["seconds"][key])

    return TimeBudget(len(usable), mean(lambda r: r["finished"] - r["started"]), part("prepare"),
                      part(Mode.STOCK) - part(SNAPSHOT_KEYS[Mode.STOCK]), part(SNAPSHOT_KEYS[Mode.STOCK]),
                      part(Mode.FASTPASS) - part(SNAPSHOT_KEYS[Mode.FASTPASS]), part(SNAPSHOT_KEYS[Mode.FASTPASS]),
                      part(SERIALIZE_KEY), part(REFERENCE_KEY))
