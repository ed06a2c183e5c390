"""Neural-network ops (``nn.*`` in the registry), with Relay's builder signatures.

Importing this package registers the ops: convolution and transposed
convolution, pooling, dense and batched matrix products, bias, activations,
normalization (batch, layer, local response), dropout and padding.
"""

from .activation import dropout, leaky_relu, log_softmax, relu, softmax
from .conv import conv2d
from .conv_transpose import conv2d_transpose
from .dense import batch_matmul, bias_add, dense
from .depth_space import depth_to_space, space_to_depth
from .norm import batch_norm, layer_norm, lrn
from .pad import pad
from .pool import avg_pool2d, global_avg_pool2d, max_pool2d

__all__ = [
    "avg_pool2d",
    "batch_matmul",
    "batch_norm",
    "bias_add",
    "conv2d",
    "conv2d_transpose",
    "dense",
    "depth_to_space",
    "dropout",
    "global_avg_pool2d",
    "layer_norm",
    "leaky_relu",
    "log_softmax",
    "lrn",
    "max_pool2d",
    "pad",
    "relu",
    "softmax",
    "space_to_depth",
]
