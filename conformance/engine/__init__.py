"""The engine: the run's configuration, where cases come from, the per-case cache, judgement against
known issues, each item's ledger, the records of a case, ordering and xdist distribution, timings.
No pytest hook lives here (conformance.plugin is the glue); it imports checks, store, devices and spec."""
