"""Other node meta: every key but `val`, by the policy in verify/lowering/snapshot.py
(SPECIAL_META_KEYS says how special keys are compared, IGNORED_META_KEYS why a key is not)."""

from __future__ import annotations

from verify.lowering.snapshot import GraphSnapshot


def meta_differences(left: GraphSnapshot, right: GraphSnapshot, limit: int = 5) -> list[str]:
    out = []
    for x, y in zip(left.nodes, right.nodes):
        if x.meta == y.meta:
            continue
        mx, my = dict(x.meta), dict(y.meta)
        for key in sorted(set(mx) | set(my)):
            if key not in mx or key not in my:
                out.append(f"{x.name}: meta key {key!r} present only in {'left' if key in mx else 'right'}")
            elif mx[key] != my[key]:
                out.append(f"{x.name}: meta[{key!r}] {_short(mx[key])} != {_short(my[key])}")
            if len(out) >= limit:
                return out
    return out


def _short(value, width: int = 300) -> str:
    text = str(value)
    return text if len(text) <= width else text[: width - 3] + "..."
