"""What is running under fastpass: its on/off state and the stack of pass invocations.

Why: the node-level hooks (``_copy``) must know which pass is running, its
annotation, whether copying is allowed, and whether the interpreter at hand is
the *top-level* one (nested control-flow submodules are always dispatched).
The pass-call hook pushes a ``PassCtx``; ``call_submodule`` tracks depth.
The on/off state lives here, below both ``_patches`` (which writes it) and the
hooks (which read it), so that neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

from .annotations import Annotation
from .annotations._proofs import Trust
from .patching import Patches
from ._stats import PassRecord

# The installed patch points and the features they consult (``_patches.install`` fills it,
# ``_patches.restore`` empties it): the whole on/off state.
STATE = Patches("fastpass", "call fastpass.disable()")
# Which annotations the pass-call hook uses while enabled (set by ``_patches.install``, read by
# ``_passcall._make_ctx``).
TRUST = Trust.PROVEN


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
