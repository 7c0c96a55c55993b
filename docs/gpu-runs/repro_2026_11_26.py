"""The repros of what the 2026-11-26 GPU run found (docs/findings.md), each as small as it gets, cpu next to cuda.

Run on a machine with a CUDA device: python docs/gpu-runs/repro_2026_11_26.py
"""

import torch
import torch.nn.functional as F


def pad_layout() -> None:
    """torch-cuda-pad-edge-reflect-returns-contiguous: the cpu keeps channels-last, CUDA does not."""
    image = torch.rand(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    for mode in ("replicate", "reflect", "constant"):
        kept = [
            F.pad(image.to(device), (1, 1, 1, 1), mode=mode).is_contiguous(memory_format=torch.channels_last)
            for device in ("cpu", "cuda")
        ]
        print(f"pad {mode:9} keeps channels-last: cpu {kept[0]}, cuda {kept[1]}")


def nearest_exact_backward() -> None:
    """torch-cuda-nearest-backward-index-rounding, nearest-exact: where the forward reads, the backward credits."""
    for width in (6, 10, 12, 7):
        for device in ("cpu", "cuda"):
            x = torch.arange(width, dtype=torch.float32, device=device).reshape(1, 1, 1, width).requires_grad_(True)
            y = F.interpolate(x, size=(1, 1), mode="nearest-exact")
            y.sum().backward()
            credited = int(x.grad.flatten().nonzero().flatten()[0])
            print(
                f"nearest-exact {width} -> 1 on {device:4}: forward reads {int(y.item())}, backward credits {credited}"
            )


def nearest_backward() -> None:
    """torch-cuda-nearest-backward-index-rounding, nearest (second GPU session of 2026-11-26): the input pixels that the
    forward reads and the backward credits, on each device, where dst * in / out is a whole number."""
    for n_in, n_out in ((238, 26), (119, 17), (9, 1), (7, 1)):
        for dtype in (torch.float32, torch.float64):
            for device in ("cpu", "cuda"):
                x = torch.arange(n_in, dtype=dtype, device=device).reshape(1, 1, 1, n_in).requires_grad_(True)
                y = F.interpolate(x, size=(1, n_out), mode="nearest")
                y.sum().backward()
                read = {int(v) for v in y.detach().flatten().tolist()}
                credited = {int(i) for i in x.grad.flatten().nonzero().flatten().tolist()}
                print(
                    f"nearest {n_in} -> {n_out} {str(dtype)[6:]} on {device:4}: read but not credited "
                    f"{sorted(read - credited)}, credited but not read {sorted(credited - read)}"
                )


def kornia_center_crop() -> None:
    """kornia-1799-center-crop-grid-rounding-cuda: ulps between the devices where the answer is a copy."""
    import kornia

    x = torch.rand(1, 3, 1, 4)
    out = [kornia.geometry.transform.center_crop(x.to(d), (1, 5)).cpu() for d in ("cpu", "cuda")]
    print(f"kornia center_crop 1x4 -> 1x5: max |cpu - cuda| = {float((out[0] - out[1]).abs().max()):.3g}")


if __name__ == "__main__":
    pad_layout()
    nearest_exact_backward()
    nearest_backward()
    kornia_center_crop()
