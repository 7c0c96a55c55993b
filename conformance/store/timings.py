"""Timings as data: one op's time per call on a target, dtype, mode and input shape against the
calibration op timed beside it; reading and writing `timings.json`; and comparing two builds' timings by
that ratio (a slowdown is a ratio grown beyond the threshold).  Measuring them is conformance.engine.timing."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FORMAT = "conformance-timings/1"
# Input shapes that matter for data loading: a tiny image (per-call overhead), one ImageNet-sized
# sample, a batch of 64 of them, one 1080p frame (throughput).  Always batched: kornia wants (B, C, H, W).
SHAPES: dict[str, tuple[int, ...]] = {
    "1x3x16x16": (1, 3, 16, 16),
    "1x3x224x224": (1, 3, 224, 224),
    "64x3x224x224": (64, 3, 224, 224),
    "1x3x1080x1920": (1, 3, 1080, 1920),
}
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
    seconds: float  # per call, in the fastest block
    calibration_seconds: float  # per call of the calibration op (same shape, same target), fastest block
    spread: float  # (median - fastest) / fastest of the op's blocks: how much interference there was
    ratio: float  # seconds / calibration_seconds: what baselines compare

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return self.op, self.target, self.dtype, self.mode, self.shape


def write(path: Path, timings: list[Timing], environment: dict[str, Any]) -> None:
    data = {"format": FORMAT, "environment": environment, "timings": [asdict(t) for t in timings]}
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    temporary.replace(path)


def read(path: Path) -> list[Timing]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise TimingsError(
                f"{path}: not a timings file (format {data.get('format') if isinstance(data, dict) else None!r}, "
                f"expected {FORMAT!r})"
            )
        found = [
            Timing(
                **{  # type: ignore[arg-type]  # each field converted to its declared type, checked below
                    k: (float(v) if k in ("seconds", "calibration_seconds", "spread", "ratio") else str(v))
                    for k, v in row.items()
                }
            )
            for row in data["timings"]
        ]
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
        return (
            f"{a.op} on {a.target} [{a.dtype}, {a.mode}, {a.shape}]: {self.factor:.2f}x slower against the "
            f"calibration op ({b.seconds * 1e6:.1f} -> {a.seconds * 1e6:.1f} us per call; calibration "
            f"{b.calibration_seconds * 1e6:.1f} -> {a.calibration_seconds * 1e6:.1f} us)"
        )


def compare(
    before: list[Timing], after: list[Timing], threshold: float = DEFAULT_THRESHOLD
) -> tuple[list[Slowdown], list[Slowdown]]:
    """(slowdowns beyond `threshold`, every matched pair) by the ratio to the calibration op."""
    earlier = {t.key: t for t in before}
    pairs = [Slowdown(earlier[t.key], t) for t in after if t.key in earlier]
    return sorted((p for p in pairs if p.factor > threshold), key=lambda p: -p.factor), pairs
