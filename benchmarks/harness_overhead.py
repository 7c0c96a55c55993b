"""Harness cost against a bare loop, on the same fixed cases and targets.

(a) runs pytest with the ci profile on case modules (default: all of cases/) on the selected
    targets (default: every target, as the ci profile runs them), timing the whole process:
    hypothesis draws the cases;
(b) runs pytest again with `--cases-from` that run: the same cases on the same targets, given
    instead of drawn, so this is the harness's own cost (checks, store, summary, report);
(c) reads back exactly which case ran on which target and runs them as a bare loop in a fresh
    process, the loop a careful user would write to check the same things by hand: per case,
    make the input and the float64 reference once; per target, put a copy of the input there (a
    fresh one for every call, in the recipe's layout: an op may write into its input), call the op
    (build and move the module for module ops) with the case's seed, and compare the output with
    the reference, and on accelerators with the cpu's output, in float64.  The library calls the
    checks make beyond that are made too: a module op is also called with its module left on the
    cpu (the `unmoved` promise) and a random module also samples and draws its own parameters on
    the target (the `sampling` check); an op with a counterpart has its other form called too (the
    `module` check); the first cases of a module op's variant on a target also go through one reused
    instance after three earlier inputs, each also given to a fresh instance, a random module's reused instance
    drawing its own parameters for each and for the case against a fresh one's (the `history` check); a
    transform that promises batch consistency is also called on one sample of the batch alone with its
    share of the parameters (the `batch` check); a function that takes PIL images is also called on the
    cpu with one image of the case as a PIL image, compared with the reference and with the tensor path
    (the `pil` check); a float output is looked at for non-finite values (the finiteness invariant); and
    an op that promises a gradient has its backward pass run on each target where the run checked it,
    against central differences of
    the float64 function along random directions and against the cpu's gradient (the `gradient` checks).
    ISA targets (`cpu:<level>`) run in one worker process per level started with ATEN_CPU_CAPABILITY set, fed
    a window of cases ahead so that it computes while this process works on the other targets.  Its process
    is timed the same way, imports included.  Nothing of the harness runs in it: no pytest, hypothesis, placement log,
    invariants, records, summary or report.
All three run in one process each (no pytest-xdist), on the same quiet machine.  Prints the
times and the ratios (a)/(c) and (b)/(c), and the bare loop's time per target.

    python benchmarks/harness_overhead.py                      # the ci profile: cases/, every target
    python benchmarks/harness_overhead.py cases/test_resize.py --targets cpu --max-examples 20
    python benchmarks/harness_overhead.py --keep /tmp/overhead     # keep the runs (e.g. to profile one again)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 64  # cases an ISA worker may run ahead of the loop


def harness(modules: list[str], targets: str, reports: Path, name: str, extra: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *modules,
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "--hypothesis-profile=ci",
            f"--targets={targets}",
            f"--reports-dir={reports}",
            f"--run-name={name}",
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"the harness run failed (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    print(done.stdout.strip().splitlines()[-1], flush=True)
    return seconds


def checked_work(run_dir: Path) -> list[dict]:
    """[{"case": ..., "mode": ..., "targets": [...]}] in first-seen order: every counted example of the run."""
    from conformance.store.reader import read_outcomes

    work: dict[str, dict] = {}
    for record in read_outcomes(run_dir)[0]:
        if record.get("phase") not in ("explore", "final") or not record.get("case"):
            continue
        case = record["case"] if isinstance(record["case"], dict) else json.loads(record["case"])
        key = json.dumps(case, sort_keys=True)
        entry = work.setdefault(key, {"case": case, "mode": record["mode"], "targets": [], "gradient": []})
        if record["target"] not in entry["targets"]:
            entry["targets"].append(record["target"])
        if record.get("check") == "gradient" and record["target"] not in entry["gradient"]:
            entry["gradient"].append(record["target"])
    return list(work.values())


def bare(work_file: Path, modules: list[str]) -> float:
    """Run the bare loop in its own process; returns that process's wall time."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--bare-loop", str(work_file), *modules], capture_output=True, text=True, cwd=ROOT
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"the bare loop failed:\n{done.stderr[-3000:]}")
    print(done.stdout.strip(), flush=True)
    return seconds


