"""Storage types of device arrays: the one table of their names, sizes, numpy types and HIP data types.

Activations and weights are stored as 'f16' or 'f32' (float accumulation everywhere); every launcher,
the GEMM wrapper and the network look the name up here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StorageType:
    name: str  # 'f16' or 'f32', the suffix of every kernel name (bias_act_mish_f16)
    itemsize: int  # bytes per element
    numpy: type  # the numpy scalar type of host copies
    hip: str  # the hipDataType member hipBLASLt is given


STORAGE_TYPES = {
    "f32": StorageType("f32", 4, np.float32, "HIP_R_32F"),
    "f16": StorageType("f16", 2, np.float16, "HIP_R_16F"),
}


def storage_type(name: str) -> StorageType:
    """The StorageType of 'f16' or 'f32'; ValueError for anything else."""
    try:
        return STORAGE_TYPES[name]
    except (KeyError, TypeError):
        raise ValueError(f"dtype must be one of {', '.join(map(repr, STORAGE_TYPES))}, got {name!r}") from None
