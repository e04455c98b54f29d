"""Crosscheck one intercepted call: stock first (its outcome is the caller's), then fastpass on a
deep copy of the same input, compared with every check in verify.compare.CHECKS."""

from __future__ import annotations

import logging
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from verify.compare.comparison import Comparison, compare_lowerings, order_recheck
from verify.compare.divergence import Divergence, OrderRecheck
from verify.crosscheck import reproducer
from verify.crosscheck.fresh import recheck_in_fresh_process
from verify.crosscheck.inputs import copy_inputs
from verify.crosscheck.shape_env import ShapeEnvState, shape_envs_of
from verify.crosscheck.record import (
    CrosscheckDivergence, CrosscheckRecord, EntryPoint, FastpassWork, FreshRecheck, SavedReproducer,
)
from verify.lowering.lower import LoweringResult, ObservedCall, observe_call
from verify.lowering.mode import Mode
from verify.lowering.node_order import under_each_order
from verify.report.reproducer import replay_command
from verify.vocabulary import Verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settings:
    """How calls are crosschecked. `features`: fastpass features (empty = all)."""

    strict: bool = False
    features: tuple[str, ...] = ()
    reference_sets: int = 1
    reproducer_dir: Path = Path("verify-out/crosscheck")
    # STOCK: the second run is stock too (the harness's null run): what diverges then is
    # crosscheck's own doing (a copy that is not independent of the first run), not fastpass's.
    second_mode: Mode = Mode.FASTPASS
    # Replay a divergent call's reproducer in a fresh process before reporting it (fresh.py says
    # why); off in that replay itself, which must not recheck in yet another process.
    fresh_recheck: bool = True
    trust: str = "proven"  # which annotations the fastpass run uses (fastpass.enabled's trust)


@dataclass
class Session:
    """Everything crosschecked since `enable()`; `context` names the caller in each record."""

    settings: Settings
    records: list[CrosscheckRecord] = field(default_factory=list)
    context: str = ""
    listeners: list[Callable[[CrosscheckRecord], None]] = field(default_factory=list)

    @property
    def divergent(self) -> list[CrosscheckRecord]:
        return [r for r in self.records if r.divergent]

    def handle(self, entry: EntryPoint, original: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """The interceptor's handler: crosscheck the call and return (or raise) what stock did."""
        import fastpass

        if fastpass.is_enabled():
            raise RuntimeError("verify.crosscheck: fastpass is enabled around a lowering; crosscheck runs "
                               "the stock and the fastpass lowering itself (use one or the other)")
        # Copies share the caller's ShapeEnvs (see shape_env.py): their state before the call ...
        at_start = _capture_shape_envs(args, kwargs)
        try:
            # Before the stock call: passes mutate their input in place.
            pristine: tuple | None = copy_inputs(args, kwargs)
            unchecked = None
        except Exception as exc:  # noqa: BLE001 - the caller's call still runs, stock
            pristine, unchecked = None, f"input not deep-copyable: {type(exc).__name__}: {exc}"
        as_stock_left: list[ShapeEnvState | None] = []

        def stock_call() -> Any:
            value = None
            try:
                value = original(*args, **kwargs)
                return value
            finally:  # ... and as the stock call left them, before the checks' own work on copies
                as_stock_left.append(_capture_shape_envs(args, kwargs, value))

        rng = _RandomState.capture()
        stock = observe_call(stock_call, Mode.STOCK, (), True, self.settings.reference_sets)
        if pristine is None:
            _restore(as_stock_left)
            self._add(CrosscheckRecord(entry, self.context, Verdict.UNCHECKED, stock.result.seconds,
                                       stock_error=_first_line(stock.result), unchecked_reason=unchecked))
            return _outcome(stock)
        after_stock = _RandomState.capture()
        fast_args, fast_kwargs = copy_inputs(*pristine)
        rng.restore()  # the fastpass run sees the random state the stock run saw ...
        _restore([at_start])  # ... and the shape environments as stock saw them ...
        fast = observe_call(lambda: original(*fast_args, **fast_kwargs), self.settings.second_mode,
                            self.settings.features if self.settings.second_mode is Mode.FASTPASS else (),
                            True, self.settings.reference_sets, trust=self.settings.trust)
        comparison = compare_lowerings(stock.result, fast.result)
        if comparison.differs:
            comparison = comparison.with_order_recheck(
                self._recheck_order(original, pristine, rng, at_start, fast.result))
        record = self._record(entry, comparison)
        after_stock.restore()  # ... and the caller continues from where stock left it
        _restore(as_stock_left)
        if record.divergent or record.stock_nondeterministic:
            record.reproducer = self._save(entry, pristine, len(self.records), record.first_divergence)
        if record.divergent and self.settings.fresh_recheck:
            record.fresh_recheck = self._recheck_fresh(record.reproducer)
        self._add(record)
        if record.divergent and self.settings.strict:
            raise CrosscheckDivergence(record)
        return _outcome(stock)

    def _record(self, entry: EntryPoint, comparison: Comparison) -> CrosscheckRecord:
        stock, fast = comparison.stock, comparison.fastpass
        failed = {name: comparison.checks[name] for name in comparison.failed}
        return CrosscheckRecord(
            entry, self.context, comparison.verdict,
            stock.seconds, fast.seconds, stock_error=_first_line(stock),
            passes_observed=len(stock.observation.steps), delegates=len(stock.payloads),
            checks_run=tuple(comparison.checks), failed_checks=failed,
            first_divergence=(comparison.first_divergence or Divergence("unlocated")) if failed else None,
            fastpass_work=FastpassWork.from_stats(fast.fastpass_stats),
            order_recheck=comparison.order_recheck,
            relied_on=dict((fast.fastpass_stats or {}).get("relied_on", {})))

    def _recheck_order(self, original: Callable[..., Any], pristine: tuple, rng: "_RandomState",
                       at_start: ShapeEnvState | None, fast: LoweringResult) -> OrderRecheck:
        def as_the_first_runs_started() -> None:  # the random state and shape envs stock saw
            rng.restore()
            _restore([at_start])

        return recheck_node_order(original, pristine, fast, self.settings.reference_sets, as_the_first_runs_started)

    def _recheck_fresh(self, saved: SavedReproducer) -> FreshRecheck:
        if saved.path is None or saved.limitation is not None:
            why = saved.limitation or "no reproducer was saved"
            return FreshRecheck(None, error=f"the reproducer cannot replay the call by itself: {why}")
        return recheck_in_fresh_process(saved.path, os.environ.get("PYTHONHASHSEED"))

    def _save(self, entry: EntryPoint, pristine: tuple, index: int, first: Divergence | None) -> SavedReproducer:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.context or "call")[-120:]
        path = self.settings.reproducer_dir / f"{name}-{index}{reproducer.SUFFIX}"
        args, kwargs = copy_inputs(*pristine)  # saving must not touch the pristine copy's objects
        try:
            limitation = reproducer.save(path, entry, args, kwargs, self.context, self.settings.features,
                                         first.label if first is not None else None, self.settings.trust)
        except Exception as exc:  # noqa: BLE001 - the divergence is still recorded, without a file
            log.warning("crosscheck: could not save the reproducer for %s: %s", self.context, exc)
            return SavedReproducer(None, "", f"not saved: {type(exc).__name__}: {exc}")
        return SavedReproducer(path.resolve(), replay_command(path.resolve()), limitation)

    def _add(self, record: CrosscheckRecord) -> None:
        self.records.append(record)
        log.info("crosscheck %s: %s", record.context, record.describe())
        for listener in self.listeners:
            listener(record)


