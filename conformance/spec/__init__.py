"""The declarative API case modules use: recipes and strategies, tolerances, OpSpec and ModuleOp,
operations across libraries, the library records, known issues and tolerance overrides as data,
the imported versions and the test-id format.  The lowest layer: it imports nothing else of the
harness (docs/architecture.md).  Case modules import the public names from `conformance`."""
