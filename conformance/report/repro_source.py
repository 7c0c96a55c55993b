"""An op's call written as the library code it runs, for a repro script that cannot import the harness.

A spec's `call` is a lambda of its case module (`lambda image, p: F_v2.posterize(image, p["bits"])`), a helper of
the harness, or a module built and called; none of these can be handed to an upstream maintainer as they are.  So
the call is run once on the cpu under a profiler that records each outermost call into a library (a frame of no
harness, case-module, torch, numpy or standard-library module) with its bound arguments, and those calls are
written back as source: `torchvision.transforms.v2.functional.posterize(x, bits=3)`, or a module's construction
and call.  What cannot be written so falls back, each step said in the script: the case module's own lambda with
its imports (an op of one's own written with torch alone), the call imported by its qualified name, and last the
difference the run recorded, with why the call could not be written.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dis
import inspect
import os
import sys
import types
from typing import Any

import torch

from conformance.report.repro_names import Renamer, clashes, fresh
from conformance.report.repro_trace import MISSING, LibraryCall, function_of, public_name, qualname, trace
from conformance.report.repro_values import Rendered, Unrenderable, Writer
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import Case


def traced(calls: list[LibraryCall], x: torch.Tensor, output: Any, moved: set[int], built: Any) -> Rendered:
    """The recorded library calls as lines, one variable each; `built`: the module the harness builds and moves to
    the target (its construction gets `.to(DEVICE)`)."""
    if not calls:
        raise Unrenderable("the call reaches no library function (only torch, numpy or its own code)")
    writer = Writer(moved, x)
    lines = writer.rendered.body
    for index, call in enumerate(calls):
        function = function_of(call)
        if function is None:
            raise Unrenderable(f"the function running {qualname(call.code)} could not be found")
        code, variable = call.code, f"v{index}"
        receiver = call.values.get("self", MISSING) if code.co_argcount and code.co_varnames[0] == "self" else MISSING
        if receiver is MISSING:
            expression = f"{writer.name_of(function)}({writer.arguments(code, function, call.values, 0)})"
        else:
            attribute, kind = _attribute_of(type(receiver), function)
            if attribute == "__init__":
                expression = f"{writer.name_of(type(receiver))}({writer.arguments(code, function, call.values, 1)})"
                expression += ".to(DEVICE)" if receiver is built and isinstance(receiver, torch.nn.Module) else ""
                writer.name(receiver, variable)
                lines.append(f"{variable} = {expression}")
                continue
            owner = writer.names.get(id(receiver))
            if owner is None or attribute is None:
                raise Unrenderable(f"{qualname(code)} is a method of an object the call did not build")
            arguments = writer.arguments(code, function, call.values, 1)
            if kind == "property":
                expression = f"{owner}.{attribute}"
            elif attribute == "forward" and isinstance(receiver, torch.nn.Module):
                expression = f"{owner}({arguments})"
            else:
                expression = f"{owner}.{attribute}({arguments})"
        if call.returned is not None:
            writer.name(call.returned, variable)
        lines.append(f"{variable} = {expression}")
    returned = f"v{len(calls) - 1}" if output is None else writer.names.get(id(output))
    if returned is None and isinstance(output, torch.Tensor):
        returned = writer.view(output)
    if returned is None:
        raise Unrenderable("the harness's call changes what the library returned before using it")
    lines.append(f"return {returned}")
    rendered = writer.rendered
    for root in {line.split()[1].partition(".")[0] for line in rendered.imports}:
        if clashes(root, root):
            raise Unrenderable(f"the library's name {root!r} is one the script's own code uses")
    called = [line.split(" = ", 1)[1].split("(", 1)[0] for line in lines if " = " in line]
    called = sorted({name for name in called if "." in name and not name.split(".")[0][1:].isdigit()})
    rendered.how = f"{', '.join(called)}: what the harness's call ran in the library, recorded with its arguments"
    rendered.notes += [
        f"{key} (in the npz) is a tensor the harness's call built for the library: its values, put on the device"
        for key in writer.derived
    ]
    return rendered


def _attribute_of(cls: type, function: Any) -> tuple[str | None, str]:
    """The name under which a class (or a base) holds the function, and whether as a method or a property's getter
    (kornia builds some methods whose code names differ from the attribute)."""
    for klass in cls.__mro__:
        for name, held in vars(klass).items():
            if held is function or getattr(held, "__func__", None) is function:
                return name, "method"
            if isinstance(held, property) and held.fget is function:
                return name, "property"
    return None, ""


def inlined(function: Any, params: dict[str, Any], case_folder: str) -> Rendered:
    """The case module's own lambda or function, with the imports it reads (a call that reads nothing else); a name
    it binds that the script's own machinery binds otherwise is renamed (its `call`, `main`, `DATA`, ...)."""
    if not isinstance(function, types.FunctionType) or function.__closure__ or function.__defaults__:
        raise Unrenderable("the call is not a plain function of its case module")
    source_file = os.path.abspath(inspect.getsourcefile(function) or "")
    if not source_file.startswith(case_folder):
        raise Unrenderable("the call is not defined in its case module")
    read = _globals_read(function.__code__)
    named = "op" if function.__name__ == "<lambda>" else function.__name__
    renames = {named: fresh(named, read)} if clashes(named, "") else {}
    imports = []
    for name in sorted(read):
        value = function.__globals__.get(name, MISSING)
        if isinstance(value, types.ModuleType) and value.__name__.partition(".")[0] != "conformance":
            line = f"import {value.__name__}" + ("" if name == value.__name__ else f" as {name}")
            if clashes(name, value.__name__):  # the script binds the name to something else
                renames[name] = fresh(name, read)
                line = f"import {value.__name__} as {renames[name]}"
            imports.append(line)
        elif value is MISSING and hasattr(builtins, name):
            continue
        elif name != function.__name__:
            raise Unrenderable(f"the call reads {name!r} of its case module, which is not a module")
    writer = Writer(set())
    rendered = writer.rendered
    rendered.imports = imports
    rendered.definitions = [_definition(function, source_file, renames)]
    rendered.own = [renames.get(named, named)]
    rendered.body = [f"return {rendered.own[0]}(x, {writer.value(params)})"]
    rendered.how = "the case module's own call, with the parameters the harness gave it"
    if renames:
        rendered.how += (
            " (renamed where the script's own code uses the name: "
            + ", ".join(f"{old} as {new}" for old, new in renames.items())
            + ")"
        )
    return rendered


