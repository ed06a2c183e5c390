"""The names of the standard op set, known without importing it.

A plugin may not register an op under a core op's name. Checking that by loading the op
set (:mod:`irpass.op`, which imports numpy and every kernel) made each plugin that
registers an op cost about 0.2 s of start-up, in every command, ``irpass passes``
included; the names alone are enough. ``tests/test_startup.py`` checks that this list is
exactly the op set's: add a core op's name here when you add the op.
"""

CORE_OP_NAMES = frozenset((
    "abs", "acos", "acosh", "add", "arange", "argmax", "argmin", "asin", "asinh", "atan",
    "atanh", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "broadcast_to", "cast",
    "ceil", "clip", "concatenate", "cos", "cosh", "cumprod", "cumsum", "dims_tensor", "divide",
    "einsum", "equal", "erf", "exp", "expand_dims", "floor", "floor_mod", "full", "gather",
    "gather_nd", "greater", "greater_equal", "image.grid_sample", "image.resize1d",
    "image.resize2d", "image.resize3d", "isinf", "isnan", "layout_transform", "left_shift",
    "less", "less_equal", "linalg.det", "log", "logical_and", "logical_not", "logical_or",
    "logical_xor", "matmul", "max", "maximum", "mean", "min", "minimum", "multiply",
    "negative", "nn.attention", "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d",
    "nn.batch_matmul", "nn.batch_norm", "nn.bias_add", "nn.conv1d", "nn.conv1d_transpose",
    "nn.conv2d", "nn.conv2d_transpose", "nn.conv3d", "nn.conv3d_transpose", "nn.dense",
    "nn.depth_to_space", "nn.dropout", "nn.gelu", "nn.global_avg_pool2d", "nn.group_norm",
    "nn.hard_swish", "nn.instance_norm", "nn.layer_norm", "nn.leaky_relu", "nn.log_softmax",
    "nn.lrn", "nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d", "nn.pad", "nn.relu",
    "nn.rms_norm", "nn.rotary_embedding", "nn.silu", "nn.softmax", "nn.space_to_depth",
    "not_equal", "one_hot", "ones", "ones_like", "power", "prod", "qnn.dequantize",
    "qnn.quantize", "reinterpret", "reshape", "reverse", "reverse_reshape", "reverse_sequence",
    "right_shift", "round", "scatter_elements", "scatter_nd", "shape_of", "sigmoid", "sign",
    "sin", "sinh", "split", "sqrt", "squeeze", "strided_slice", "subtract", "sum", "take",
    "tan", "tanh", "tile", "topk", "transpose", "trilu", "trunc", "trunc_mod",
    "vision.roi_align", "vision.roi_pool", "where", "zeros", "zeros_like",
))
