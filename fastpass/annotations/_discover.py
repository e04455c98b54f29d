"""Auto-discovery of targeted ops from attributes passes already declare.

Why: several ARM passes keep their op sets in class attributes
(``_TARGET_OPS``, ``_supported_ops``, ``_EDGE_OPS``/``_ATEN_OPS``) and 90+
derive from upstream ``ArmOpTargetedPass`` with ``target_ops``.  Reusing them
avoids duplicating op lists.  Discovery alone never implies copy soundness:
attributes only say what the pass *looks for*, not that non-targeted nodes are
untouched, so discovered annotations are skip-sound only and the explicit
registry must opt a pass into copy (or veto the skip).
"""

from __future__ import annotations

from typing import Any, FrozenSet, Optional, Tuple

_ATTRS = ("_TARGET_OPS", "_supported_ops", "_EDGE_OPS", "_ATEN_OPS")


def _as_ops(value: Any) -> Optional[FrozenSet[Any]]:
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.keys()
    try:
        items = list(value)
    except TypeError:
        return None
    if not items or not all(callable(x) for x in items):
        return None
    try:
        return frozenset(items)
    except TypeError:
        return None


def discover(cls: type) -> Optional[Tuple[FrozenSet[Any], str]]:
    """Return (ops, source) from class attributes, or None."""
    found = []
    names = []
    for attr in _ATTRS:
        ops = _as_ops(getattr(cls, attr, None))
        if ops:
            found.append(ops)
            names.append(attr)
    if found:
        return frozenset().union(*found), "auto:" + "+".join(names)
    try:
        from executorch.backends.arm._passes.arm_pass import ArmOpTargetedPass
    except Exception:  # pragma: no cover
        return None
    if isinstance(cls, type) and issubclass(cls, ArmOpTargetedPass):
        ops = _as_ops(getattr(cls, "target_ops", None))
        if ops:
            return ops, "upstream:target_ops"
    return None
