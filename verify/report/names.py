"""File-safe names for artifacts and logs (case folders, bench worker logs): one rule for all."""

from __future__ import annotations


def safe_name(name: str) -> str:
    """`name` with every character a file name should not hold replaced by `_`."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
