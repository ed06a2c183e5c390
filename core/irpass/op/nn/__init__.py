"""Neural-network ops (``nn.*`` in the registry), with Relay's builder signatures.

Importing this package registers the ops: convolution, pooling, dense and
batched matrix products, bias, activations, normalization, dropout and
padding.
"""

from .activation import dropout, relu, softmax
from .conv import conv2d
from .dense import batch_matmul, bias_add, dense
from .norm import batch_norm, layer_norm
from .pad import pad
from .pool import avg_pool2d, global_avg_pool2d, max_pool2d

__all__ = [
    "avg_pool2d",
    "batch_matmul",
    "batch_norm",
    "bias_add",
    "conv2d",
    "dense",
    "dropout",
    "global_avg_pool2d",
    "layer_norm",
    "max_pool2d",
    "pad",
    "relu",
    "softmax",
]
