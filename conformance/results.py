"""The run's result store (format 2; docs/results.md).

Layout of `reports/<run>/`:
  outcomes/<worker>.jsonl     the journal: one JSON line per item event (start, end with its tally,
                              item-level verdicts, worst cases, operations); one file per process
  examples/<worker>.parquet   one row per check outcome of every counted example (an Arrow stream,
                              `.arrows`, while the process runs or if it was killed)
  environment/<worker>.json   what that process ran on
  artifacts/<name>.npz        arrays of failing examples only
  summary.json                written by the controller from the journals

The work is done in `conformance.store` (one job per module); this module keeps the names the
rest of the project imports.
"""
from __future__ import annotations

from conformance.store.aggregate import (COUNTED_PHASES, SUMMARY_SCHEMA, VERDICT_ORDER, Summarizer, Tally, summarize,
                                         write_summary)
from conformance.store.cases import SavedCasesError, saved_cases
from conformance.store.examples import StoreError
from conformance.store.reader import RunRecords, load_environment, read_outcomes, was_complete
from conformance.store.table import format_matrix, format_modules, format_table
from conformance.store.writer import Store, json_safe, safe_name, write_atomically

__all__ = ["COUNTED_PHASES", "SUMMARY_SCHEMA", "VERDICT_ORDER", "RunRecords", "SavedCasesError", "Store",
           "StoreError", "Summarizer", "Tally", "format_matrix", "format_modules", "format_table",
           "json_safe", "load_environment", "read_outcomes", "safe_name", "saved_cases", "summarize", "was_complete",
           "write_atomically", "write_summary"]
