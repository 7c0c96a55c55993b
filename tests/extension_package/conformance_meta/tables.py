"""The package's plain data for conformance (read while conformance imports: this module imports nothing of it)."""

# the `conformance.libraries` entry point: a Library's fields; its version goes into each run's record
LIBRARY = {"package": "conformance-meta", "module": "conformance_meta", "under_test": False}

# the `conformance.sweep_arguments` entry point: the sweep builds torchvision's GaussianBlur with a larger kernel
SWEEP_ARGUMENTS = {"torchvision.transforms.v2.GaussianBlur": {"kernel_size": 5}}
