"""Time per op, target and input size, judged against a calibration op timed in the same run.

Each op call is timed in blocks (warm-up first, the target synchronised after each block),
alternating with blocks of a calibration op: `x.add(1)` on a float32 tensor of the same shape
on the same target, a memory-bound op with the same per-call overhead.  Both are the median
over rounds; their ratio is what is stored and compared across builds, so a machine that is
busier or slower in one run moves both and cancels out.  A slowdown is a ratio that grew by
more than the threshold (default 1.5x).  Virtual targets are not timed (their data is on the
cpu: their time says nothing about a device).
"""
from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from conformance.recipes import Recipe, materialize
from conformance.spec import OpSpec
from conformance.targets import Target

FORMAT = "conformance-timings/1"
# Input shapes that matter for data loading: a tiny image (per-call overhead), one ImageNet-sized
# sample, a batch of 64 of them, one 1080p frame (throughput).  Always batched: kornia wants (B, C, H, W).
SHAPES: dict[str, tuple[int, ...]] = {"1x3x16x16": (1, 3, 16, 16), "1x3x224x224": (1, 3, 224, 224),
                                      "64x3x224x224": (64, 3, 224, 224), "1x3x1080x1920": (1, 3, 1080, 1920)}
TIMED_DTYPES = ("uint8", "float32")
DEFAULT_THRESHOLD = 1.5


class TimingsError(ValueError):
    """A timings file that cannot be read."""


@dataclass(frozen=True)
class Timing:
    op: str
    target: str
    dtype: str
    mode: str
    shape: str
    seconds: float  # median per call
    calibration_seconds: float  # median per call of the calibration op, same shape, same target
    spread: float  # (p75 - p25) / median of the per-round ratios: how steady the measurement was
    ratio: float  # median over rounds of (op block / the calibration block right after it)

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return self.op, self.target, self.dtype, self.mode, self.shape


def _block(fn: Callable[[], Any], calls: int, target: Target) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    target.synchronize()
    return (time.perf_counter() - start) / calls


def time_pair(op: Callable[[], Any], calibration: Callable[[], Any], target: Target, *, rounds: int = 9,
              block_s: float = 0.01) -> tuple[list[float], list[float]]:
    """Per-call seconds of `op` and `calibration`, block by block, alternating (warm-up first)."""
    for fn in (op, calibration):
        fn()
        target.synchronize()
    single = max(_block(op, 1, target), 1e-7)
    single_cal = max(_block(calibration, 1, target), 1e-7)
    calls, calls_cal = max(1, math.ceil(block_s / single)), max(1, math.ceil(block_s / single_cal))
    op_times, cal_times = [], []
    for _ in range(rounds):
        op_times.append(_block(op, calls, target))
        cal_times.append(_block(calibration, calls_cal, target))
    return op_times, cal_times


def prepared_call(spec: OpSpec, target: Target, params: dict[str, Any], image: torch.Tensor) -> Callable[[], Any]:
    """The op's own call on the target, with no harness bookkeeping inside the timed loop."""
    if spec.module is not None:
        module = target.put(spec.module.build(dict(params)))
        sampled = None
        if spec.module.sample is not None:
            sampled = spec.module.sample(module, image, dict(params))
        return lambda: spec.module.forward(module, image, params, sampled)
    assert spec.call is not None
    return lambda: spec.call(image, params)


def measure(spec: OpSpec, target: Target, dtype: str, mode: str, shape_name: str, *, rounds: int = 9,
            block_s: float = 0.01) -> Timing | None:
    """One timing; None when the op does not declare parameters for this mode and shape."""
    if spec.timing is None:
        return None
    shape = SHAPES[shape_name]
    recipe = Recipe(height=shape[-2], width=shape[-1], channels=shape[-3], batch=tuple(shape[:-3]), dtype=dtype,
                    content="noise", seed=0)
    params = spec.timing(recipe, mode)
    if params is None:
        return None
    image = target.put(materialize(recipe))
    calibration_input = torch.zeros(shape, dtype=torch.float32, device=image.device)
    op = prepared_call(spec, target, params, image)
    op_times, cal_times = time_pair(op, lambda: calibration_input.add(1), target, rounds=rounds, block_s=block_s)
    ratios = [o / c for o, c in zip(op_times, cal_times)]  # paired: each pair saw the same machine state
    ratio = statistics.median(ratios)
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratio, ratio, ratio]
    return Timing(spec.name, target.name, dtype, mode, shape_name, statistics.median(op_times),
                  statistics.median(cal_times), (quartiles[2] - quartiles[0]) / ratio, ratio)


