"""The run's result store, one job per module.

writer: appends records as they happen (Store); reader: streams them back one at a time;
aggregate: the summary, built as records stream past, so memory follows the number of groups
and findings, not of passing examples; table: the terminal's view of a summary; cases:
`--cases-from`; prune: retention of old run folders.  `conformance.results` re-exports the
names the rest of the project has always imported from there.
"""
