"""Resolve the Annotation of a pass instance or class.

Registry entries win over auto-discovery.  A registry entry's ops may be the
sentinel ``UPSTREAM`` ("use the pass's own ``target_ops``"), which is read
from the instance when given one (some passes set it in ``__init__``).
"""

from __future__ import annotations

from typing import Any, Dict, List

from ._discover import _as_ops, discover
from ._model import NO_ANNOTATION, Annotation, qualname

_CLASS_CACHE: Dict[type, Annotation] = {}


def _registry() -> Dict[str, Any]:
    from . import arm_registry

    return arm_registry.REGISTRY


def registered_names() -> List[str]:
    return sorted(_registry())


def register(cls_or_qualname: Any, ops: Any, *, skip_sound: bool, copy_sound: bool, why: str = "") -> None:
    """Add/replace a registry entry (for out-of-tree passes and tests).

    ``ops``: an iterable of op overloads, a zero-arg callable returning one,
    or ``arm_registry.UPSTREAM``.
    """
    from .arm_registry import UPSTREAM

    name = cls_or_qualname if isinstance(cls_or_qualname, str) else qualname(cls_or_qualname)
    if ops is not UPSTREAM and not callable(ops):
        frozen = frozenset(ops)
        ops = lambda: frozen  # noqa: E731
    _registry()[name] = (ops, bool(skip_sound), bool(copy_sound), why)
    _CLASS_CACHE.clear()


def unregister(cls_or_qualname: Any) -> None:
    name = cls_or_qualname if isinstance(cls_or_qualname, str) else qualname(cls_or_qualname)
    _registry().pop(name, None)
    _CLASS_CACHE.clear()


def _resolve(cls: type, inst: Any) -> Annotation:
    entry = _registry().get(qualname(cls))
    if entry is not None:
        from .arm_registry import UPSTREAM

        ops_spec, skip_sound, copy_sound, why = entry
        if ops_spec is UPSTREAM:
            ops = _as_ops(getattr(inst if inst is not None else cls, "target_ops", None))
            if not ops:
                return NO_ANNOTATION
        else:
            ops = frozenset(ops_spec())
        return Annotation(ops, skip_sound, copy_sound, "registry")
    found = discover(cls)
    if found is None:
        return NO_ANNOTATION
    ops, source = found
    return Annotation(ops, True, False, source)


def lookup(pass_or_cls: Any) -> Annotation:
    """Annotation for a pass instance or class (``NO_ANNOTATION`` if none)."""
    if isinstance(pass_or_cls, type):
        cls, inst = pass_or_cls, None
    else:
        cls, inst = type(pass_or_cls), pass_or_cls
    if inst is not None and "target_ops" in getattr(inst, "__dict__", {}):
        return _resolve(cls, inst)  # instance-specific, do not cache
    ann = _CLASS_CACHE.get(cls)
    if ann is None:
        ann = _resolve(cls, None)
        _CLASS_CACHE[cls] = ann
    return ann
