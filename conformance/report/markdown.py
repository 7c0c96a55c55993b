"""summary.md: the run's verdict, what is new and the top findings, where CI shows it (GitHub's job summary
takes Markdown through $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from conformance.store.summary_model import Summary

MAX_NEW = 25
MAX_FINDINGS = 10
UNCALIBRATED_NOTE = (
    "Judged by the default tolerance of their dtype, which no one measured for the op: replace it with a rule and "
    "its measured reason (docs/adding-an-op.md)."
)
_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|~"})  # line-start marks never start a line here


def escape(text: Any) -> str:
    """A run's string as literal Markdown text (no links, HTML or tables made from it), on one line."""
    return " ".join(str(text).split()).translate(_MARKDOWN)


def code(text: Any) -> str:
    """A run's string as a Markdown code span, on one line: shown and copied as it is (a command escaped as text,
    `test\\_x`, failed where it was pasted from the raw file)."""
    line = " ".join(str(text).split())
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", line)), default=0))
    padded = f" {line} " if line.startswith("`") or line.endswith("`") else line
    return f"{fence}{padded}{fence}"


def summary_markdown(title: str, data: dict[str, Any], summary: Summary) -> str:
    lines = [f"## conformance: {escape(title)}", "", f"**{escape(data['headline'])}**", ""]
    new = data["new"]
    if new:
        lines += ["### What is new", ""]
        lines += [f"- {escape(item['kind'])}: {escape(item['text'])}" for item in new[:MAX_NEW]]
        if len(new) > MAX_NEW:
            lines.append(f"- … and {len(new) - MAX_NEW} more in the report")
        lines.append("")
    reproduced = [f for f in data["findings"] if f["reproduced"]]
    if reproduced:
        lines += ["### Top known issues", "", "| known issue | cases | items |", "| --- | ---: | ---: |"]
        lines += [f"| {escape(f['id'])} | {f['cases']:,} | {f['items']:,} |" for f in reproduced[:MAX_FINDINGS]]
        if len(reproduced) > MAX_FINDINGS:
            lines.append(f"| … {len(reproduced) - MAX_FINDINGS} more | | |")
        lines.append("")
    if data.get("uncalibrated"):
        lines += ["### Uncalibrated tolerances", "", UNCALIBRATED_NOTE, ""]
        lines += [f"- {escape(u['op'])}: {escape(', '.join(u['dtypes']))}" for u in data["uncalibrated"]]
        lines.append("")
    lines += _repro_scripts(data.get("details") or [])
    totals = ", ".join(f"{count:,} {escape(verdict.replace('_', ' '))}" for verdict, count in summary.totals.items())
    lines += [f"Outcomes: {totals}.", "", "The full report is index.html in the run folder.", ""]
    return "\n".join(lines)


def _repro_scripts(details: list[dict[str, Any]]) -> list[str]:
    """The command that writes a script reproducing each failure without the harness (an upstream bug report's)."""
    commands = [d["script"] for d in details if d.get("script") and d.get("verdict") in ("fail", "error")]
    if not commands:
        return []
    lines = ["### Reproduce without the harness", "", "Each writes a script needing torch and the library alone:", ""]
    lines += [f"- {code(command)}" for command in commands[:MAX_NEW]]  # copied from the page or the file alike
    if len(commands) > MAX_NEW:
        lines.append(f"- … and {len(commands) - MAX_NEW} more in the report")
    return [*lines, ""]


def append_to_step_summary(text: str) -> Path | None:
    """Append to $GITHUB_STEP_SUMMARY when CI set it (a path it created); None otherwise."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    path = Path(target)
    try:
        with path.open("a", encoding="utf-8") as stream:
            stream.write(text + "\n")
    except OSError:
        return None
    return path
