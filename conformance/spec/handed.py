"""The environment variables through which the plugin hands a run's choices to what it cannot pass arguments to:
the case modules it collects and the worker processes they are loaded again in (which inherit the environment)."""

SWEEP_ENV = "CONFORMANCE_SWEEP"  # --sweep's modules, for the sweep's case module (cases/test_sweep.py)
