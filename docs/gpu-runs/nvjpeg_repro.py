"""The repro of docs/findings.md (nvJPEG vs libjpeg), as run on the lent GPU."""

import io

import numpy as np
import torch
import torchvision.io as tio
from PIL import Image

buf = io.BytesIO()
Image.fromarray(np.random.default_rng(0).integers(0, 256, (8, 40, 3), dtype=np.uint8)).save(buf, "JPEG", quality=5)
data = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
cpu, gpu = tio.decode_jpeg(data), tio.decode_jpeg(data, device="cuda").cpu()
print("decode max |cpu - cuda|:", int((cpu.int() - gpu.int()).abs().max()))
