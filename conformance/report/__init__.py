"""The HTML diff report: `build_report(run_dir)` writes run_dir/index.html; `merge` combines runs."""
from conformance.report.build import build_report

__all__ = ["build_report"]
