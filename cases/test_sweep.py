"""The device sweep: every transform class of the modules named by `--sweep` (e.g. `--sweep default` for
kornia.augmentation, torchvision.transforms.v2 and kornia's color, enhance, filters and geometry.transform
modules, or `--sweep mypackage.transforms`), with the
reference-free checks only (conformance/spec/sweep.py).  Without --sweep this module defines no tests."""

import os

from conformance.spec import sweep
from conformance.spec.handed import SWEEP_ENV

# which sweep_* ops exist depends on --sweep: known-issue entries about them are not held to this run's ops
CONFORMANCE_OPTIONAL_OPS = ("sweep_*",)
globals().update(sweep.tests(sweep.parse(os.environ.get(SWEEP_ENV, ""))))
