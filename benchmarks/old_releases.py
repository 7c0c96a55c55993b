"""Run the suite against older torchvision and kornia releases on the current torch (docs/compatibility.md).

Each release is installed with `pip install --no-deps --target <cache>/<release>` and put first on
PYTHONPATH, so the current torch is reused and the imported version differs from what pip's
metadata in the environment says: the run's header must name the imported one.  For each
release this prints the exit status, the imported version and file, the skips (with their
reasons), the narrowed strategies and every failing item with its first message.

    python benchmarks/old_releases.py                          # the releases in docs/compatibility.md
    python benchmarks/old_releases.py kornia==0.7.2 --max-examples 50
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from conformance.store.reader import read_outcomes
from conformance.store.summary_reader import read_summary

ROOT = Path(__file__).resolve().parents[1]
RELEASES = [
    "kornia==0.6.12",
    "kornia==0.7.0",
    "kornia==0.7.2",
    "kornia==0.7.3",
    "kornia==0.8.0",
    "kornia==0.8.3",
    "torchvision==0.15.2",
    "torchvision==0.16.2",
    "torchvision==0.17.2",
    "torchvision==0.18.1",
]
EXTRA = ["requests"]  # pure-Python imports of old torchvision releases that the current environment lacks


def install(release: str, cache: Path) -> Path:
    folder = cache / release.replace("==", "-")
    if not folder.is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(folder), release],
            check=True,
        )
    return folder


def run(release: str, folder: Path, extra: Path, max_examples: int, keyword: str) -> dict:
    """What a run of the suite against one release found; its run folder is removed after it is read."""
    with tempfile.TemporaryDirectory(prefix="old-release-") as kept:
        return _run_into(Path(kept), release, folder, extra, max_examples, keyword)


def _run_into(reports: Path, release: str, folder: Path, extra: Path, max_examples: int, keyword: str) -> dict:
    env = os.environ | {"PYTHONPATH": f"{folder}{os.pathsep}{extra}", "CI": "1", "CONFORMANCE_REPORTS": str(reports)}
    command = [
        sys.executable,
        "-m",
        "conformance",
        "run",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        f"--max-examples={max_examples}",
        "--run-name=run",
        *(["-k", keyword] if keyword else []),
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    lines = done.stdout.splitlines()
    found = {
        "release": release,
        "exit": done.returncode,
        "tail": lines[-1] if lines else done.stderr[-500:],
        "imported": [ln for ln in lines if ln.startswith("conformance: ") and "-" in ln][:2],
        "narrowed": [ln for ln in lines if ln.startswith("narrowed: ")],
        "skips": [ln for ln in lines if ln.startswith("SKIPPED [")],
        "failures": Counter(),
    }
    summary = read_summary(reports / "run")
    if summary is not None:
        for group in summary["groups"]:
            if group["verdict"] in ("fail", "error"):
                found["failures"][(group["op"], group["check"], group["target"], group["dtype"])] += 1
        messages: dict[tuple, str] = {}
        for record in read_outcomes(reports / "run")[0]:
            if record.get("verdict") in ("fail", "error"):
                messages.setdefault((record.get("op"), record.get("check")), (record.get("message") or "")[:300])
        found["messages"] = messages
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", default=RELEASES)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "conformance-old-releases")
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("-k", default="", help="pytest -k expression (default: the whole suite)")
    args = parser.parse_args()
    extra = args.cache / "extra"
    if not extra.is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(extra), *EXTRA], check=True)
    for release in args.releases:
        found = run(release, install(release, args.cache), extra, args.max_examples, args.k)
        print(f"## {release}: exit {found['exit']}: {found['tail']}")
        for line in found["imported"] + found["narrowed"] + found["skips"]:
            print(f"  {line[:300]}")
        for (op, check, target, dtype), count in sorted(found["failures"].items()):
            print(f"  FAIL {op} {check} on {target} [{dtype}] ({count} variant(s))")
        for (op, check), message in sorted(found.get("messages", {}).items()):
            print(f"    {op}/{check}: {message}")
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
