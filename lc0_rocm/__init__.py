"""lc0-rocm: Leela Chess Zero networks on AMD GPUs through ROCm/HIP, a numpy reference, and a UCI engine.

Data flows one way: file (`net.loader`) → immutable net description (`net.description`) →
backend (`backends`) → search (`search`) → UCI (`uci`).

The public Python API (`lc0_rocm.api`) is exported here: `load_net`, `open_backend`, `Evaluator`,
`Evaluation`. They are imported on first use, so `import lc0_rocm` stays light (no numpy, no HIP):
the UCI engine must answer `uciok` at once.
"""

from .version import __version__

_API = ("load_net", "open_backend", "Evaluator", "Evaluation")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))
