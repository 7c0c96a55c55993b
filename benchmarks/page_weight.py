"""A run folder's weight and how fast its dashboard opens: bytes per part, and headless Chromium's time from
navigation start to the page's load event (and to `document.body.dataset.loaded`, the matrix drawn), then to a
cell opened with its worst cases, over a few loads from disk (file://).

    python benchmarks/page_weight.py reports/<run> [--loads 5] [--screenshot first-screen.png]

Needs Debian's chromium and chromium-driver (tests/report_pages.py starts them; never a downloaded browser).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

OPEN_CELL = """
const done = arguments[arguments.length - 1], drill = document.getElementById("drill"), start = performance.now();
const opened = () => drill.dataset.ready || (!window.conformanceDetails && document.getElementById("drill-checks"));
const watch = new MutationObserver(() => { if (opened()) { watch.disconnect(); done(performance.now() - start); } });
watch.observe(drill, { attributes: true, childList: true, subtree: true });
location.hash = "cell=" + arguments[0];
"""  # a cell opened from a link: its checks and worst cases drawn (a page that embeds them draws them at once)
LOADED = "const n = performance.getEntriesByType('navigation')[0]; return n && n.loadEventEnd"
PARTS = ("artifacts", "outcomes", "examples", "summary.json", "index.html", "index_files", "crosslib.html")


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def weights(run: Path) -> dict[str, int]:
    found = {part: size(run / part) for part in PARTS}
    found["the rest"] = size(run) - sum(found.values())
    found["in all"] = size(run)
    return found


def load_times(run: Path, loads: int, screenshot: Path | None = None) -> dict[str, list[float]]:
    """Milliseconds per load: the load event, the matrix drawn, and (where the run has one) a failing or
    known-issue cell opened from a link to its worst cases drawn; `screenshot`: the first screen, as loaded."""
    import pytest
    from report_pages import chromium

    try:
        browser = chromium()
    except pytest.skip.Exception as exc:
        raise SystemExit(str(exc)) from None
    found: dict[str, list[float]] = {"load event": [], "matrix drawn": [], "a cell opened": []}
    try:
        for _ in range(loads):
            browser.get("about:blank")
            browser.get((run / "index.html").as_uri())
            while not browser.execute_script(LOADED):
                time.sleep(0.01)
            found["load event"].append(browser.execute_script(LOADED))
            ready = browser.execute_script("return document.body.dataset.loaded")
            found["matrix drawn"].append(float(ready) if ready and ready != "1" else float("nan"))
            if screenshot is not None:
                browser.save_screenshot(str(screenshot))
                screenshot = None
            cell = browser.execute_script(
                "for (const r of DATA.matrix.rows) for (const [c, cell] of Object.entries(r.cells)) "
                "if (cell.verdict !== 'pass') return r.id + '.' + c"
            )
            if cell:
                found["a cell opened"].append(browser.execute_async_script(OPEN_CELL, cell))
    finally:
        browser.quit()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--screenshot", type=Path, help="write the first screen here (PNG)")
    args = parser.parse_args()
    for part, count in weights(args.run).items():
        print(f"{part:>14}: {count / 1e6:7.2f} MB")
    for what, times in load_times(args.run, args.loads, args.screenshot).items():
        shown = [t for t in times if t == t]
        if shown:
            print(f"{what:>14}: median {statistics.median(shown):.0f} ms, {min(shown):.0f}-{max(shown):.0f} ms")


if __name__ == "__main__":
    main()
