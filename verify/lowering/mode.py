"""The two ways the harness lowers a program, named once for every boundary they cross
(LoweringResult.mode, worker jobs, the JSON report, bench and coverage files, CLI output)."""

from __future__ import annotations

import contextlib
from enum import Enum
from typing import Any

# What earlier versions wrote for the two modes: still read from saved files (journals, JSON
# reports, worker jobs), never written.
_LEGACY_NAMES = {"full": "stock", "fast": "fastpass"}


class Mode(str, Enum):
    """`stock` is executorch as installed; `fastpass` is the same call inside
    `fastpass.enabled(features)`. The switch is the only difference between the two runs."""

    STOCK = "stock"
    FASTPASS = "fastpass"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def _missing_(cls, value: object) -> "Mode | None":
        """Accept the names older saved files carry ("full", "fast")."""
        return cls(_LEGACY_NAMES[value]) if isinstance(value, str) and value in _LEGACY_NAMES else None

    def context(self, features: tuple[str, ...] = (), trust: str = "proven") -> Any:
        """The context a lowering runs in for this mode (`features`: fastpass's; empty = all;
        `trust`: which annotations fastpass uses, fastpass.annotations._proofs.Trust)."""
        if self is Mode.STOCK:
            return contextlib.nullcontext()
        import fastpass

        return fastpass.enabled(features=features or None, trust=trust)
