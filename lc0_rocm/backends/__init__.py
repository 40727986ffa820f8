"""Backends: one interface (`base.Backend`), implemented by the numpy reference (cpu) and the ROCm runtime."""
