"""The libraries an operation can be implemented in, as reports name them (light: no torch import).

The cross-library page orders its columns this way; an implementation may name another library.
"""
TV2, TV1, KORNIA, PILLOW, OPENCV = "torchvision v2", "torchvision v1", "kornia", "Pillow", "OpenCV"
TVIO, TORCHCODEC = "torchvision.io", "TorchCodec"
ORDER = (TV2, TV1, KORNIA, PILLOW, OPENCV, TVIO, TORCHCODEC)
# the default op-name suffix of each library's implementation (`<operation>_<suffix>`)
SUFFIXES = {TV2: "tv2", TV1: "tv1", KORNIA: "kornia", PILLOW: "pil", OPENCV: "cv2", TVIO: "tv", TORCHCODEC: "torchcodec"}
