"""The records of the annotation package (kept tiny so registry entries stay declarative).

* :class:`Entry`: one registry record, as written in ``arm_registry`` (or passed to
  ``overridden``/``register``): which ops a pass targets and what that is sound for.
* :class:`Annotation`: what ``lookup`` answers for one pass, the ops resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, FrozenSet, Union


class _Upstream:
    """The type of ``UPSTREAM``: one named sentinel, so a registry dump reads ``UPSTREAM``."""

    _instance = None

    def __new__(cls) -> "_Upstream":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UPSTREAM"


#: ``Entry.ops`` meaning "the pass's own ``target_ops``", read from the instance when there is one
#: (some passes set it in ``__init__``).
UPSTREAM = _Upstream()

OpsSpec = Union[_Upstream, Callable[[], FrozenSet[Any]], FrozenSet[Any]]


@dataclass(frozen=True)
class Entry:
    """One pass's registry record.

    ``ops``: ``UPSTREAM``, a zero-argument callable returning the op set (lazy, so the registry
    can be imported without the ARM backend), or an iterable of ops (frozen here).
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

    def targeted_ops(self, owner: Any = None) -> FrozenSet[Any]:
        """The op set; for ``UPSTREAM``, ``owner.target_ops`` (an instance or a class)."""
        from ._discover import _as_ops

        if isinstance(self.ops, _Upstream):
            return _as_ops(getattr(owner, "target_ops", None)) or frozenset()
        if callable(self.ops):
            return frozenset(self.ops())
        return self.ops


@dataclass(frozen=True)
class Annotation:
    targeted_ops: FrozenSet[Any]
    skip_sound: bool
    copy_sound: bool
    source: str


NO_ANNOTATION = Annotation(frozenset(), False, False, "none")


def qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
