"""What a gate verdict rests on: the one place that says what `sound` means (the verdict
vocabulary itself is `fastpass.annotations.ProofStatus`, the standing the ledger records as it is,
and verify.vocabulary's `Feature`).

A pass is `sound` only when fastpass actually acted in it on the drawn graphs and the results
stayed identical: for a copy-sound annotation at least K examples in which fastpass copied
nodes of that pass, for a skip-sound one at least K examples in which it skipped the pass.
Without a divergence but with less evidence than that, the verdict names why: `inert` (the
pass's code never retraces, and fastpass copies only inside a retrace), `unreachable` (no graph
of the generators presents what it acts on, reason from generators.random.reach) or else
`unexercised` (a search that never made fastpass act proves nothing; more graphs may); distinct
from `untested` (no pipeline invokes the pass and it cannot run standalone). The evidence travels with the verdict into the table, the
JSON and the JUnit properties, so a reader sees what each "sound" rests on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verify.gate import passes as gp
from verify.gate.evidence import structural_key
from fastpass.annotations import ProofStatus
from verify.vocabulary import Ending, Feature, Route

DEFAULT_MIN_EVIDENCE = 5


@dataclass
class Evidence:
    """What fastpass did in one pass with one feature on, summed over a gate run's examples.

    `examples_with_action` counts examples with identical results in which fastpass acted in
    the pass (skipped a call of it / copied nodes inside it): the number `sound` rests on. Only
    distinct graphs count (`verify.gate.evidence.structural_key`): a graph drawn again is checked
    and summed into the other counts, but acting on it again proves nothing new; `distinct` is
    the number of distinct graphs among the `examples`, so evidence never exceeds it.
    `ops_maybe_copied` maps an op to the examples in which it was in the pass's input graph,
    not targeted, while fastpass copied nodes there: fastpass.stats() counts copied nodes per
    pass call, not per op, so this is the set the copied nodes were drawn from (an upper bound
    on the distinct ops copied), derived from the harness's snapshot of the pass's input.

    `calls_ran` and `nodes_dispatched` say why copy may never have acted: the calls in which the
    pass ran with fastpass on (neither skip took it), and the nodes its own top-level retraces
    sent the stock way (dispatch) instead of copying. Calls that ran with no node dispatched or
    copied never retraced: fastpass's copy acts only inside a retrace."""

    feature: Feature
    examples: int = 0  # examples checked with the feature on for this pass
    examples_invoked: int = 0  # ... in which the pipeline invoked the pass at least once
    invocations: int = 0  # calls of the pass (the stock pipeline's: results were identical)
    upstream_skipped: int = 0  # ... of which upstream's own should_run_pass skipped (fastpass cannot act)
    examples_with_action: int = 0
    skipped_calls: int = 0
    copied_nodes: int = 0
    ops_maybe_copied: dict[str, int] = field(default_factory=dict)
    calls_ran: int = 0  # calls in which the pass ran with fastpass on (fastpass.stats(): `ran`)
    nodes_dispatched: int = 0  # nodes its own retraces dispatched the stock way (fastpass.stats(): `dispatched`)
    distinct: int = 0  # distinct graphs (structural keys) among `examples`
    # the structural keys seen, and those fastpass acted on with identical results, in this search
    # (not in the JSON: a worker hands over the counts; stages' graphs are different lowerings)
    _seen: set[str] = field(default_factory=set, repr=False, compare=False)
    _acted: set[str] = field(default_factory=set, repr=False, compare=False)

    def add(self, invocations: int, skipped: int, copied: int, identical: bool,
            ops: set[str] | frozenset = frozenset(), upstream_skipped: int = 0, ran: int = 0,
            dispatched: int = 0, graph: Any = None) -> None:
        """One example's counts for this pass (`ran`: its calls that ran; `dispatched`: nodes).
        `graph`: the GraphSpec drawn; one whose structure (verify.gate.evidence.structural_key)
        already gave evidence gives none again. Without it each example counts as distinct."""
        key = None if graph is None else structural_key(graph)
        self.examples += 1
        if key is None or key not in self._seen:
            self.distinct += 1
        if key is not None:
            self._seen.add(key)
        self.examples_invoked += bool(invocations)
        self.invocations += invocations
        self.upstream_skipped += upstream_skipped
        self.skipped_calls += skipped
        self.copied_nodes += copied
        self.calls_ran += ran
        self.nodes_dispatched += dispatched
        acted = skipped if self.feature is Feature.SKIP else copied
        if acted and identical and (key is None or key not in self._acted):
            self.examples_with_action += 1
            if key is not None:
                self._acted.add(key)
        if copied and identical:
            for op in ops:
                self.ops_maybe_copied[op] = self.ops_maybe_copied.get(op, 0) + 1

    @property
    def action(self) -> str:
        return "skipped" if self.feature is Feature.SKIP else "copied nodes"

    def why_nothing_copied(self) -> str:
        """Why fastpass's copy never acted in the pass, from its calls that ran and the nodes its
        retraces dispatched ("" when it copied nodes, or for skip evidence): a pass that never
        retraces gives copy nothing to act on, whatever the graph; one that retraces but copies
        nothing met only nodes copy must not or cannot take."""
        if self.feature is not Feature.COPY or self.copied_nodes or not self.invocations:
            return ""
        calls = _plural(self.calls_ran, "call")
        if not self.calls_ran:
            if self.upstream_skipped == self.invocations:
                return ""  # the reason already says upstream's should_run_pass skipped every call
            return (f"it ran in none of its {_plural(self.invocations, 'call')} (each skipped), "
                    f"so fastpass's copy had nothing to act on")
        if not self.nodes_dispatched:
            return (f"it never retraced in its {calls} that ran (0 nodes dispatched): it edits the graph "
                    f"in place (or retraces only after a change it did not make here), so fastpass's copy "
                    f"has nothing to act on in these graphs")
        return (f"it retraced {_plural(self.nodes_dispatched, 'node')} in {calls} and copied none: each was "
                f"targeted, unsigned (no earlier retrace gave it a creation signature), had changed inputs or "
                f"is never copied (getitem, higher-order or in-place ops)")

    def absorb(self, other: "Evidence") -> None:
        """Add another search's counts for the same feature: a registry run's stages search
        apart (each in its worker) and a pass's evidence is the sum over them."""
        if other.feature is not self.feature:
            raise ValueError(f"cannot add {other.feature.value} evidence to {self.feature.value} evidence")
        self.examples += other.examples
        self.distinct += other.distinct
        self.examples_invoked += other.examples_invoked
        self.invocations += other.invocations
        self.upstream_skipped += other.upstream_skipped
        self.examples_with_action += other.examples_with_action
        self.skipped_calls += other.skipped_calls
        self.copied_nodes += other.copied_nodes
        self.calls_ran += other.calls_ran
        self.nodes_dispatched += other.nodes_dispatched
        for op, n in other.ops_maybe_copied.items():
            self.ops_maybe_copied[op] = self.ops_maybe_copied.get(op, 0) + n

    def to_json(self) -> dict:
        return {"feature": self.feature.value, "examples": self.examples, "distinct": self.distinct,
                "examples_invoked": self.examples_invoked,
                "invocations": self.invocations, "upstream_skipped": self.upstream_skipped,
                "examples_with_action": self.examples_with_action,
                "skipped_calls": self.skipped_calls, "copied_nodes": self.copied_nodes,
                "distinct_ops_maybe_copied": len(self.ops_maybe_copied),
                "ops_maybe_copied": dict(sorted(self.ops_maybe_copied.items())),
                "calls_ran": self.calls_ran, "nodes_dispatched": self.nodes_dispatched}

    @classmethod
    def from_json(cls, data: dict) -> "Evidence":
        """The inverse of to_json (a gate worker's evidence back in the parent). JSON written
        before `calls_ran`/`nodes_dispatched` existed loads with them 0, and before `distinct`
        with every example taken for distinct (what that gate counted)."""
        return cls(Feature(data["feature"]), examples=data["examples"], distinct=data.get("distinct", data["examples"]),
                   examples_invoked=data["examples_invoked"],
                   invocations=data["invocations"], upstream_skipped=data["upstream_skipped"],
                   examples_with_action=data["examples_with_action"], skipped_calls=data["skipped_calls"],
                   copied_nodes=data["copied_nodes"], ops_maybe_copied=dict(data["ops_maybe_copied"]),
                   calls_ran=data.get("calls_ran", 0), nodes_dispatched=data.get("nodes_dispatched", 0))


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass
class Claim:
    """What an annotation claims, as the gate checks it: which features need evidence, and why
    a claimed feature needs none (e.g. skip-sound without targeted ops: fastpass never skips)."""

    features: tuple[Feature, ...]
    waived: dict[Feature, str] = field(default_factory=dict)

    @classmethod
    def of(cls, annotation: Any, upstream_skip_covers: bool = False) -> "Claim":
        """`upstream_skip_covers`: upstream's own `should_run_pass` already skips every call in
        which none of the targeted ops is present (see passes.upstream_skip_covers)."""
        features, waived = [], {}
        if annotation.skip_sound:
            if not annotation.targeted_ops:
                waived[Feature.SKIP] = "skip-sound without targeted ops: fastpass never skips it"
            elif upstream_skip_covers:
                waived[Feature.SKIP] = ("upstream's should_run_pass skips it whenever its target_ops (all "
                                        "targeted) are absent: fastpass's skip never applies")
            else:
                features.append(Feature.SKIP)
        if annotation.copy_sound:
            features.append(Feature.COPY)
        return cls(tuple(features), waived)


