"""The stack of pass invocations currently running under fastpass.

Why: the node-level hooks (``_copy``) must know which pass is running, its
annotation, whether copying is allowed, and whether the interpreter at hand is
the *top-level* one (nested control-flow submodules are always dispatched).
The pass-call hook pushes a ``PassCtx``; ``call_submodule`` tracks depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

from .annotations import Annotation
from ._stats import PassRecord


@dataclass
class PassCtx:
    pass_: Any
    ann: Annotation
    copy_on: bool
    rec: PassRecord
    depth: int = 0


STACK: List[PassCtx] = []


def current() -> Optional[PassCtx]:
    return STACK[-1] if STACK else None
