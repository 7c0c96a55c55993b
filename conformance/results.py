"""The run's result store: outcome records appended as they happen.

Layout of `reports/<run>/` (schema in docs/results.md):
  outcomes/<worker>.jsonl     one JSON object per line, flushed per line; one file
                              per pytest-xdist worker ("main" without xdist)
  environment/<worker>.json   what that process ran on
  artifacts/<name>.npz        arrays of failing examples only
  summary.json                written by the controller from all outcome files
Nothing is lost on a crash: every line is complete on disk before the next
check runs, and a torn last line is skipped (and counted) when reading.

The work is done in `conformance.store` (one job per module); this module keeps the names the
rest of the project imports.
"""
from __future__ import annotations

from conformance.store.aggregate import (COUNTED_PHASES, SUMMARY_SCHEMA, VERDICT_ORDER, Summarizer, summarize,
                                         write_summary)
from conformance.store.cases import SavedCasesError, saved_cases
from conformance.store.reader import (RunRecords, attach_cases, expand, file_records, load_environment,
                                      read_outcomes, was_complete)
from conformance.store.table import format_matrix, format_modules, format_table
from conformance.store.writer import Store, check_entry, json_safe, safe_name, write_atomically

__all__ = ["COUNTED_PHASES", "SUMMARY_SCHEMA", "VERDICT_ORDER", "RunRecords", "SavedCasesError", "Store",
           "Summarizer", "attach_cases", "check_entry", "expand", "file_records", "format_matrix", "format_modules",
           "format_table", "json_safe", "load_environment", "read_outcomes", "safe_name", "saved_cases", "summarize",
           "was_complete", "write_atomically", "write_summary"]