# -- the ISA targets' worker process, fed by the loop --------------------------------------------
def _send(stream: Any, value: Any) -> None:
    data = pickle.dumps(value, protocol=5)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _receive(stream: Any) -> Any:
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(size))


def _plain(value: Any) -> Any:
    """Sampled parameters without torch tensors (numpy arrays cross the pipe by pickle)."""
    import torch

    if isinstance(value, torch.Tensor):
        return (
            "tensor",
            value.detach().cpu().float().numpy() if value.dtype == torch.bfloat16 else value.detach().cpu().numpy(),
            str(value.dtype),
        )
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def _tensors(value: Any) -> Any:
    import torch

    if isinstance(value, tuple) and len(value) == 3 and value[:1] == ("tensor",):
        return torch.from_numpy(value[1]).to(getattr(torch, value[2].removeprefix("torch.")))
    if isinstance(value, dict):
        return {k: _tensors(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_tensors(v) for v in value)
    return value


def isa_worker(modules: list[str]) -> None:
    """Runs each requested case on the cpu of this process (its ATEN_CPU_CAPABILITY) and answers its output."""
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from conformance.spec.loading import load_specs
    from conformance.spec.recipes import Case, materialize

    specs = {spec.name: spec for module in modules for spec in load_specs([ROOT / module])}
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    while True:
        try:
            case_json, sampled = _receive(stdin)
        except EOFError:
            return
        case = Case.from_json(case_json)
        spec = specs[case.op]
        output = None
        try:
            torch.default_generator.manual_seed(case.recipe.seed)
            image = materialize(case.recipe)
            if spec.module is not None:
                output = spec.module.forward(
                    spec.module.build(dict(case.params)), image, dict(case.params), _tensors(sampled)
                )
            else:
                output = spec.call(image, dict(case.params))
            if spec.returns.read is not None:
                output = spec.returns.read(output)
            output = output.detach().to(torch.float64).numpy() if isinstance(output, torch.Tensor) else None
        except Exception:  # noqa: BLE001 - invalid inputs on purpose, and known crashes
            output = None
        _send(stdout, output)


class IsaFeed:
    """One worker process per ISA level, kept at most WINDOW cases ahead of the loop: one thread
    sends requests, another reads answers (never both in one thread: a full pipe would block it)."""

    def __init__(self, level: str, modules: list[str], requests: list[tuple[str, Any]]) -> None:
        env = dict(os.environ, ATEN_CPU_CAPABILITY=level)
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--isa-worker", *modules],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.answers: deque[Any] = deque()
        self.ready = threading.Condition()
        self.taken = 0
        self.count = len(requests)
        threading.Thread(target=self._send, args=(requests,), daemon=True).start()
        threading.Thread(target=self._receive, daemon=True).start()

    def _send(self, requests: list[tuple[str, Any]]) -> None:
        for sent, request in enumerate(requests):
            with self.ready:
                while sent - self.taken >= WINDOW:
                    self.ready.wait()
            _send(self.process.stdin, request)

    def _receive(self) -> None:
        for _ in range(self.count):
            answer = _receive(self.process.stdout)
            with self.ready:
                self.answers.append(answer)
                self.ready.notify_all()

    def next(self) -> Any:
        with self.ready:
            while not self.answers:
                self.ready.wait()
            self.taken += 1
            self.ready.notify_all()
            return self.answers.popleft()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def bare_loop(work_file: Path, modules: list[str]) -> None:
    """The loop a careful user would write by hand, with nothing but the ops, the references and compares."""
    start = time.perf_counter()
    import numpy as np
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from conformance.checks.context import expected_output
    from conformance.checks.gradients import make_probe
    from conformance.checks.history import HISTORY_CASES, earlier_recipes
    from conformance.checks.pil import PIL_DTYPES, PIL_MODES, from_pil, to_pil
    from conformance.devices.backward import vjp_by_walking
    from conformance.devices.calls import on_target, sample_params
    from conformance.devices.discovery import discover
    from conformance.engine.check_runs import drive
    from conformance.spec.handed import SWEEP_ENV
    from conformance.spec.loading import load_specs
    from conformance.spec.recipes import INTEGER_PEAKS, Case, apply_layout, materialize, to_float64
    from conformance.spec.sampled import NotSliceable, named_leaves, per_sample, probe_size

    def seeded(seed: int):
        fork = torch.random.fork_rng(devices=[])
        fork.__enter__()
        torch.default_generator.manual_seed(seed)
        return fork

    def call(spec, case, target, image, sampled, *, move=True, own_sampling=False, then=None, instance=None):
        """The op on a target: the module built there (and moved unless `move` is False), or `instance` reused;
        `then`: what to do with the output there (the backward pass), whose result is returned instead."""
        fork = seeded(case.recipe.seed)
        try:
            with target.active():
                if spec.module is None:
                    output = spec.call(image, dict(case.params))
                else:
                    module = instance if instance is not None else spec.module.build(dict(case.params))
                    if move:
                        module = target.put(module)
                    params = None if sampled is None or own_sampling else on_target(sampled, target)
                    output = spec.module.forward(module, image, dict(case.params), params)
                if then is not None:
                    output = then(output)
                target.synchronize()
            return spec.returns.read(output) if spec.returns.read is not None and then is None else output
        except Exception:  # noqa: BLE001 - invalid inputs on purpose, and known crashes
            return None
        finally:
            fork.__exit__(None, None, None)

    def gradient_there(spec, case, target, image, sampled, cotangent):
        """The input's gradient for the cotangent: autograd's engine, or on a virtual device the graph walked
        node by node (the engine asks a CUDA driver about streams first)."""
        leaf = image.detach().requires_grad_(True)
        placed = target.put(cotangent)  # before the call, as run_vjp puts it

        def backward(output):
            seed = placed.to(output.dtype)
            if output is leaf:  # an op that returns its input as it is (a resize to the same size)
                return seed
            if target.virtual:
                with torch.no_grad():
                    return vjp_by_walking(output, seed, leaf)
            return torch.autograd.grad(output, leaf, seed)[0]

        with torch.enable_grad():  # as the harness's run_vjp calls it
            grad = call(spec, case, target, leaf, sampled, then=backward)
        return None if grad is None else to_float64(grad.cpu())

    def sample_there(spec, case, target, image, instance=None):
        fork = seeded(case.recipe.seed)
        try:
            with target.active():
                module = target.put(spec.module.build(dict(case.params)) if instance is None else instance)
                return spec.module.sample(module, image, dict(case.params))
        except Exception:  # noqa: BLE001
            return None
        finally:
            fork.__exit__(None, None, None)

    def same(mine, theirs):
        if isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor) and mine.shape == theirs.shape:
            np.array_equal(to_float64(mine.cpu()), to_float64(theirs.cpu()), equal_nan=True)

    def history(form, case, target, mode):
        """One instance of the module form on three earlier inputs and then the case, each against a fresh one."""
        instance = form.module.build(dict(case.params))
        for _, recipe in earlier_recipes(form, case.recipe, mode):
            earlier = Case(case.op, recipe, case.params)
            image = materialize(dataclasses.replace(recipe, layout="contiguous"))
            try:
                drawn = sample_params(form, image, earlier)
            except Exception:  # noqa: BLE001 - as the check: a sampler refusing an earlier input skips it
                continue

            def there(image=image, target=target, layout=recipe.layout):
                return apply_layout(target.put(image) if target.is_accelerator else image.clone(), layout)

            fresh_output = call(form, earlier, target, there(), drawn)
            if form.module.sample is not None:  # the reused instance draws for this input itself
                sample_there(form, earlier, target, there(), instance=instance)
            same(call(form, earlier, target, there(), drawn, instance=instance), fresh_output)
        return instance

    def compare(actual, expected, tolerance):
        if actual is None or expected is None or actual.shape != expected.shape:
            return
        bound = tolerance.atol + tolerance.rtol * np.abs(expected)
        np.count_nonzero(np.abs(actual - expected) > bound)

    os.environ.setdefault(SWEEP_ENV, "default")  # what the plugin sets for cases/test_sweep.py in a default run
    specs = {spec.name: spec for module in modules for spec in load_specs([ROOT / module])}
    targets = {t.name: t for t in discover()}
    work = json.loads(work_file.read_text())
    cases = [Case.from_json(json.dumps(entry["case"])) for entry in work]
    imported = time.perf_counter()
    feeds = {}
    for name in sorted({n for entry in work for n in entry["targets"] if getattr(targets[n], "level", None)}):
        requests = []
        for entry, case in zip(work, cases, strict=False):
            if name in entry["targets"]:
                spec = specs[case.op]
                sampled = sample_params(spec, materialize(case.recipe), case) if spec.module is not None else None
                requests.append((case.json if hasattr(case, "json") else case.to_json(), _plain(sampled)))
        feeds[name] = IsaFeed(targets[name].level, modules, requests)
    spent: dict[str, float] = defaultdict(float)
    compared = graded = unanswered = 0
    histories: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for entry, case in zip(work, cases, strict=False):
        began = time.perf_counter()
        spec = specs[case.op]
        dense = materialize(dataclasses.replace(case.recipe, layout="contiguous"))  # synthesised once per case
        host = apply_layout(dense.clone(), case.recipe.layout)
        sampled = sample_params(spec, host, case) if spec.module is not None else None
        valid = entry["mode"] not in spec.error_modes
        differentiated = bool(entry.get("gradient")) and valid
        reference = spec.reference_in(entry["mode"])  # an accepted mode's documented meaning applied
        values = to_float64(host) if differentiated or (valid and reference is not None) else None
        expected = ideal = None
        if valid and reference is not None:  # a swept transform has none
            ideal = reference(values, case) if sampled is None else reference(values, case, sampled)
            expected = expected_output(ideal, spec.output_dtype_of(case))
        gradient_probe = None  # the gradient checks: central differences of the float64 function
        if differentiated:
            reused = spec.gradient.estimate == "reference" and spec.output_dtype_of(case) not in INTEGER_PEAKS
            at = (lambda ideal=ideal: ideal) if reused else None
            gradient_probe = drive(make_probe(spec, case, values, sampled, at))
        alone = None  # the batch check: one sample of the batch alone (chosen by the seed), with its parameters
        batch = case.recipe.batch
        if spec.batch_consistent and len(batch) == 1 and batch[0] >= 2 and valid:
            index = case.recipe.seed % batch[0]
            try:
                probe = sample_params(spec, torch.zeros((probe_size(batch[0]), *dense.shape[1:])), case)
                alone = (index, None if sampled is None else per_sample(sampled, probe, index, batch[0]))
            except NotSliceable:
                alone = None
        spent["input and reference"] += time.perf_counter() - began
        outputs: dict[str, Any] = {}
        cpu_grad = None
        for name in entry["targets"]:
            began = time.perf_counter()
            target = targets[name]
            if name in feeds:
                outputs[name] = feeds[name].next()
            else:

                def fresh(target=target, dense=dense, layout=case.recipe.layout):  # a fresh copy for every call
                    return apply_layout(target.put(dense) if target.is_accelerator else dense.clone(), layout)

                output = call(spec, case, target, fresh(), sampled)
                outputs[name] = to_float64(output.cpu()) if isinstance(output, torch.Tensor) else None
                if outputs[name] is not None and output.is_floating_point():  # the finiteness invariant
                    np.isfinite(outputs[name]).all()
                recipe = case.recipe
                if (  # the pil check: one image of the case as a PIL image, on the cpu
                    name == "cpu"
                    and valid
                    and spec.pil_input
                    and recipe.dtype in PIL_DTYPES
                    and recipe.channels in PIL_MODES
                    and not recipe.empty
                    and sampled is None
                ):
                    images = dense.reshape(-1, *dense.shape[-3:])
                    index = recipe.seed % images.shape[0]
                    picture = call(spec, case, target, to_pil(images[index].numpy()), None)
                    if picture is not None and expected is not None:
                        mine = from_pil(picture)
                        tolerance = spec.tolerance("pil", recipe.dtype, entry["mode"], name)
                        compare(mine, expected.reshape(-1, *expected.shape[-3:])[index], tolerance)
                        if outputs[name] is not None:
                            compare(mine, outputs[name].reshape(-1, *outputs[name].shape[-3:])[index], tolerance)
                if spec.module is not None and target.is_accelerator and valid:  # the unmoved promise
                    call(spec, case, target, fresh(), None, move=False)
                if spec.module is not None and spec.module.sample is not None and valid:  # the own sampling
                    sample_there(spec, case, target, fresh())
                    call(spec, case, target, fresh(), sampled, own_sampling=True)
                if alone is not None and outputs[name] is not None:
                    index, share = alone
                    single = call(spec, case, target, fresh()[index : index + 1], share)
                    if isinstance(single, torch.Tensor):
                        compare(
                            to_float64(single.cpu()),
                            outputs[name][index : index + 1],
                            spec.tolerance("batch", case.recipe.dtype, entry["mode"], name),
                        )
                if valid and not target.compiled:
                    theirs = None
                    if spec.counterpart is not None:  # the module check: the other form with the same params
                        theirs = call(spec.other_form(), case, target, fresh(), sampled)
                        same(output, theirs)
                    form = spec.module_form()
                    key = (spec.name, case.recipe.dtype, entry["mode"], name)
                    if form is not None and not case.recipe.empty and histories[key] < HISTORY_CASES:
                        histories[key] += 1
                        instance = history(form, case, target, entry["mode"])
                        same(
                            call(form, case, target, fresh(), sampled, instance=instance),
                            output if spec.module is not None else theirs,
                        )
                        if form.module.sample is not None:  # its own draw for the case against a fresh one's
                            own = named_leaves(sample_there(form, case, target, fresh(), instance=instance))
                            first = named_leaves(sample_there(form, case, target, fresh()))
                            for name_drawn, value in own.items():
                                same(value, first.get(name_drawn))
                if gradient_probe is not None and gradient_probe.error is None and name in entry["gradient"]:
                    grad = gradient_there(
                        spec, case, target, fresh(), sampled, torch.from_numpy(gradient_probe.cotangent)
                    )
                    graded += 1
                    unanswered += grad is None
                    if grad is not None:
                        projected = np.array([np.sum(grad * u) for u in gradient_probe.directions])
                        compare(
                            projected,
                            np.array(gradient_probe.estimates),
                            spec.tolerance("gradient", case.recipe.dtype, entry["mode"], name),
                        )
                        if name == "cpu":
                            cpu_grad = grad
                        elif cpu_grad is not None:
                            compare(
                                grad,
                                cpu_grad,
                                spec.tolerance("gradient_device", case.recipe.dtype, entry["mode"], name),
                            )
            if valid:
                if expected is not None:
                    compare(
                        outputs[name], expected, spec.tolerance("reference", case.recipe.dtype, entry["mode"], name)
                    )
                if name != "cpu" and "cpu" in outputs:
                    compare(
                        outputs[name],
                        outputs["cpu"],
                        spec.tolerance("cross_device", case.recipe.dtype, entry["mode"], name),
                    )
                compared += 1
            spent[name] += time.perf_counter() - began
    for feed in feeds.values():
        feed.close()
    end = time.perf_counter()
    print(
        f"bare loop: {sum(len(e['targets']) for e in work)} case-target runs ({compared} compared, {graded} "
        f"backward passes, {unanswered} of them raising) in "
        f"{end - imported:.1f} s after {imported - start:.1f} s of imports; per target: "
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in spent.items())
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-loop":
        bare_loop(Path(sys.argv[2]), sys.argv[3:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--isa-worker":
        isa_worker(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=None, help="case modules (default: every cases/test_*.py)")
    parser.add_argument("--targets", default="all")
    parser.add_argument("--keep", type=Path, default=None, help="write the two runs' folders here and keep them")
    args, extra = parser.parse_known_args()
    modules = args.modules or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "cases").glob("test_*.py"))
    with tempfile.TemporaryDirectory() as scratch:
        tmp = str(args.keep) if args.keep else scratch
        drawing = harness(modules, args.targets, Path(tmp), "drawn", extra)
        given = harness(modules, args.targets, Path(tmp), "given", [*extra, f"--cases-from={Path(tmp) / 'drawn'}"])
        work = checked_work(Path(tmp) / "drawn")
        if checked_work(Path(tmp) / "given") != work:
            sys.exit("the --cases-from run did not check the same cases on the same targets")
        work_file = Path(tmp) / "work.json"
        work_file.write_text(json.dumps(work))
        loop = bare(work_file, modules)
    runs = sum(len(e["targets"]) for e in work)
    print(f"{len(work)} cases, {runs} case-target runs on {args.targets}; whole processes, imports included:")
    print(f"  bare loop                                      {loop:6.1f} s")
    print(f"  harness, cases given (--cases-from)            {given:6.1f} s  ratio {given / loop:.2f}x")
    print(f"  harness, cases drawn by hypothesis (ci run)    {drawing:6.1f} s  ratio {drawing / loop:.2f}x")


if __name__ == "__main__":
    main()
