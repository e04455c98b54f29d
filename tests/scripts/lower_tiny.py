"""A user's lowering script, as `python -m fastpass run` and `python -m verify crosscheck` run it:
lowers tests/models/tiny.py's model to TOSA-FP with plain executorch calls, prints the delegate
count and a digest of the serialized program, and exits with the status given as its argument
(to show the wrapper keeps it)."""

import hashlib
import sys
from pathlib import Path

import torch
from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
from executorch.exir import to_edge_transform_and_lower

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from tiny import make  # noqa: E402

module, inputs = make()
program = torch.export.export(module, inputs)
edge = to_edge_transform_and_lower(program, partitioner=[TOSAPartitioner(TosaCompileSpec("TOSA-1.0+FP"))])
delegates = sum(1 for name, _ in edge.exported_program().graph_module.named_children() if name.startswith("lowered_module"))
buffer = edge.to_executorch().buffer
print(f"delegates {delegates} program {hashlib.sha256(buffer).hexdigest()[:16]}")
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
