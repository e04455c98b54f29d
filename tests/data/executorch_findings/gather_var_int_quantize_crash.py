# Reproducer saved by verify (fuzz). Replay: python -m verify replay /tmp/fzC/repro/graph-c41153bf0062.py
# With the full harness: python -m verify run --models none --model /tmp/fzC/repro/graph-c41153bf0062.py:make_model --targets tosa-int --calibration minmax --null-seed -1
#
# generator bug: drawn graph does not build for tosa-int: quantize failed for target tosa-int: Exception: An error occurred when running the 'DecomposeVarPass' pass after the following passes: ['RemoveGraphAssertsPass', 'ConstantFoldingPass', 'DecomposeIndexCopyPass', 'DecomposeSelectScatterPass', 'DecomposeSliceScatterPass', 'DecomposeDynamicFullPass', 'ConvertInt64ConstOpsToInt32Pass', 'ConvertInt64OutputOpsToInt32Pass', 'InsertInt32CastsAfterInt64PlaceholdersPass', 'FoldScalarMulIntoConvPass', 'DecomposeEmbeddingPass', 'DecomposeScaledDotProductAttentionPass', 'DecomposeLogitPass', 'PromoteBoolOperandsPass', 'DecomposeSignPass', 'DecomposeTrilPass', 'DecomposeAddmmPass', 'DecomposeRemainderPass', 'DecomposeFloorDividePass', 'DecomposeDivTensorModePass', 'DecomposeWhereScalarOtherPass', 'DecomposeEinsumPass', 'RewriteInplaceArithmeticPass', 'DecomposeAddSubAlphaPass', 'ConvertEluFamilyToEluPass', 'DecomposeGroupNormPass', 'DecomposeLayerNormPass', 'DecomposeBatchNormNoStatsPass']
# GraphSpec(8 ops, seed=65535)
#   x0: input [1, 1, 8, 3]
#   x1: input [3]
#   v0 = div(x0, form='scalar', rounding_mode=None, value=-1.5) -> [1, 1, 8, 3]
#   v1 = gather(x1, form='2d', index=[0, 1, 2, 0], index_shape=[1, 4]) -> [1, 4]
#   v2 = var(v1, correction=1, dims=[1], keepdim=True) -> [1, 1]
#   v3 = tril(v2, diagonal=0) -> [1, 1]
#   v4 = atanh(v3) -> [1, 1]
#   v5 = unfold(x1, dim=0, size=2, step=1) -> [2, 2]
#   v6 = asinh(v5) -> [2, 2]
#   v7 = min_dim(x1, dim=0, keepdim=True) -> [1]
#   return v0, v4, v6, v7
# replay: GraphSpec.from_json('{"format": 1, "input_shapes": [[1, 1, 8, 3], [3]], "ops": [{"inputs": [0], "op": "div", "params": {"form": "scalar", "rounding_mode": null, "value": -1.5}, "shape": [1, 1, 8, 3]}, {"inputs": [1], "op": "gather", "params": {"form": "2d", "index": [0, 1, 2, 0], "index_shape": [1, 4]}, "shape": [1, 4]}, {"inputs": [3], "op": "var", "params": {"correction": 1, "dims": [1], "keepdim": true}, "shape": [1, 1]}, {"inputs": [4], "op": "tril", "params": {"diagonal": 0}, "shape": [1, 1]}, {"inputs": [5], "op": "atanh", "params": {}, "shape": [1, 1]}, {"inputs": [1], "op": "unfold", "params": {"dim": 0, "size": 2, "step": 1}, "shape": [2, 2]}, {"inputs": [7], "op": "asinh", "params": {}, "shape": [2, 2]}, {"inputs": [1], "op": "min_dim", "params": {"dim": 0, "keepdim": true}, "shape": [1]}], "outputs": [2, 6, 8, 9], "seed": 65535}')
# reproducer: {"annotation": null, "features": [], "first_divergent_pass": null, "format": 1, "graph": {"format": 1, "input_shapes": [[1, 1, 8, 3], [3]], "ops": [{"inputs": [0], "op": "div", "params": {"form": "scalar", "rounding_mode": null, "value": -1.5}, "shape": [1, 1, 8, 3]}, {"inputs": [1], "op": "gather", "params": {"form": "2d", "index": [0, 1, 2, 0], "index_shape": [1, 4]}, "shape": [1, 4]}, {"inputs": [3], "op": "var", "params": {"correction": 1, "dims": [1], "keepdim": true}, "shape": [1, 1]}, {"inputs": [4], "op": "tril", "params": {"diagonal": 0}, "shape": [1, 1]}, {"inputs": [5], "op": "atanh", "params": {}, "shape": [1, 1]}, {"inputs": [1], "op": "unfold", "params": {"dim": 0, "size": 2, "step": 1}, "shape": [2, 2]}, {"inputs": [7], "op": "asinh", "params": {}, "shape": [2, 2]}, {"inputs": [1], "op": "min_dim", "params": {"dim": 0, "keepdim": true}, "shape": [1]}], "outputs": [2, 6, 8, 9], "seed": 65535}, "hash_seed": null, "pass_ref": null, "producer": "fuzz", "reason": "generator bug: drawn graph does not build for tosa-int: quantize failed for target tosa-int: Exception: An error occurred when running the 'DecomposeVarPass' pass after the following passes: ['RemoveGraphAssertsPass', 'ConstantFoldingPass', 'DecomposeIndexCopyPass', 'DecomposeSelectScatterPass', 'DecomposeSliceScatterPass', 'DecomposeDynamicFullPass', 'ConvertInt64ConstOpsToInt32Pass', 'ConvertInt64OutputOpsToInt32Pass', 'InsertInt32CastsAfterInt64PlaceholdersPass', 'FoldScalarMulIntoConvPass', 'DecomposeEmbeddingPass', 'DecomposeScaledDotProductAttentionPass', 'DecomposeLogitPass', 'PromoteBoolOperandsPass', 'DecomposeSignPass', 'DecomposeTrilPass', 'DecomposeAddmmPass', 'DecomposeRemainderPass', 'DecomposeFloorDividePass', 'DecomposeDivTensorModePass', 'DecomposeWhereScalarOtherPass', 'DecomposeEinsumPass', 'RewriteInplaceArithmeticPass', 'DecomposeAddSubAlphaPass', 'ConvertEluFamilyToEluPass', 'DecomposeGroupNormPass', 'DecomposeLayerNormPass', 'DecomposeBatchNormNoStatsPass']\nGraphSpec(8 ops, seed=65535)\n  x0: input [1, 1, 8, 3]\n  x1: input [3]\n  v0 = div(x0, form='scalar', rounding_mode=None, value=-1.5) -> [1, 1, 8, 3]\n  v1 = gather(x1, form='2d', index=[0, 1, 2, 0], index_shape=[1, 4]) -> [1, 4]\n  v2 = var(v1, correction=1, dims=[1], keepdim=True) -> [1, 1]\n  v3 = tril(v2, diagonal=0) -> [1, 1]\n  v4 = atanh(v3) -> [1, 1]\n  v5 = unfold(x1, dim=0, size=2, step=1) -> [2, 2]\n  v6 = asinh(v5) -> [2, 2]\n  v7 = min_dim(x1, dim=0, keepdim=True) -> [1]\n  return v0, v4, v6, v7\nreplay: GraphSpec.from_json('{\"format\": 1, \"input_shapes\": [[1, 1, 8, 3], [3]], \"ops\": [{\"inputs\": [0], \"op\": \"div\", \"params\": {\"form\": \"scalar\", \"rounding_mode\": null, \"value\": -1.5}, \"shape\": [1, 1, 8, 3]}, {\"inputs\": [1], \"op\": \"gather\", \"params\": {\"form\": \"2d\", \"index\": [0, 1, 2, 0], \"index_shape\": [1, 4]}, \"shape\": [1, 4]}, {\"inputs\": [3], \"op\": \"var\", \"params\": {\"correction\": 1, \"dims\": [1], \"keepdim\": true}, \"shape\": [1, 1]}, {\"inputs\": [4], \"op\": \"tril\", \"params\": {\"diagonal\": 0}, \"shape\": [1, 1]}, {\"inputs\": [5], \"op\": \"atanh\", \"params\": {}, \"shape\": [1, 1]}, {\"inputs\": [1], \"op\": \"unfold\", \"params\": {\"dim\": 0, \"size\": 2, \"step\": 1}, \"shape\": [2, 2]}, {\"inputs\": [7], \"op\": \"asinh\", \"params\": {}, \"shape\": [2, 2]}, {\"inputs\": [1], \"op\": \"min_dim\", \"params\": {\"dim\": 0, \"keepdim\": true}, \"shape\": [1]}], \"outputs\": [2, 6, 8, 9], \"seed\": 65535}')", "settings": {"calibration": "minmax"}, "target": "tosa-int"}
"""Reproducer generated by generators.random (standalone: needs only torch).

Run it directly to print output shapes, or import make_model() -> (module, example_inputs).
"""
# Spec (JSON): {"format": 1, "input_shapes": [[1, 1, 8, 3], [3]], "ops": [{"inputs": [0], "op": "div", "params": {"form": "scalar", "rounding_mode": null, "value": -1.5}, "shape": [1, 1, 8, 3]}, {"inputs": [1], "op": "gather", "params": {"form": "2d", "index": [0, 1, 2, 0], "index_shape": [1, 4]}, "shape": [1, 4]}, {"inputs": [3], "op": "var", "params": {"correction": 1, "dims": [1], "keepdim": true}, "shape": [1, 1]}, {"inputs": [4], "op": "tril", "params": {"diagonal": 0}, "shape": [1, 1]}, {"inputs": [5], "op": "atanh", "params": {}, "shape": [1, 1]}, {"inputs": [1], "op": "unfold", "params": {"dim": 0, "size": 2, "step": 1}, "shape": [2, 2]}, {"inputs": [7], "op": "asinh", "params": {}, "shape": [2, 2]}, {"inputs": [1], "op": "min_dim", "params": {"dim": 0, "keepdim": true}, "shape": [1]}], "outputs": [2, 6, 8, 9], "seed": 65535}
# GraphSpec(8 ops, seed=65535)
#   x0: input [1, 1, 8, 3]
#   x1: input [3]
#   v0 = div(x0, form='scalar', rounding_mode=None, value=-1.5) -> [1, 1, 8, 3]
#   v1 = gather(x1, form='2d', index=[0, 1, 2, 0], index_shape=[1, 4]) -> [1, 4]
#   v2 = var(v1, correction=1, dims=[1], keepdim=True) -> [1, 1]
#   v3 = tril(v2, diagonal=0) -> [1, 1]
#   v4 = atanh(v3) -> [1, 1]
#   v5 = unfold(x1, dim=0, size=2, step=1) -> [2, 2]
#   v6 = asinh(v5) -> [2, 2]
#   v7 = min_dim(x1, dim=0, keepdim=True) -> [1]
#   return v0, v4, v6, v7
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 65535


