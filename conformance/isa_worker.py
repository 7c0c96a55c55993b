"""The worker process of an ISA target (see conformance.isa): started with ATEN_CPU_CAPABILITY set,
it answers one request per case on its stdin/stdout (torch.save'd dicts of plain values and
tensors, read back with weights_only=True): the op's output on the cpu, or what it raised."""
from __future__ import annotations

import sys
from typing import Any

import torch


def _spec(source: str, op: str, cache: dict[tuple[str, str], Any]) -> Any:
    if (source, op) not in cache:
        from pathlib import Path

        from conformance.buildcompare import load_specs

        for spec in load_specs([Path(source)]):
            cache[(source, spec.name)] = spec
    return cache[(source, op)]


def answer(request: dict[str, Any], cache: dict[tuple[str, str], Any]) -> dict[str, Any]:
    from conformance.calls import run_op, set_case_timeout
    from conformance.recipes import Case
    from conformance.shared import InputImage
    from conformance.targets import CPU

    set_case_timeout(float(request["timeout"]))
    spec = _spec(request["source"], request["op"], cache)
    case = Case.from_json(request["case"])
    run = run_op(spec, InputImage.make(case.recipe).on(CPU), case, CPU, request["sampled"])
    if run.error is not None:
        kind = run.error_type or Exception
        return {"error": run.error, "error_type": f"{kind.__module__}:{kind.__qualname__}",
                "error_message": run.error_message, "timed_out": run.timed_out}
    output = run.output
    if not isinstance(output, torch.Tensor):
        return {"error": f"the op returned {type(output).__name__}, not a tensor", "error_type": "builtins:TypeError"}
    return {"output": output.detach().clone()}


def main() -> None:
    from conformance.isa import receive, send

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything the op prints must not corrupt the pipe
    send(stdout, {"capability": torch.backends.cpu.get_cpu_capability()})
    cache: dict[tuple[str, str], Any] = {}
    while True:
        try:
            request = receive(stdin)
        except EOFError:
            return
        try:
            reply = answer(request, cache)
        except Exception as exc:  # noqa: BLE001 - the harness's own failure, reported to the parent
            reply = {"error": f"the ISA worker could not run the case: {type(exc).__name__}: {exc}",
                     "error_type": "builtins:RuntimeError", "error_message": str(exc)}
        send(stdout, reply)


if __name__ == "__main__":
    main()
