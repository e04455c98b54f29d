"""The names of generators.random's vocabulary ops, `ops_in_vocabulary()`'s keys in its order,
readable without importing torch.

Why a copy: `verify gate --ops` and `verify infer --ops` refuse an op the vocabulary lacks with one
line, and a usage refusal takes < 3 s (issue 47). The vocabulary is built by generators.random,
whose package imports torch and hypothesis on its way in (3.3 s here, niced, before the line);
these names alone need nothing. The copy is kept equal to the vocabulary, in its order, by
tests/test_refusals.py::test_the_gates_op_names_are_the_vocabularys, which prints the tuple to
paste here when an op is added to the vocabulary or quarantined. The graphs are still drawn by
generators.random, which checks the ops it is given again.
"""

VOCABULARY_OPS = (
    "relu", "relu6", "hardtanh", "clamp", "leaky_relu", "sigmoid", "tanh", "gelu", "silu", "hardswish",
    "hardsigmoid", "elu", "abs", "neg", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
    "erf", "atan", "sinh", "log1p", "expm1", "sign", "floor", "round", "asinh", "acosh", "atanh",
    "cosh", "tan", "asin", "acos", "celu", "selu", "logit", "pow", "add", "sub", "mul", "div",
    "minimum", "maximum", "where", "masked_fill", "linear", "matmul", "bmm", "conv2d", "avg_pool2d",
    "max_pool2d", "adaptive_avg_pool2d", "upsample", "batch_norm", "layer_norm", "group_norm",
    "softmax", "log_softmax", "cumsum", "mean", "sum", "amax", "amin", "var", "max_dim", "min_dim",
    "vector_norm", "permute", "transpose", "reshape", "view", "flatten", "squeeze", "unsqueeze", "cat",
    "split", "chunk", "slice", "select", "pad", "constant_pad", "repeat", "expand", "flip", "glu",
    "prelu", "tril", "remainder", "floor_divide", "prod", "index_select", "index", "gather",
    "index_put", "slice_scatter", "select_scatter", "unfold", "bool_logic", "cast", "add_alpha",
    "permuted_pointwise", "outer", "ne", "index_rows", "split_sizes", "scalar_scale", "any_where",
    "bilinear_down16", "permuted_pair", "rescaled_permute", "high_rank_permute", "bool_mul",
)
