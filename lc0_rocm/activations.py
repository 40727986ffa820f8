"""Numpy activation functions, looked up by the names used in the net description.

Formulas follow lc0 (`src/neural/backends/shared/activation.cc: Activate`): relu max(x, 0); relu2 x² for x > 0 else 0; mish x·tanh(softplus x)
(computed as x·n/(n+2) with n = eˣ(eˣ+2), exactly lc0's form); swish x·sigmoid(x); selu with lc0's
constants; tanh; sigmoid; none = identity. Every function keeps the input dtype (float32 or float64)
and never warns on overflow.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

SELU_SCALE = 1.05070098
SELU_ALPHA = 1.67326324
# Above this, mish(x) == x to the last bit in float64 (n/(n+2) == 1); also keeps exp() finite.
_MISH_CLIP = 20.0


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def relu2(x: np.ndarray) -> np.ndarray:
    r = np.maximum(x, 0)
    return np.multiply(r, r, out=r)


def mish(x: np.ndarray) -> np.ndarray:
    e = np.exp(np.minimum(x, _MISH_CLIP))
    n = e * (e + 2)  # eˣ(eˣ+2) = (1+eˣ)² − 1, so n/(n+2) = tanh(softplus x)
    d = n + 2
    np.divide(n, d, out=n)
    return np.multiply(x, n, out=n)


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        e = np.exp(-x)  # may be inf for very negative x: 1/(1+inf) = 0, the right limit
    e += 1
    return np.reciprocal(e, out=e)


def swish(x: np.ndarray) -> np.ndarray:
    s = sigmoid(x)
    return np.multiply(x, s, out=s)


def selu(x: np.ndarray) -> np.ndarray:
    neg = np.expm1(np.minimum(x, 0)) * x.dtype.type(SELU_ALPHA)
    return np.where(x > 0, x, neg) * x.dtype.type(SELU_SCALE)


def tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x)


def none(x: np.ndarray) -> np.ndarray:
    return x


ACTIVATION_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": relu,
    "relu2": relu2,
    "mish": mish,
    "swish": swish,
    "selu": selu,
    "tanh": tanh,
    "sigmoid": sigmoid,
    "none": none,
}


def activation(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The function for an activation name of the net description; ValueError for an unknown name."""
    try:
        return ACTIVATION_FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r} (known: {', '.join(ACTIVATION_FUNCTIONS)})") from None


def apply(name: str, x: np.ndarray) -> np.ndarray:
    """Apply the named activation to x (may reuse x's memory for in-place friendly functions)."""
    return activation(name)(x)
