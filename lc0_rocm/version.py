"""The package's version: the one module below every layer that holds it, so that the UCI `id name`
line and `lc0_rocm.__version__` read the same value without importing the package's `__init__`."""

__version__ = "0.1.0"
