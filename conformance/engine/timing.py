"""Measuring time per op, target and input size, against a calibration op timed in the same run
(the records, their file and their comparison: conformance.store.timings).

Each op call is timed in blocks (warm-up first, the target synchronised after each block),
alternating with blocks of a calibration op: `x + 1` into a preallocated float32 tensor of the same shape
on the same target, a memory-bound op with the same per-call overhead.  Each keeps its fastest
block (other processes only ever add time); their ratio is what is stored and compared across
builds, so a machine that is slower in one run moves both and cancels out.  A slowdown is a ratio that grew by
more than the threshold (default 1.5x).  Virtual targets are not timed (their data is on the
cpu: their time says nothing about a device).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

from conformance.devices.targets import Target
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import Recipe, materialize
from conformance.store.timings import SHAPES, TIMED_DTYPES, Timing


def _block(fn: Callable[[], Any], calls: int, target: Target) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    target.synchronize()
    return (time.perf_counter() - start) / calls


def time_pair(
    op: Callable[[], Any], calibration: Callable[[], Any], target: Target, *, rounds: int = 9, block_s: float = 0.01
) -> tuple[list[float], list[float]]:
    """Per-call seconds of `op` and `calibration`, block by block, alternating (warm-up first)."""
    for fn in (op, calibration):
        fn()
        target.synchronize()
    single = max(_block(op, 1, target), 1e-7)
    single_cal = max(_block(calibration, 1, target), 1e-7)
    calls, calls_cal = max(1, math.ceil(block_s / single)), max(1, math.ceil(block_s / single_cal))
    # Slow calls get one call per block: more rounds then (up to about half a second), so the fastest
    # block is still a fair minimum.
    rounds = max(rounds, min(3 * rounds, int(0.5 / (calls * single + calls_cal * single_cal))))
    op_times, cal_times = [], []
    for _ in range(rounds):
        op_times.append(_block(op, calls, target))
        cal_times.append(_block(calibration, calls_cal, target))
    return op_times, cal_times


def prepared_call(spec: OpSpec, target: Target, params: dict[str, Any], image: torch.Tensor) -> Callable[[], Any]:
    """The op's own call on the target, with no harness bookkeeping inside the timed loop."""
    if spec.module is not None:
        declared = spec.module
        module = target.put(declared.build(dict(params)))
        sampled = None if declared.sample is None else declared.sample(module, image, dict(params))
        return lambda: declared.forward(module, image, params, sampled)
    call = spec.call
    assert call is not None
    return lambda: call(image, params)


def _timed(spec: OpSpec, dtype: str, mode: str, shape: tuple[int, ...]) -> tuple[Recipe, dict[str, Any] | None]:
    """An input of the shape and the op's fixed parameters for it (None: the op is not timed on such an input)."""
    recipe = Recipe(
        height=shape[-2],
        width=shape[-1],
        channels=shape[-3],
        batch=tuple(shape[:-3]),
        dtype=dtype,
        content="noise",
        seed=0,
    )
    assert spec.timing is not None
    return recipe, spec.timing(recipe, mode)


def measure(
    spec: OpSpec, target: Target, dtype: str, mode: str, shape_name: str, *, rounds: int = 9, block_s: float = 0.01
) -> Timing | None:
    """One timing; None when the op does not declare parameters for this mode and shape."""
    if spec.timing is None:
        return None
    shape = SHAPES[shape_name]
    recipe, params = _timed(spec, dtype, mode, shape)
    if params is None and shape[0] == 1:  # an op that takes one (C, H, W) image: the batch of one loses its dim
        shape = shape[1:]
        recipe, params = _timed(spec, dtype, mode, shape)
    if params is None:
        return None
    image = target.put(materialize(recipe))
    calibration_input = torch.zeros(shape, dtype=torch.float32, device=image.device)
    calibration_output = torch.empty_like(calibration_input)  # no allocation in the loop: page faults vary
    op = prepared_call(spec, target, params, image)
    op_times, cal_times = time_pair(
        op, lambda: torch.add(calibration_input, 1, out=calibration_output), target, rounds=rounds, block_s=block_s
    )
    # The fastest block of each: interference from other processes only ever adds time, so the minimum
    # is the steadiest estimate of each on a shared machine, and their ratio cancels the machine's speed.
    fastest, fastest_cal = min(op_times), min(cal_times)
    median = statistics.median(op_times)
    return Timing(
        spec.name,
        target.name,
        dtype,
        mode,
        shape_name,
        fastest,
        fastest_cal,
        (median - fastest) / fastest,
        fastest / fastest_cal,
    )


def timed_variants(spec: OpSpec) -> list[tuple[str, str]]:
    return [(d, m) for d, m in spec.variant_pairs() if d in TIMED_DTYPES and spec.in_domain(m)]


def measure_all(
    specs: Iterable[OpSpec],
    targets: Iterable[Target],
    shapes: Iterable[str],
    progress: Callable[[str], None] = lambda line: None,
    passes: int = 2,
    **how: Any,
) -> list[Timing]:
    """Every op, variant and shape on every real target, with one intra-op thread (what a data-loading
    worker has; on a shared machine a thread pool's waits are the largest noise).  `passes`: the whole
    set is measured that many times, minutes apart, and each timing keeps its fastest op and calibration
    blocks over all passes, so a slow spell of the machine during one pass does not decide it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    _keep_freed_memory()
    try:
        best: dict[tuple[str, ...], Timing] = {}
        for n in range(passes):
            for timing in _one_pass(
                list(specs), [t for t in targets if t.times_kernels], list(shapes), progress, **how
            ):
                earlier = best.get(timing.key)
                if earlier is not None:
                    seconds = min(earlier.seconds, timing.seconds)
                    calibration = min(earlier.calibration_seconds, timing.calibration_seconds)
                    timing = Timing(
                        *timing.key, seconds, calibration, max(earlier.spread, timing.spread), seconds / calibration
                    )
                best[timing.key] = timing
                if n == passes - 1:
                    progress(
                        f"  {timing.op:28} {timing.target:8} {timing.dtype:8} {timing.mode:20} {timing.shape:13} "
                        f"{timing.seconds * 1e6:12.1f} us  ({timing.ratio:.2f}x calibration)"
                    )
        return list(best.values())
    finally:
        torch.set_num_threads(threads)


def _keep_freed_memory() -> None:
    """glibc returns large freed blocks to the kernel, so every call of an op with a large output
    faults its pages in again, at a cost that varies with the machine's memory state.  Keeping
    freed memory (as a long-running data loader's heap does) times the op, not the page faults."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD (its 64-bit maximum): large blocks from the heap
        libc.mallopt(-1, 1 << 31)  # M_TRIM_THRESHOLD: do not give the heap back
    except (OSError, AttributeError):  # not glibc: timings then include page faults
        pass


def _one_pass(
    specs: list[OpSpec], targets: list[Target], shapes: list[str], progress: Callable[[str], None], **how: Any
) -> list[Timing]:
    found = []
    for target in targets:
        for spec in specs:
            if spec.timing is None or spec.unmet_requirement():
                continue
            for dtype, mode in timed_variants(spec):
                for shape in shapes:
                    try:
                        timing = measure(spec, target, dtype, mode, shape, **how)
                    except Exception as exc:  # noqa: BLE001 - an op that cannot run here is not timed
                        progress(
                            f"  {spec.name} {target.name} {dtype} {mode} {shape}: not timed "
                            f"({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})"
                        )
                        continue
                    if timing is not None:
                        found.append(timing)
    return found