@dataclass
class PassVerdict:
    qualname: str
    name: str
    ref: str
    verdict: ProofStatus = ProofStatus.SOUND
    reason: str = ""
    how: Route = Route.UNDECIDED  # how its check ran the pass: pipeline, direct, batch or annotation
    stage: str = ""
    annotation: dict = field(default_factory=dict)
    reproducers: dict = field(default_factory=dict)  # verdict value -> path
    examples: int = 0
    evidence: dict[Feature, Evidence] = field(default_factory=dict)
    waived: dict[Feature, str] = field(default_factory=dict)
    modes: dict = field(default_factory=dict)  # per feature: the search's own record (diverged, detail)
    seconds: float = 0.0
    # set when its check did not finish (STOPPED, NOT_STARTED, CUT_SHORT; then `error`): an incomplete
    # check is never green, whatever the evidence gathered before, because the graphs it would
    # still have lowered are exactly the ones that could have shown it unsound
    unfinished: Ending | None = None
    drawn: dict[str, int] = field(default_factory=dict)  # graphs of each DrawKind it was checked on (graphs.drawn_counts)

    @property
    def ok(self) -> bool:
        """Not a failure: sound, unexercised or untested."""
        return not self.verdict.fails

    @property
    def every_example_vacuous(self) -> bool:
        """Did every search (one per feature) find only examples that could not test anything
        (each search notes it in its `modes` record)?"""
        return bool(self.modes) and all(m.get("note") for m in self.modes.values())

    def not_finished(self, why: Ending, reason: str) -> None:
        """Its check did not finish (`why`, told in `reason`): `error`, so that neither CI nor
        `--record-gated` takes an interrupted or budget-cut check for a proof. The evidence so far
        stays (the table, JSON and JUnit properties show it); a failing verdict found before
        (unsound, with its reproducer) stands, and the reason adds why the rest was not run."""
        self.unfinished = why
        if self.verdict.fails:
            self.reason = f"{self.reason}; {reason}" if self.reason else reason
            return
        self.verdict, self.reason = ProofStatus.ERROR, reason

    def evidence_for(self, feature: Feature) -> Evidence:
        if feature not in self.evidence:
            self.evidence[feature] = Evidence(feature)
        return self.evidence[feature]

    @property
    def skipped_calls(self) -> int:
        return sum(e.skipped_calls for e in self.evidence.values())

    @property
    def copied_nodes(self) -> int:
        return sum(e.copied_nodes for e in self.evidence.values())

    @property
    def invocations(self) -> int:
        """Stock calls of the pass, over the examples of its first checked feature (in the
        registry run both features share each example: counting both would double it)."""
        return next(iter(self.evidence.values())).invocations if self.evidence else 0

    @property
    def examples_with_evidence(self) -> int:
        """The weakest claimed feature's count: what the verdict rests on."""
        counts = [self.evidence[f].examples_with_action for f in self.evidence]
        return min(counts) if counts else 0

    def judge(self, min_evidence: int, never_retraces: str | None = None, unreachable: str | None = None) -> None:
        """Turn a search without divergence into `sound`, or, short of evidence, into the name of
        why: `inert` when only copy evidence is missing and the pass's code never retraces
        (`never_retraces`: the argument from its code, passes.never_retraces; fastpass copies
        only inside a retrace), `unreachable` when no graph of the generators presents what it
        acts on (`unreachable`: generators.random.reach's reason), else `unexercised`."""
        if self.verdict is not ProofStatus.SOUND:
            return
        claimed = [f for f in (Feature.SKIP, Feature.COPY) if f in self.evidence]
        missing = []
        for feature in claimed:
            e = self.evidence[feature]
            if e.examples_with_action < min_evidence:
                upstream = (f", {e.upstream_skipped} of its {e.invocations} calls skipped by upstream's "
                            f"should_run_pass" if e.upstream_skipped else "")
                why = e.why_nothing_copied()
                repeats = f" ({e.distinct} distinct graphs)" if 0 < e.distinct < e.examples else ""
                missing.append(f"{feature.value}: {e.examples_with_action} of {e.examples} examples{repeats} "
                               f"{e.action} "
                               f"(pass invoked in {e.examples_invoked}{upstream}; {min_evidence} needed)"
                               + (f": {why}" if why else ""))
        notes = [f"{f.value} not checked: {why}" for f, why in self.waived.items()]
        if not claimed and notes:  # every claimed feature is one fastpass can never use
            self.verdict = ProofStatus.INERT
            self.reason = "fastpass cannot act in it: " + "; ".join(notes)
        elif not claimed:
            self.verdict = ProofStatus.UNEXERCISED
            self.reason = "no feature to check"
        elif missing:
            lacking = {feature for feature in claimed if self.evidence[feature].examples_with_action < min_evidence}
            if never_retraces and lacking == {Feature.COPY}:
                self.verdict = ProofStatus.INERT
                self.reason = "; ".join([f"fastpass cannot copy in it: {never_retraces}"] + missing + notes)
            elif unreachable:
                self.verdict = ProofStatus.UNREACHABLE
                self.reason = "; ".join([f"no generated graph presents what it acts on: {unreachable}"]
                                        + missing + notes)
            else:
                self.verdict = ProofStatus.UNEXERCISED
                self.reason = "; ".join(missing + notes)
        else:
            self.reason = "; ".join(notes)

    def to_json(self) -> dict:
        return {"qualname": self.qualname, "name": self.name, "ref": self.ref, "verdict": self.verdict.value,
                "reason": self.reason, "how": self.how.value, "stage": self.stage, "annotation": self.annotation,
                "reproducers": self.reproducers, "examples": self.examples,
                "invocations": self.invocations, "skipped_calls": self.skipped_calls,
                "copied_nodes": self.copied_nodes, "examples_with_evidence": self.examples_with_evidence,
                "evidence": {f.value: e.to_json() for f, e in self.evidence.items()},
                "waived": {f.value: why for f, why in self.waived.items()},
                "modes": self.modes, "seconds": self.seconds, "drawn": self.drawn,
                "unfinished": self.unfinished.value if self.unfinished is not None else None}

    @classmethod
    def from_json(cls, data: dict) -> "PassVerdict":
        """The inverse of to_json: a gate worker sends its verdict as JSON and the parent rebuilds
        this very dataclass (the derived counts in the JSON are recomputed from the evidence)."""
        return cls(data["qualname"], data["name"], data["ref"], ProofStatus(data["verdict"]), data["reason"],
                   Route(data["how"]), data["stage"], annotation=data["annotation"], reproducers=data["reproducers"],
                   examples=data["examples"],
                   evidence={Feature(f): Evidence.from_json(e) for f, e in data["evidence"].items()},
                   waived={Feature(f): why for f, why in data["waived"].items()}, modes=data["modes"],
                   seconds=data["seconds"], drawn=dict(data.get("drawn", {})),
                   unfinished=Ending(data["unfinished"]) if data.get("unfinished") else None)


