"""Independent float64 host implementations of documented op semantics."""
