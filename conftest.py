"""Registers the conformance plugin when pytest runs from a source checkout.

When the package is installed, its pytest11 entry point (named like the
module) has already loaded the plugin and this line is a no-op.
"""
pytest_plugins = ["conformance.plugin"]