def _uniform(g, shape, lo, hi):
    return torch.rand(shape, generator=g, dtype=torch.float32) * (hi - lo) + lo


class GeneratedModel(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(SEED)
        self.register_buffer('gather1_i', torch.tensor([0, 1, 2, 0], dtype=torch.long).reshape((1, 4)))

    def forward(self, x0, x1):
        v0 = x0 / -1.5  # div -> [1, 1, 8, 3]
        v1 = torch.gather(x1.reshape((1, 3)), 1, self.gather1_i)  # gather -> [1, 4]
        v2 = torch.var(v1, dim=(1,), correction=1, keepdim=True)  # var -> [1, 1]
        v3 = torch.tril(v2, 0)  # tril -> [1, 1]
        v4 = torch.atanh(torch.clamp(v3, -0.9, 0.9))  # atanh -> [1, 1]
        v5 = x1.unfold(0, 2, 1)  # unfold -> [2, 2]
        v6 = torch.asinh(v5)  # asinh -> [2, 2]
        v7 = torch.min(x1, dim=0, keepdim=True)[0]  # min_dim -> [1]
        return (v0, v4, v6, v7,)


def make_model():
    model = GeneratedModel().eval()
    g = torch.Generator().manual_seed(SEED + 1)
    example_inputs = (_uniform(g, (1, 1, 8, 3), -2.0, 2.0), _uniform(g, (3,), -2.0, 2.0),)
    return model, example_inputs


if __name__ == "__main__":
    model, example_inputs = make_model()
    with torch.no_grad():
        outputs = model(*example_inputs)
    for i, o in enumerate(outputs):
        print(i, tuple(o.shape), bool(torch.isfinite(o).all()))
