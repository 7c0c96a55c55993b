"""The stock suite: the repo's cases/, shipped in a wheel as conformance/suite/cases/ (setup.py); stock.py finds
it and builds the pytest arguments that run it, alone or beside a user's own case folders."""
