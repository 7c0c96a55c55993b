"""Virtual accelerators: tensors that say `cuda:N` but keep their data on the CPU.

- `state`: the device's errors, the current virtual device per thread, the active placement logs;
- `rules`: PyTorch's device rules for one aten op (the error real CUDA raises);
- `tensor`: `VirtualTensor`, a CPU tensor reporting an accelerator device, and the path of every op on one
  (the CPU kernel runs; the result is rewrapped on the op's device);
- `facade`: `virtual_cuda()`, the `torch.cuda` answers while a target is active (an explicit list;
  everything else is not emulatable), restored afterwards;
- `probe`: whether this torch still has the private APIs all of this rests on (conformance.devices.torch_private).

Numerics are the CPU's; what this tests is placement and device-dependent Python.
"""
