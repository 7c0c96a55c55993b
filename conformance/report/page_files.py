"""The dashboard's lazy part: what a cell opens to (its checks, and its worst cases with their pictures) is one
script file per family in `index_files/` beside index.html, which the page loads when a cell of that family is
first opened.  The page itself holds the first screen (headline, what is new, the matrix with each cell's counts),
so it opens at once whatever the run's size; a <script> element, unlike fetch(), works from file://.

Each file is one call, `conformanceDetails("<file>", <JSON>);`, its JSON escaped as the page's own data is
(`script_json`), and the page sets every string from it as text.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from conformance.store.writer import json_safe

FOLDER = "index_files"
CALLBACK = "conformanceDetails"


def script_json(data: Any) -> str:
    """JSON safe inside <script>: no character of the run's strings can close the element or open a comment."""
    text = json.dumps(json_safe(data), separators=(",", ":"), allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def split(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The page's own data (each cell without its checks, no worst cases; `files` names each family's file) and,
    by file name, each family's part: {"checks": {cell: its checks' rows}, "details": [its cells' worst cases]}.
    A check's row is what the page draws of it: its verdict (the row's colour) and its columns' texts."""
    files: dict[str, str] = {}
    parts: dict[str, dict[str, Any]] = {}
    file_of: dict[str, str] = {}
    rows = []
    for row in data["matrix"]["rows"]:
        name = files.setdefault(row["family"], f"f{len(files)}.js")
        part = parts.setdefault(name, {"checks": {}, "details": []})
        for column, cell in row["cells"].items():
            place = f"{row['id']}.{column}"
            file_of[place] = name
            part["checks"][place] = [{"verdict": c["verdict"], "cells": c["cells"]} for c in cell["checks"]]
        shown = {column: {k: v for k, v in cell.items() if k != "checks"} for column, cell in row["cells"].items()}
        rows.append(row | {"cells": shown})
    for detail in data.get("details") or []:
        found = file_of.get(str(detail.get("cell")))
        if found is not None:  # a case of no cell of the matrix is never shown
            parts[found]["details"].append(detail)
    page = {key: value for key, value in data.items() if key != "details"}
    page |= {"matrix": data["matrix"] | {"rows": rows}, "files": files, "folder": FOLDER}
    return page, parts


def _remove(path: Path) -> None:
    """A path gone, whatever it was: a link is removed, never followed."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def write(run_dir: Path, parts: dict[str, dict[str, Any]]) -> None:
    """`index_files/` holding these parts and nothing else: written in a folder beside it, then swapped in, so a
    rebuild never leaves an older run's family files behind."""
    stage = run_dir / f".{FOLDER}.{os.getpid()}.tmp"
    _remove(stage)
    stage.mkdir()
    for name, part in parts.items():
        (stage / name).write_text(f'{CALLBACK}("{name}",{script_json(part)});\n', encoding="utf-8")
    _remove(run_dir / FOLDER)
    stage.rename(run_dir / FOLDER)
