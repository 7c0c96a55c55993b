"""The names a repro script's own machinery binds (templates/repro.py.j2), read from the template itself, and fresh
names for the op's code where it would rebind one of them: a case module's function named `call` (the name
docs/adding-an-op.md uses) once replaced the script's own `call(x)`, which then called itself with the op's arguments
and reported its own TypeError as the failure."""

from __future__ import annotations

import ast
import functools
import math

from jinja2 import Environment, PackageLoader, Template, Undefined


class _Blank(Undefined):
    """A value the skeleton render leaves out: None in an expression, nothing to loop over."""

    def __str__(self) -> str:
        return "None"


def template(name: str = "repro.py.j2", skeleton: bool = False) -> Template:
    """The script's template; `skeleton`: every value left out renders as None (for reading its names)."""
    environment = Environment(
        loader=PackageLoader("conformance.report", "templates"),
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        undefined=_Blank if skeleton else Undefined,
    )
    environment.filters["literal"] = literal
    return environment.get_template(name)


def literal(value: object) -> str:
    """A Python literal of a JSON-like value (non-finite floats spelt so that they evaluate)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return "None" if isinstance(value, Undefined) else repr(value)


def binding(statement: ast.stmt) -> dict[str, str]:
    """The names a top-level statement binds, each with the module it binds it to ("" for anything else)."""
    if isinstance(statement, ast.Import):
        roots = {a.name: a.name.partition(".")[0] for a in statement.names}
        return {a.asname or roots[a.name]: a.name if a.asname else roots[a.name] for a in statement.names}
    if isinstance(statement, ast.ImportFrom):
        return {a.asname or a.name: "" for a in statement.names}
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name: ""}
    found: dict[str, str] = {}
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        found.update({n.id: "" for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)})
    for block in ("body", "orelse", "finalbody", "handlers"):  # an `if` or `try` at the top level binds its names
        for inner in getattr(statement, block, []):
            found.update(binding(inner))
    return found


@functools.cache
def script_names() -> dict[str, str]:
    """Every name the script binds at its top level, with the module it binds it to ("" for its own definitions)."""
    tree = ast.parse(template(skeleton=True).render(isa="skeleton"))  # its `import os` too
    return {name: line for statement in tree.body for name, line in binding(statement).items()}


def clashes(name: str, module: str) -> bool:
    """Whether binding `name` to the module `module` ("" for anything else) rebinds a name of the script's."""
    return script_names().get(name, module) != module or (not module and name in script_names())


def fresh(name: str, avoid: set[str] | frozenset[str]) -> str:
    """`name` with underscores added until it is none of `avoid` nor a name of the script."""
    taken = avoid | script_names().keys()
    while name in taken:
        name += "_"
    return name


class Renamer(ast.NodeTransformer):
    """Renames globals and the function's own name in the op's inlined source."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.names.get(node.id, node.id)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.names.get(node.name, node.name)
        self.generic_visit(node)
        return node