def make_verdict(cls: type, ref: str | None = None) -> PassVerdict:
    """A pass's verdict before any example: its names, reference and annotation, and its claim
    (the features that need evidence, those waived and why). Every check starts from it."""
    from fastpass.annotations import lookup

    qn = gp.qualname(cls)
    v = PassVerdict(qn, cls.__name__, ref or f"{cls.__module__}:{cls.__qualname__}",
                    annotation=gp.describe_annotation(cls))
    claim = Claim.of(lookup(cls), gp.upstream_skip_covers(cls))
    v.waived = dict(claim.waived)
    for feature in claim.features:
        v.evidence_for(feature)
    return v


def merge_stages(per_stage: list[PassVerdict]) -> PassVerdict:
    """One pass's registry-run verdict from its verdicts in the stages that searched it, given in
    stage order (each stage searches in a worker of its own, in parallel, so none knows another's).

    - evidence is summed per feature, and so are the examples and seconds;
    - a failing verdict (unsound-skip/-copy or error) in any stage wins over sound, the first in
      stage order; its reason, `how` and search record (`modes`) are the merged verdict's, and
      the failures of later stages are named in the reason;
    - every reproducer is kept (a later stage's under `<verdict>:<stage>` when the key is taken);
    - `stage` lists the stages in stage order.

    Not judged here: the caller judges the merged evidence (`judge(K)`) once, as for one search.
    The one difference from searching the stages one after another: a pass found unsound in an
    early stage is still checked in the later ones (they ran at the same time), and the first
    unsound verdict is kept."""
    if not per_stage:
        raise ValueError("merge_stages needs at least one stage's verdict")
    first = per_stage[0]
    failures = [v for v in per_stage if v.verdict.fails]
    decided = failures[0] if failures else first
    reason = decided.reason
    if len(failures) > 1:
        reason += "; also " + ", ".join(f"{v.verdict.value} on {v.stage}" for v in failures[1:])
    merged = PassVerdict(first.qualname, first.name, first.ref, decided.verdict, reason, decided.how,
                         ",".join(v.stage for v in per_stage), annotation=dict(first.annotation),
                         waived=dict(first.waived), modes=dict(decided.modes))
    for v in per_stage:
        merged.examples += v.examples
        merged.seconds += v.seconds
        for feature, evidence in v.evidence.items():
            merged.evidence_for(feature).absorb(evidence)
        for kind, n in v.drawn.items():
            merged.drawn[kind] = merged.drawn.get(kind, 0) + n
        for key, path in v.reproducers.items():
            merged.reproducers[key if key not in merged.reproducers else f"{key}:{v.stage}"] = path
    return merged
