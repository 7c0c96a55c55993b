"""The pictures of one finding in the report, from its arrays in the run's artifacts/ folder: the panels
(input, reference, outputs), the amplified difference heatmap, crops around the worst pixel and a histogram
of differences.  An artifact path is honoured only inside the run folder (a store is data, and may come from
elsewhere)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from conformance.report import pictures
from conformance.spec.recipes import peak


def detail_figures(record: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """Panels, heatmap, crops and histogram for one detail; {} when its arrays were not kept."""
    path = artifact_path(run_dir, record.get("artifact"))
    if path is None:
        return (
            {"damaged": f"{record['artifact']} is not a file of this run's artifacts/ folder"}
            if record.get("artifact")
            else {}
        )
    try:
        with np.load(path, allow_pickle=False) as stored:
            arrays = {name: stored[name].astype(np.float64) for name in stored.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # a truncated or foreign file: no pictures
        return {"damaged": f"{record['artifact']} could not be read"}
    white = peak(record["dtype"])
    panels: list[dict[str, Any]] = []
    for name, label in (
        ("input", "input"),
        ("reference", "reference"),
        ("baseline", "baseline output"),
        ("cpu", "cpu output"),
        ("output", f"{record['target']} output"),
        ("cpu_gradient", "cpu gradient"),
        ("gradient", f"{record['target']} gradient"),
    ):
        if name in arrays and arrays[name].ndim >= 2:
            values = _spread(arrays[name], white) if name.endswith("gradient") else arrays[name]
            picture = pictures.to_picture(values, white)
            panels.append({"label": label, "image": pictures.embed(picture), "picture": picture})
    found: dict[str, Any] = {"panels": panels}
    against = record.get("against") if record.get("against") in ("cpu", "baseline") else "reference"
    mine = "output"
    if record.get("check") == "gradient_device":  # the gradients differ, not the outputs
        mine, against = "gradient", "cpu_gradient"
    if mine in arrays and against in arrays and arrays[mine].shape == arrays[against].shape:
        diff = pictures.difference(arrays[mine], arrays[against])
        finite = diff[np.isfinite(diff)]
        top = float(finite.max()) if finite.size else 0.0
        tolerance = (record.get("tolerance") or {}).get("atol")
        found["against"] = against
        found["heatmap"] = pictures.embed(pictures.heatmap(diff, top))
        found["scale"] = pictures.scale_label(top, "levels" if white > 1 else "")
        found["histogram"] = pictures.embed(pictures.histogram(diff, tolerance), side=None)
        if max(diff.shape) > 2 * pictures.CROP_RADIUS + 1:
            row, col = np.unravel_index(int(np.argmax(np.where(np.isfinite(diff), diff, np.inf))), diff.shape)
            found["crops"] = [
                {
                    "label": panel["label"],
                    "image": pictures.embed(pictures.crop_around(panel["picture"], int(row), int(col)), side=136),
                }
                for i, panel in enumerate(panels)
                if panel["picture"].size == (diff.shape[1], diff.shape[0])
            ]
            found["crop_at"] = [int(row), int(col)]
    for panel in panels:
        del panel["picture"]
    return found


def _spread(values: np.ndarray, peak: float) -> np.ndarray:
    """A gradient (any sign, any scale) stretched over the picture's range, zero at mid-grey."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    return (np.nan_to_num(values) / (2 * top) + 0.5) * peak if top > 0 else np.full_like(values, peak / 2)


def artifact_path(run_dir: Path, artifact: Any) -> Path | None:
    """The artifact's file if it is a plain file inside the run's artifacts/ folder (never a path
    that leaves the run, an absolute path or a symlink: a store is data, and may come from elsewhere)."""
    if not isinstance(artifact, str) or not artifact.startswith("artifacts/") or "\\" in artifact:
        return None
    parts = Path(artifact).parts  # artifacts/<file>, or artifacts/<machine>/<file> in a merged run
    if not 2 <= len(parts) <= 3 or any(part in ("..", ".") for part in parts) or Path(artifact).is_absolute():
        return None
    steps = [run_dir.joinpath(*parts[:n]) for n in range(1, len(parts) + 1)]
    if any(step.is_symlink() for step in steps) or not steps[-1].is_file():
        return None
    return steps[-1]
