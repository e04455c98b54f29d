"""Graph identity: same node order, names, op kinds, targets, args/kwargs, outputs.

Nodes are mapped by position. A second, name-blind form lets a report say "identical up
to names", which separates a naming bug from a real rewrite.
"""

from __future__ import annotations

from verify.lowering.snapshot import GraphSnapshot


def structure_differences(left: GraphSnapshot, right: GraphSnapshot, limit: int = 5) -> list[str]:
    out = []
    if len(left) != len(right):
        out.append(f"node count {len(left)} vs {len(right)}")
    for i, (x, y) in enumerate(zip(left.nodes, right.nodes)):
        for field in ("name", "op", "target", "args", "kwargs"):
            if getattr(x, field) != getattr(y, field):
                out.append(f"node #{i} {field}: {getattr(x, field)!s} != {getattr(y, field)!s}")
                break
        if len(out) >= limit:
            break
    if len(left) != len(right) and len(out) < limit:
        extra = left.nodes[len(right):] or right.nodes[len(left):]
        out.append("unmatched nodes: " + ", ".join(f"{n.op} {n.name}" for n in extra[:limit]))
    return out


def _name_blind(snapshot: GraphSnapshot) -> list[tuple]:
    position = {node.name: i for i, node in enumerate(snapshot.nodes)}
    return [node.without_names(position) for node in snapshot.nodes]


def identical_up_to_names(left: GraphSnapshot, right: GraphSnapshot) -> bool:
    return _name_blind(left) == _name_blind(right)
