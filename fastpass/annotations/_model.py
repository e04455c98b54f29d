"""The records of the annotation package (kept tiny so registry entries stay declarative).

* :class:`Entry`: one registry record, as written in ``arm_registry`` (or passed to
  ``overridden``/``register``): which ops a pass targets and what that is sound for.
* :class:`Annotation`: what ``lookup`` answers for one pass, the ops resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, FrozenSet, Iterable, Iterator, Optional, Union


class _Upstream:
    """The type of ``UPSTREAM``: one named sentinel, so a registry dump reads ``UPSTREAM``."""

    _instance = None

    def __new__(cls) -> "_Upstream":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UPSTREAM"


#: What a call rule sees for an argument that is not a graph value (a literal), see ``OpFamily``.
LITERAL = object()


class OpFamily:
    """The ops (or calls) a pass targets by a *rule* rather than by name.

    Why not a frozenset: some passes decide by a property of the op (``op.is_view``), which
    reaches ops in any namespace, including ones a library registers after a set is built; others
    decide by the call's arguments (a Python scalar in a Tensor slot), which no op set states.

    * ``rule(op)``: whether a call of ``op`` may be targeted (``op in family``).
    * ``call_rule(op, args, kwargs, value_of)``, optional: whether *this* call is targeted, for an
      op ``rule`` accepts. ``args``/``kwargs`` are the call's own (literals, and graph values in
      whatever form the caller holds them); ``value_of(arg)`` is the graph value's ``val``
      (``ProxyValue.data`` in a retrace, ``node.meta["val"]`` in a graph) or ``LITERAL``.
      The copy path asks it per call, the skip path per node (``targets_call``).
    * ``known()``: the ops to enumerate when the family is iterated (on first use): what the
      gate draws graphs from and names in its claims, and nothing a lowering pays for. A pure
      call rule has none: every op stays in the gate's cold vocabulary.
    """

    def __init__(self, rule: Callable[[Any], bool], known: Callable[[], Iterable[Any]], description: str,
                 call_rule: Optional[Callable[..., bool]] = None) -> None:
        self.rule, self.call_rule, self.description = rule, call_rule, description
        self._known = known
        self._members: Optional[FrozenSet[Any]] = None

    def __contains__(self, op: object) -> bool:
        return bool(self.rule(op))

    def targets_call(self, op: Any, args: Any, kwargs: Any, value_of: Callable[[Any], Any]) -> bool:
        if not self.rule(op):
            return False
        return self.call_rule is None or bool(self.call_rule(op, args, kwargs, value_of))

    def members(self) -> FrozenSet[Any]:
        if self._members is None:
            self._members = frozenset(op for op in self._known() if self.rule(op))
        return self._members

    def __iter__(self) -> Iterator[Any]:
        return iter(self.members())

    def __len__(self) -> int:
        return len(self.members())

    def __bool__(self) -> bool:
        return True  # a rule targets ops (or calls) even when none of the known ones matched

    def __repr__(self) -> str:
        return f"OpFamily({self.description})"


#: ``Entry.ops`` meaning "the pass's own ``target_ops``", read from the instance when there is one
#: (some passes set it in ``__init__``).
UPSTREAM = _Upstream()

OpsSpec = Union[_Upstream, Callable[[], Union[FrozenSet[Any], OpFamily]], FrozenSet[Any]]


@dataclass(frozen=True)
class Entry:
    """One pass's registry record.

    ``ops``: ``UPSTREAM``, a zero-argument callable returning the op set (lazy, so the registry
    can be imported without the ARM backend; it may return an :class:`OpFamily`), or an iterable
    of ops (frozen here).
    ``why``: the reading of the pass's code that makes the flags true; it documents, and is not
    part of what the gate proves (``claim`` is).
    """

    ops: OpsSpec
    skip_sound: bool
    copy_sound: bool
    why: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.ops, _Upstream) and not callable(self.ops):
            object.__setattr__(self, "ops", frozenset(self.ops))
        object.__setattr__(self, "skip_sound", bool(self.skip_sound))
        object.__setattr__(self, "copy_sound", bool(self.copy_sound))

    def targeted_ops(self, owner: Any = None) -> Union[FrozenSet[Any], OpFamily]:
        """The op set; for ``UPSTREAM``, ``owner.target_ops`` (an instance or a class)."""
        from ._discover import _as_ops

        if isinstance(self.ops, _Upstream):
            return _as_ops(getattr(owner, "target_ops", None)) or frozenset()
        if callable(self.ops):
            ops = self.ops()
            return ops if isinstance(ops, OpFamily) else frozenset(ops)
        return self.ops


@dataclass(frozen=True)
class Annotation:
    targeted_ops: Union[FrozenSet[Any], OpFamily]
    skip_sound: bool
    copy_sound: bool
    source: str


NO_ANNOTATION = Annotation(frozenset(), False, False, "none")


def qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
