"""imgbatch.ImageFilter: Pillow's own filter classes.

Filters are plain parameter holders, so imgbatch uses PIL.ImageFilter's
classes as they are; LazyImage.filter() maps them onto the wire:
RankFilter/MedianFilter/MinFilter/MaxFilter -> RankFilterOp,
GaussianBlur/BoxBlur -> GaussianBlurOp/BoxBlurOp, Kernel and the predefined
kernels (BLUR, SHARPEN, ...) -> KernelOp. Others raise NotImplementedError.
"""

from PIL.ImageFilter import *  # noqa: F401,F403
from PIL.ImageFilter import (  # noqa: F401
    BoxBlur,
    BuiltinFilter,
    Filter,
    GaussianBlur,
    Kernel,
    MaxFilter,
    MedianFilter,
    MinFilter,
    MultibandFilter,
    RankFilter,
)
