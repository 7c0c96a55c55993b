"""Virtual accelerators: tensors that say `cuda:N` but keep their data on the CPU.

- `tensor`: `VirtualTensor`, a CPU tensor reporting an accelerator device, and moving values there;
- `rules`: PyTorch's device rules on every aten op (the error real CUDA raises; CPU kernels run);
- `facade`: `virtual_cuda()`, the `torch.cuda` answers while a target is active (an explicit
  list; everything else is not emulatable), restored afterwards;
- `probe`: whether this torch still has the private APIs all of this rests on.

Numerics are the CPU's; what this tests is placement and device-dependent Python.
"""
from conformance.devices.virtual.facade import virtual_cuda
from conformance.devices.virtual.rules import VirtualMode
from conformance.devices.virtual.tensor import (DeviceMixError, NotEmulatable, VirtualTensor, current_log, device_of,
                                        host_tensor, to_virtual)

__all__ = ["DeviceMixError", "NotEmulatable", "VirtualMode", "VirtualTensor", "current_log", "device_of",
           "host_tensor", "to_virtual", "virtual_cuda"]
