"""One way to patch executorch/torch objects: a table of `PatchPoint` rows and a `Patches` state.

Used by fastpass (``fastpass/_patches.py``) and by the harness's observers
(``verify/lowering/observe.py``, ``verify/gate/infer.py``, ``verify/crosscheck/intercept.py``),
so that every patch anywhere is installed, restored and documented the same way.

A row says *where* (an owner's attribute, or a function's closure cell), *when* (the features
that want it; none = always) and *what*: ``wrap(original) -> replacement``, in the style of
torch.fx's ``pass_result_wrapper``.  The replacement is built from the original when the patch
is installed, so it reads the original from its own closure -- no module-level store of
originals, and a closure variable is the cheapest lookup on a hot path.

``Patches.install`` reads each original from the owner's own ``__dict__`` (or the cell), so
``restore`` puts back the very same objects; an attribute the owner only inherited (allowed only
for rows that say so) is deleted again.  Installing while installed raises: two callers with
different feature sets cannot both be honoured, and restoring out of order would leave a
replacement behind.  ``Patches.active``/``features`` are the whole state, reset by ``restore``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, List, Tuple


class Slot(enum.Enum):
    """What a row patches."""

    ATTRIBUTE = "attribute"  # owner.__dict__[attribute]: a class's method, a module's global
    CLOSURE_CELL = "closure cell"  # the cell of free variable `attribute` of function `owner`


@dataclass(frozen=True)
class PatchPoint:
    """One patch: ``owner.attribute`` (or a closure cell) becomes ``wrap(original)``.

    ``features``: the features that want this row (installed if any of them is asked for);
    empty = always installed.  ``inherited``: the owner may lack an own attribute and inherit
    it; the replacement is then set on the owner and deleted again on restore (otherwise a
    missing own attribute is an error: the code the replacement mirrors has moved).
    """

    owner: Any
    attribute: str
    features: Tuple[str, ...]
    wrap: Callable[[Any], Any]
    why: str
    slot: Slot = Slot.ATTRIBUTE
    inherited: bool = False
    label: str = ""  # how errors and docs name the owner; default: its module and qualified name

    @classmethod
    def closure_cell(cls, function: Any, freevar: str, features: Tuple[str, ...], *,
                     wrap: Callable[[Any], Any], why: str, label: str = "") -> "PatchPoint":
        """A row patching the contents of ``function``'s closure cell for ``freevar``: every
        binding of ``function`` (``from m import f`` copies made at import time) sees it."""
        return cls(function, freevar, features, wrap, why, Slot.CLOSURE_CELL, label=label)

    def wanted(self, features: Iterable[str]) -> bool:
        return not self.features or any(f in self.features for f in features)

    @property
    def owner_name(self) -> str:
        """``module.Owner`` (a module's own name for a module), for errors and docs."""
        if self.label:
            return self.label
        owner = self.owner
        name = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None) or repr(owner)
        module = getattr(owner, "__module__", None)
        return name if module is None else f"{module}.{name}"

    @property
    def where(self) -> str:
        if self.slot is Slot.CLOSURE_CELL:
            return f"{self.owner_name} (closure cell {self.attribute})"
        return f"{self.owner_name}.{self.attribute}"


@dataclass
class _Installed:
    point: PatchPoint
    had_own: bool
    original: Any


def _cell(point: PatchPoint) -> Any:
    code = getattr(point.owner, "__code__", None)
    names = getattr(code, "co_freevars", ())
    closure = getattr(point.owner, "__closure__", None) or ()
    if point.attribute not in names or len(closure) != len(names):
        raise RuntimeError(f"patch point {point.where} not found")
    return closure[names.index(point.attribute)]


def _read(point: PatchPoint) -> Tuple[bool, Any]:
    """(the owner has its own value, the original value)."""
    if point.slot is Slot.CLOSURE_CELL:
        return True, _cell(point).cell_contents
    own = vars(point.owner)
    if point.attribute in own:
        return True, own[point.attribute]
    if not point.inherited or not hasattr(point.owner, point.attribute):
        raise RuntimeError(f"patch point {point.where} not found")
    return False, getattr(point.owner, point.attribute)


def _write(point: PatchPoint, value: Any) -> None:
    if point.slot is Slot.CLOSURE_CELL:
        _cell(point).cell_contents = value
    else:
        setattr(point.owner, point.attribute, value)


def _put_back(done: _Installed) -> None:
    if done.had_own:
        _write(done.point, done.original)
    else:
        delattr(done.point.owner, done.point.attribute)


@dataclass
class Patches:
    """The installed state of one patch table (one instance per table, process-global).

    ``name`` and ``undo`` only word the nesting error ("fastpass is already enabled (it does not
    nest: call fastpass.disable() first)").
    """

    name: str
    undo: str
    active: bool = False
    features: frozenset = frozenset()
    _installed: List[_Installed] = field(default_factory=list)

    def install(self, points: Iterable[PatchPoint], features: Iterable[str] = ()) -> None:
        """Install every row of ``points`` that ``features`` wants (all rows without features).

        All or nothing: if a row cannot be installed, the rows installed before it are restored.
        """
        if self.active or self._installed:
            raise RuntimeError(f"{self.name} is already enabled (it does not nest: {self.undo} first)")
        features = frozenset(features)
        try:
            for point in points:
                if not point.wanted(features):
                    continue
                had_own, original = _read(point)
                replacement = point.wrap(original)
                self._installed.append(_Installed(point, had_own, original))
                _write(point, replacement)
        except BaseException:
            self.restore()
            raise
        self.features = features
        self.active = True

    def restore(self) -> None:
        """Put every original back (the very same objects), last installed first."""
        while self._installed:
            _put_back(self._installed.pop())
        self.features = frozenset()
        self.active = False

    def installed_points(self) -> List[PatchPoint]:
        return [done.point for done in self._installed]


NOT_OWN = object()  # current_value of an attribute the owner does not hold itself


def current_value(point: PatchPoint) -> Any:
    """What ``point`` holds now: the cell's contents or the owner's *own* attribute (``NOT_OWN``
    if it has none) -- for checks that restore put back the very same objects."""
    if point.slot is Slot.CLOSURE_CELL:
        return _cell(point).cell_contents
    return vars(point.owner).get(point.attribute, NOT_OWN)


def markdown_table(points: Iterable[PatchPoint], feature_column: bool = True) -> str:
    """The rows as the Markdown table the patching modules' docstrings and READMEs show."""
    head = ["owner", "attribute"] + (["feature"] if feature_column else []) + ["why"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in points:
        attribute = f"`{p.attribute}`" + (" (closure cell)" if p.slot is Slot.CLOSURE_CELL else "")
        row = [f"`{p.owner_name}`", attribute]
        if feature_column:
            row.append(", ".join(p.features) if p.features else "always")
        row.append(p.why)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


__all__ = ["NOT_OWN", "PatchPoint", "Patches", "Slot", "current_value", "markdown_table"]
