"""The run's result store (format 2; docs/results.md), one job per module: `writer` appends records
as they happen, `reader` streams the journal back, `examples` is the Parquet table of check outcomes,
`aggregate` the summary built from the items' tallies, `records` the one builder of every record kind,
`cases` reads `--cases-from`, `outputs` and `drift` are recorded outputs and what changed between two
builds, `prune` the retention of run folders.  Imports only `conformance.spec` and
`conformance.devices` below it.

Layout of `reports/<run>/`:
  outcomes/<worker>.jsonl     the journal: one JSON line per item event (start, end with its tally,
                              item-level verdicts, worst cases, operations); one file per process
  examples/<worker>.parquet   one row per check outcome of every counted example (an Arrow stream,
                              `.arrows`, while the process runs or if it was killed)
  environment/<worker>.json   what that process ran on
  artifacts/<name>.npz        arrays of failing examples only
  summary.json                written by the controller from the journals
"""
