"""The package list, which pyproject.toml cannot say: every conformance package, and the stock suite.

The repo's cases/ (the case modules and their known issues) ships as conformance/suite/cases/, so that an
installed package runs the same suite as a checkout (conformance.suite finds it either way).
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["conformance", "conformance.*"]), "conformance.suite.cases"],
    package_dir={"conformance.suite.cases": "cases"},
)