def _first_line(result: LoweringResult) -> str | None:
    return result.error.splitlines()[0] if result.error else None


def _outcome(stock: ObservedCall) -> Any:
    if stock.exception is not None:
        raise stock.exception
    return stock.value


def _capture_shape_envs(*objects: Any) -> ShapeEnvState | None:
    """None (logged) where the objects cannot be searched: the caller's call must run regardless."""
    try:
        return ShapeEnvState.capture(shape_envs_of(*objects))
    except Exception as exc:  # noqa: BLE001
        log.warning("crosscheck: cannot save the shape environments of a call's programs: %s: %s",
                    type(exc).__name__, exc)
        return None


def _restore(states: list[ShapeEnvState | None]) -> None:
    for state in states:
        if state is not None:
            state.restore()


class _RandomState:
    """The process's random generators (Python, NumPy, torch): a crosscheck must not move them."""

    def __init__(self, python: Any, numpy: Any, torch_state: Any) -> None:
        self.python, self.numpy, self.torch_state = python, numpy, torch_state

    @classmethod
    def capture(cls) -> "_RandomState":
        import numpy
        import torch

        return cls(random.getstate(), numpy.random.get_state(), torch.random.get_rng_state())

    def restore(self) -> None:
        import numpy
        import torch

        random.setstate(self.python)
        numpy.random.set_state(self.numpy)
        torch.random.set_rng_state(self.torch_state)



class _NotCopyable(Exception):
    pass


def recheck_node_order(original: Callable[..., Any], pristine: tuple, fast: LoweringResult, reference_sets: int = 1,
                       before_each: Callable[[], None] = lambda: None) -> OrderRecheck:
    """Call `original` stock twice more on fresh copies of `pristine` (args, kwargs), under opposite
    node-set iteration orders (verify.lowering.node_order says why): does stock depend on that
    order, where, and does either order give exactly `fast` (the fastpass lowering's result)?
    Never raises: a recheck that cannot run says so."""

    def stock_once() -> LoweringResult:  # the copy too, inside the order: every node is hashed in it
        try:
            args, kwargs = copy_inputs(*pristine)
        except Exception as exc:  # noqa: BLE001
            raise _NotCopyable(f"{type(exc).__name__}: {exc}") from exc
        before_each()
        return observe_call(lambda: original(*args, **kwargs), Mode.STOCK, (), True, reference_sets).result

    try:
        return order_recheck(*under_each_order(stock_once), fast)
    except _NotCopyable as exc:  # the divergence stands unexplained
        return OrderRecheck((), error=f"input not deep-copyable: {exc}")
    except Exception as exc:  # noqa: BLE001 - a harness failure here must not break the caller's call
        log.warning("crosscheck: the node-order recheck failed: %s: %s", type(exc).__name__, exc)
        return OrderRecheck((), error=f"recheck failed: {type(exc).__name__}: {exc}")
