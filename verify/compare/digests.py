"""A lowering reduced to digests of what the checks compare: for lowerings made in different
processes that are compared without shipping their bytes (the bench runs each lowering in a
fresh process and compares the pair in the parent).

A view of verify.compare.checks, not a second definition of "identical": the payload check's
delegate bytes, the tosa check's TOSA flatbuffers and the graph check's final snapshot (its
digest covers what the graph, val and meta checks read) -- equal digests where those checks
find nothing. The bench's `identity_problems` compares these fields."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from verify.lowering.lower import LoweringResult


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True)
class LoweringDigests:
    payloads: tuple[str, ...]  # each delegate's bytes (check_payload)
    delegate_tosa: tuple[str, ...]  # each delegate's TOSA flatbuffer (check_tosa)
    final_graph: str | None  # the final graph snapshot (check_graph, check_val, check_meta), if taken

    @classmethod
    def of(cls, result: LoweringResult) -> LoweringDigests:
        return cls(tuple(digest(p.processed_bytes) for p in result.payloads),
                   tuple(digest(t) for t in result.observation.delegate_tosa),
                   result.final.digest if result.final is not None else None)
