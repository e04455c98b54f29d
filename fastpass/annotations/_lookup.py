"""Resolve the Annotation of a pass instance or class, and the layers entries come from.

An entry is looked up in three layers, first hit wins:

1. ``overridden({...})`` contexts, innermost first: temporary entries for the gate (which
   neutralises every pass but the one under proof) and for tests (a deliberately wrong entry).
   Leaving the context removes its layer, so what was there before is back exactly; the
   checked-in table is never written to.
2. ``register(...)``: entries for out-of-tree passes, for the rest of the process.
3. ``arm_registry.REGISTRY``: the checked-in table.

A pass with no entry falls back to auto-discovery (``_discover``), skip-sound only.  An entry's
ops may be ``UPSTREAM`` ("use the pass's own ``target_ops``"), read from the instance when
given one (some passes set it in ``__init__``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Mapping, Optional

from ._discover import discover
from ._model import NO_ANNOTATION, UPSTREAM, Annotation, Entry, qualname

_CLASS_CACHE: Dict[type, Annotation] = {}
_REGISTERED: Dict[str, Entry] = {}
# Innermost last.  A layer maps a qualname to an Entry, or to None for "no entry here either".
_OVERRIDES: List[Dict[str, Optional[Entry]]] = []


def _name(cls_or_qualname: Any) -> str:
    return cls_or_qualname if isinstance(cls_or_qualname, str) else qualname(cls_or_qualname)


def _table() -> Mapping[str, Entry]:
    from . import arm_registry

    return arm_registry.REGISTRY


def entry(cls_or_qualname: Any) -> Optional[Entry]:
    """The registry entry in effect for a pass (None: no entry, discovery decides)."""
    name = _name(cls_or_qualname)
    for layer in reversed(_OVERRIDES):
        if name in layer:
            return layer[name]
    if name in _REGISTERED:
        return _REGISTERED[name]
    return _table().get(name)


def entries() -> Dict[str, Entry]:
    """qualname -> the entry in effect, for every pass that has one."""
    names = set(_table()) | set(_REGISTERED)
    for layer in _OVERRIDES:
        names |= set(layer)
    found = {name: entry(name) for name in sorted(names)}
    return {name: e for name, e in found.items() if e is not None}


def registered_names() -> List[str]:
    return list(entries())


def register(cls_or_qualname: Any, ops: Any, *, skip_sound: bool, copy_sound: bool, why: str = "") -> None:
    """Add or replace an entry for the rest of the process (out-of-tree passes).

    ``ops``: an iterable of op overloads, a zero-arg callable returning one, or ``UPSTREAM``.
    For a temporary entry use ``overridden`` instead: it restores what was there.
    """
    _REGISTERED[_name(cls_or_qualname)] = Entry(ops, skip_sound, copy_sound, why)
    _CLASS_CACHE.clear()


def unregister(cls_or_qualname: Any) -> None:
    """Remove an entry added by ``register`` (the checked-in table is not touched)."""
    _REGISTERED.pop(_name(cls_or_qualname), None)
    _CLASS_CACHE.clear()


class OverrideOrderError(RuntimeError):
    """An ``overridden`` context was left while a context entered after it was still active."""


@contextlib.contextmanager
def overridden(changes: Mapping[Any, Optional[Entry]]) -> Iterator[None]:
    """Entries in effect inside the ``with`` block only: ``{pass class or qualname: Entry}``
    (``None`` removes the entry, so discovery decides).  Contexts nest; leaving one that is not
    the innermost raises ``OverrideOrderError`` (its layer could no longer be removed exactly)."""
    layer: Dict[str, Optional[Entry]] = {}
    for key, value in changes.items():
        if value is not None and not isinstance(value, Entry):
            raise TypeError(f"overridden: the value for {_name(key)!r} is {type(value).__name__}, not an Entry or None")
        layer[_name(key)] = value
    _OVERRIDES.append(layer)
    _CLASS_CACHE.clear()
    try:
        yield
    finally:
        _CLASS_CACHE.clear()
        depth = next(i for i, active in enumerate(_OVERRIDES) if active is layer)
        del _OVERRIDES[depth]  # the layers are independent: removing this one restores the rest
        inner = len(_OVERRIDES) - depth
        if inner:
            raise OverrideOrderError(
                f"annotations.overridden({_summary(layer)}) left while {inner} context(s) entered inside it "
                "are still active: leave the innermost first")


def _summary(layer: Mapping[str, Any]) -> str:
    names = sorted(n.rsplit(".", 1)[-1] for n in layer)
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _resolve(cls: type, inst: Any) -> Annotation:
    found_entry = entry(cls)
    if found_entry is not None:
        ops = found_entry.targeted_ops(inst if inst is not None else cls)
        if found_entry.ops is UPSTREAM and not ops:
            return NO_ANNOTATION
        return Annotation(ops, found_entry.skip_sound, found_entry.copy_sound, "registry")
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
