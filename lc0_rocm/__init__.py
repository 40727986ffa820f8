"""lc0-rocm: Leela Chess Zero networks on AMD GPUs through ROCm/HIP, a numpy reference, and a UCI engine.

Data flows one way: file (`net.loader`) → immutable net description (`net.description`) →
backend (`backends`) → search (`search`) → UCI (`uci`).
"""

__version__ = "0.1.0"