def _globals_read(code: types.CodeType) -> set[str]:
    found = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _globals_read(const)
    return found


def _definition(function: types.FunctionType, source_file: str, renames: dict[str, str]) -> str:
    """The lambda (as `op = lambda ...`) or undecorated def of the case module's source that made `function`."""
    with open(source_file, encoding="utf-8") as stream:
        tree = ast.parse(stream.read())
    line, name = function.__code__.co_firstlineno, function.__name__
    if name == "<lambda>":
        code = function.__code__
        arguments = list(code.co_varnames[: code.co_argcount])
        found: list[ast.AST] = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Lambda) and n.lineno == line and [a.arg for a in n.args.args] == arguments
        ]
        if len(found) > 1:  # the same arguments twice on one line: the one whose columns hold the code's
            found = [n for n in found if _holds(n, code)]
    else:
        found = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.lineno == line and n.name == name and not n.decorator_list
        ]
    if len(found) != 1:
        raise Unrenderable("the call is not one lambda or undecorated function on its line of the case module")
    for node in ast.walk(found[0]):  # annotations may name what the script does not import (typing's Any)
        if isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
    written = ast.unparse(Renamer(renames).visit(found[0]))
    return f"{renames.get('op', 'op')} = {written}" if name == "<lambda>" else written


def _holds(node: ast.AST, code: types.CodeType) -> bool:
    columns = [c for _, _, c, _ in getattr(code, "co_positions", list)() if c is not None]
    end = getattr(node, "end_col_offset", None) or 0
    return bool(columns) and all(node.col_offset <= c <= end for c in columns)  # type: ignore[attr-defined]


def imported(function: Any, params: dict[str, Any], case_folder: str) -> Rendered:
    """The call imported by its qualified name, from a module that is neither the harness nor one that uses it."""
    found = public_name(function)
    module = sys.modules.get(found[0]) if found else None
    if found is None or module is None or not found[0]:
        raise Unrenderable("the call has no importable name outside the harness")
    if os.path.abspath(str(getattr(module, "__file__", ""))).startswith(case_folder) or any(
        str(getattr(v, "__name__" if isinstance(v, types.ModuleType) else "__module__", "")).startswith("conformance")
        for v in vars(module).values()
    ):
        raise Unrenderable(f"the call's module {found[0]} is a case module or imports the harness")
    writer = Writer(set())
    root, expression = found[0].partition(".")[0], found[1]
    writer.rendered.imports = [f"import {found[0]}"]
    if clashes(root, root):  # a module named as the script's own code names something (call.py, main.py)
        alias = fresh(found[0].replace(".", "_"), set())
        writer.rendered.imports = [f"import {found[0]} as {alias}"]
        expression = alias + expression[len(found[0]) :]
    writer.rendered.body = [f"return {expression}(x, {writer.value(params)})"]
    writer.rendered.how = "the harness's call, imported by its qualified name"
    return writer.rendered


def render(spec: OpSpec, case: Case, x: torch.Tensor, sampled: Any, case_folder: str) -> Rendered:
    """The op's call on `x` (the case's input on the cpu) as source, by the first way that can write it;
    `case_folder`: the case module's folder, ending in a separator (its files are never the library)."""
    reasons = []
    built: list[Any] = []

    def run() -> Any:
        torch.manual_seed(case.recipe.seed)
        if spec.module is not None:
            built[:] = [spec.module.build(dict(case.params))]
            return spec.module.forward(built[0], x, dict(case.params), sampled)
        assert spec.call is not None
        return spec.call(x, dict(case.params))

    with contextlib.suppress(Exception):  # once before the trace (lazy imports, caches): the trace sees the op alone
        run()
    output, calls = trace(run, case_folder)
    found: Rendered | None = None
    try:
        if spec.returns.read is not None:
            raise Unrenderable("the harness reads the library's result into a tensor (Returns.read)")
        moved = {id(x)} | {id(v) for v in _leaves(sampled)}
        found = traced(calls, x, output, moved, built[0] if built else None)
    except Unrenderable as exc:
        reasons.append(f"as library calls: {exc}")
    if found is not None and not found.notes:
        return found
    member = spec.member
    own = member.implementation.call if member is not None else spec.call
    params = member.implementation.passed(case.params) if member is not None else dict(case.params)
    if spec.module is None and spec.returns.read is None:
        for way in (inlined, imported):
            try:
                return way(own, params, case_folder)
            except Unrenderable as exc:
                reasons.append(str(exc))
    if found is not None:
        return found
    return Rendered(how="not written as library code (" + "; ".join(reasons) + ")")


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value] if isinstance(value, torch.Tensor) else []