def timed_variants(spec: OpSpec) -> list[tuple[str, str]]:
    return [(d, m) for d, m in spec.variant_pairs() if d in TIMED_DTYPES and m not in spec.error_modes]


def measure_all(specs: Iterable[OpSpec], targets: Iterable[Target], shapes: Iterable[str],
                progress: Callable[[str], None] = lambda line: None, **how: Any) -> list[Timing]:
    found = []
    for target in [t for t in targets if not t.virtual]:
        for spec in specs:
            if spec.timing is None or spec.unmet_requirement():
                continue
            for dtype, mode in timed_variants(spec):
                for shape in shapes:
                    try:
                        timing = measure(spec, target, dtype, mode, shape, **how)
                    except Exception as exc:  # noqa: BLE001 - an op that cannot run here is not timed
                        progress(f"  {spec.name} {target.name} {dtype} {mode} {shape}: not timed "
                                 f"({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})")
                        continue
                    if timing is not None:
                        found.append(timing)
                        progress(f"  {timing.op:28} {timing.target:8} {dtype:8} {mode:20} {shape:13} "
                                 f"{timing.seconds * 1e6:12.1f} us  ({timing.ratio:.2f}x calibration)")
    return found


def write(path: Path, timings: list[Timing], environment: dict[str, Any]) -> None:
    data = {"format": FORMAT, "environment": environment, "timings": [asdict(t) for t in timings]}
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    temporary.replace(path)


def read(path: Path) -> list[Timing]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise TimingsError(f"{path}: not a timings file (format {data.get('format') if isinstance(data, dict) else None!r}, "
                               f"expected {FORMAT!r})")
        found = [Timing(**{k: (float(v) if k in ("seconds", "calibration_seconds", "spread", "ratio") else str(v))
                           for k, v in row.items()}) for row in data["timings"]]
    except json.JSONDecodeError as exc:
        raise TimingsError(f"{path}: not JSON ({exc.msg}); the file is truncated or damaged") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TimingsError(f"{path}: not a timings record ({type(exc).__name__}: {exc})") from None
    if any(not (t.seconds > 0 and t.calibration_seconds > 0 and t.ratio > 0) for t in found):
        raise TimingsError(f"{path}: a timing that is not a positive number of seconds")
    return found


@dataclass(frozen=True)
class Slowdown:
    before: Timing
    after: Timing

    @property
    def factor(self) -> float:
        return self.after.ratio / self.before.ratio

    def describe(self) -> str:
        a, b = self.after, self.before
        return (f"{a.op} on {a.target} [{a.dtype}, {a.mode}, {a.shape}]: {self.factor:.2f}x slower against the "
                f"calibration op ({b.seconds * 1e6:.1f} -> {a.seconds * 1e6:.1f} us per call; calibration "
                f"{b.calibration_seconds * 1e6:.1f} -> {a.calibration_seconds * 1e6:.1f} us)")


def compare(before: list[Timing], after: list[Timing],
            threshold: float = DEFAULT_THRESHOLD) -> tuple[list[Slowdown], list[Slowdown]]:
    """(slowdowns beyond `threshold`, every matched pair) by the ratio to the calibration op."""
    earlier = {t.key: t for t in before}
    pairs = [Slowdown(earlier[t.key], t) for t in after if t.key in earlier]
    return sorted((p for p in pairs if p.factor > threshold), key=lambda p: -p.factor), pairs
