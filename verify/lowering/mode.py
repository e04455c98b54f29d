"""The two ways the harness lowers a program, named once for every boundary they cross
(LoweringResult.mode, worker jobs, the JSON report, bench and coverage files, CLI output)."""

from __future__ import annotations

import contextlib
from enum import Enum
from typing import Any


class Mode(str, Enum):
    """`stock` is executorch as installed; `fastpass` is the same call inside
    `fastpass.enabled(features)`. The switch is the only difference between the two runs."""

    STOCK = "stock"
    FASTPASS = "fastpass"

    def __str__(self) -> str:
        return self.value

    def context(self, features: tuple[str, ...] = (), trust: str = "proven") -> Any:
        """The context a lowering runs in for this mode (`features`: fastpass's; empty = all;
        `trust`: which annotations fastpass uses, fastpass.annotations._proofs.Trust)."""
        if self is Mode.STOCK:
            return contextlib.nullcontext()
        import fastpass

        return fastpass.enabled(features=features or None, trust=trust)
