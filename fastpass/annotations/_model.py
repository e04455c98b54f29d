"""The Annotation record (kept tiny so registry entries stay declarative)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, FrozenSet


@dataclass(frozen=True)
class Annotation:
    targeted_ops: FrozenSet[Any]
    skip_sound: bool
    copy_sound: bool
    source: str


NO_ANNOTATION = Annotation(frozenset(), False, False, "none")


def qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
