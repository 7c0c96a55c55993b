"""Calibration sweep: torchvision's nvJPEG codec (CUDA) against libjpeg (Pillow), on a real GPU.

The suite's JPEG references are Pillow's libjpeg; on a CUDA target torchvision's encode_jpeg and
decode_jpeg use NVIDIA's nvJPEG instead, a different codec. This measures how far apart the two
are on the suite's own recipes (sizes, contents, qualities), so known-issue envelopes for cuda
targets rest on many cases rather than the few a suite run shows.  For the encoder it also
measures the effect of synchronising before the call (vision#8587: noisy output without it).

    python benchmarks/nvjpeg_sweep.py --cases 2000 --json nvjpeg.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.spec.jpeg import pillow_decode, pillow_encode
from conformance.spec.recipes import Recipe, materialize

CONTENTS = ("noise", "gradient", "constant", "checkerboard", "extremes")


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def stats(got: np.ndarray, expected: np.ndarray) -> dict[str, float]:
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    return {"max_abs": float(diff.max()), "mismatch": float((diff > 1).mean()), "psnr": psnr(got, expected)}


def one_case(rng: random.Random, device: str) -> dict:
    import torchvision.io as io

    side = lambda: rng.choice([rng.randint(1, 8), rng.randint(9, 64), rng.randint(65, 300)])  # noqa: E731
    recipe = Recipe(
        height=side(),
        width=side(),
        channels=rng.choice([1, 3]),
        dtype="uint8",
        content=rng.choice(CONTENTS),
        seed=rng.randint(0, 2**31 - 1),
    )
    quality = rng.randint(1, 100)
    image = materialize(recipe).contiguous()  # C, H, W uint8
    chw = image.numpy().astype(np.float64)
    row: dict = {"recipe": recipe.to_dict(), "quality": quality}
    reference = pillow_decode(pillow_encode(chw, quality))  # C, H, W like every array here
    try:
        data = torch.frombuffer(bytearray(pillow_encode(chw, quality)), dtype=torch.uint8)
        on_gpu = io.decode_jpeg(data, mode=io.ImageReadMode.UNCHANGED, device=device).cpu()
        on_cpu = io.decode_jpeg(data, mode=io.ImageReadMode.UNCHANGED)
        row["decode_vs_cpu"] = stats(on_gpu.numpy(), on_cpu.numpy())
    except Exception as exc:  # noqa: BLE001 - a sweep records what it sees
        row["decode_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    for synced in (False, True):
        key = "encode_synced" if synced else "encode"
        try:
            gpu_image = image.to(device)
            if synced and device != "cpu":
                torch.cuda.synchronize()
            encoded = io.encode_jpeg(gpu_image, quality=quality)
            decoded = pillow_decode(bytes(encoded.cpu().numpy()))
            row[key] = stats(decoded, reference) | {"fidelity_gap": psnr(reference, chw) - psnr(decoded, chw)}
        except Exception as exc:  # noqa: BLE001
            row[key + "_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return row


def summarise(rows: list[dict]) -> dict:
    out: dict = {"cases": len(rows)}
    for key in ("decode_vs_cpu", "encode", "encode_synced"):
        found = [r[key] for r in rows if key in r]
        if not found:
            continue
        finite = [f["psnr"] for f in found if np.isfinite(f["psnr"])]
        out[key] = {
            "n": len(found),
            "max_abs": max(f["max_abs"] for f in found),
            "cases_beyond_1": sum(f["max_abs"] > 1 for f in found),
            "max_mismatch": max(f["mismatch"] for f in found),
            "min_psnr": min(finite) if finite else None,
            "max_fidelity_gap": max((f.get("fidelity_gap", 0) for f in found), default=None),
        }
        for small in (True, False):
            part = [
                r[key] for r in rows if key in r and (min(r["recipe"]["height"], r["recipe"]["width"]) < 8) == small
            ]
            fin = [f["psnr"] for f in part if np.isfinite(f["psnr"])]
            out[key]["min_side<8" if small else "min_side>=8"] = {
                "n": len(part),
                "max_abs": max((f["max_abs"] for f in part), default=None),
                "min_psnr": min(fin) if fin else None,
                "max_fidelity_gap": max((f.get("fidelity_gap", 0) for f in part), default=None),
            }
    for key in ("decode_error", "encode_error", "encode_synced_error"):
        errors: dict[str, int] = {}
        for r in rows:
            if key in r:
                errors[r[key]] = errors.get(r[key], 0) + 1
        if errors:
            out[key] = errors
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--device", default="cuda:0", help="cpu: a dry run of the script itself")
    args = parser.parse_args()
    if args.device != "cpu" and not torch.cuda.is_available():
        print("no CUDA device: nothing to measure", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    rows = [one_case(rng, args.device) for _ in range(args.cases)]
    summary = summarise(rows)
    print(json.dumps(summary, indent=1))
    if args.json:
        worst = sorted((r for r in rows if "encode" in r), key=lambda r: -r["encode"]["max_abs"])[:20]
        args.json.write_text(json.dumps({"summary": summary, "worst_encode": worst}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
