"""Neural-network ops (``nn.*`` in the registry), with Relay's builder signatures.

Importing this package registers the ops: convolution and transposed
convolution, pooling, dense and batched matrix products, bias, activations,
normalization (batch, layer, RMS, group, instance, local response), dropout and padding,
and the fused transformer blocks (scaled dot-product attention, rotary embedding).
"""

from .activation import dropout, gelu, hard_swish, leaky_relu, log_softmax, relu, silu, softmax
from .attention import attention, rotary_embedding
from .conv import conv1d, conv2d, conv3d
from .conv_transpose import conv1d_transpose, conv2d_transpose, conv3d_transpose
from .dense import batch_matmul, bias_add, dense
from .depth_space import depth_to_space, space_to_depth
from .norm import batch_norm, group_norm, instance_norm, layer_norm, lrn, rms_norm
from .pad import pad
from .pool import (
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    global_avg_pool2d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)

__all__ = [
    "attention",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_matmul",
    "batch_norm",
    "bias_add",
    "conv1d",
    "conv1d_transpose",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "conv3d_transpose",
    "dense",
    "depth_to_space",
    "dropout",
    "gelu",
    "global_avg_pool2d",
    "group_norm",
    "hard_swish",
    "instance_norm",
    "layer_norm",
    "leaky_relu",
    "log_softmax",
    "lrn",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "pad",
    "relu",
    "rms_norm",
    "rotary_embedding",
    "silu",
    "softmax",
    "space_to_depth",
]
