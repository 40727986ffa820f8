"""Decoding and encoding of one `Weights.Layer` tensor: LINEAR16, FLOAT16, BFLOAT16, FLOAT32.

LINEAR16 (the only encoding lc0 v0.32.1 reads) stores little-endian uint16 `u` with the layer's
`min_val`/`max_val`: value = (u / 65535) * (max - min) + min. FLOAT16 is IEEE binary16, BFLOAT16 the
top half of an IEEE float32, FLOAT32 plain little-endian float32 (master's per-layer `encoding`).
A layer without `encoding` is LINEAR16. An unset layer decodes to an empty array.
"""

from __future__ import annotations

import numpy as np

from ..errors import NetFormatError

UNKNOWN_ENCODING, LINEAR16, FLOAT16, BFLOAT16, FLOAT32 = 0, 1, 2, 3, 4
ENCODINGS = {"LINEAR16": LINEAR16, "FLOAT16": FLOAT16, "BFLOAT16": BFLOAT16, "FLOAT32": FLOAT32}
_BYTES = {LINEAR16: 2, FLOAT16: 2, BFLOAT16: 2, FLOAT32: 4}


def encoding_number(encoding) -> int:
    """Accept an encoding as a name ("FLOAT16", case-insensitive) or an enum number."""
    if isinstance(encoding, str):
        try:
            return ENCODINGS[encoding.upper()]
        except KeyError:
            raise NetFormatError(
                f"unknown layer encoding '{encoding}' (choose from {', '.join(ENCODINGS)})") from None
    if int(encoding) not in _BYTES:
        raise NetFormatError(f"unknown layer encoding {encoding}")
    return int(encoding)


def decode_layer(layer, name: str = "layer") -> np.ndarray:
    """The layer's values as a flat, read-only float32 array (empty when the layer is absent)."""
    enc = layer.encoding if layer.HasField("encoding") else LINEAR16
    if enc == UNKNOWN_ENCODING:
        enc = LINEAR16
    if enc not in _BYTES:
        raise NetFormatError(f"{name}: unknown layer encoding {enc}")
    raw = layer.params
    width = _BYTES[enc]
    if len(raw) % width:
        raise NetFormatError(f"{name}: {len(raw)} bytes is not a whole number of {width}-byte values")
    if enc == LINEAR16:
        u = np.frombuffer(raw, dtype="<u2")
        lo = np.float32(layer.min_val)
        span = np.float32(layer.max_val) - lo
        out = u.astype(np.float32)
        out /= np.float32(65535.0)
        out *= span
        out += lo
    elif enc == FLOAT16:
        out = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif enc == BFLOAT16:
        out = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        out = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    out.setflags(write=False)
    return out


def encode_values(values, encoding="LINEAR16") -> tuple[bytes, float, float]:
    """Encode float values (any shape, flattened row-major): returns (params bytes, min_val, max_val).

    min_val/max_val are meaningful for LINEAR16 only (0.0 otherwise).
    """
    enc = encoding_number(encoding)
    x = np.asarray(values)
    # float32 input is encoded in float32 arithmetic (fast for big random nets); anything else in float64
    x = np.ascontiguousarray(x, dtype=np.float32 if x.dtype == np.float32 else np.float64).ravel()
    if x.size and not np.all(np.isfinite(x)):
        raise NetFormatError("cannot encode non-finite values")
    if enc == LINEAR16:
        if x.size == 0:
            return b"", 0.0, 0.0
        lo, hi = float(np.float32(x.min())), float(np.float32(x.max()))
        if hi > lo:
            u = x - x.dtype.type(lo)
            u *= x.dtype.type(65535.0 / (hi - lo))
            np.rint(u, out=u)
            np.clip(u, 0, 65535, out=u)
        else:
            u = np.zeros_like(x)
        return u.astype("<u2").tobytes(), lo, hi
    if enc == FLOAT16:
        if x.size and np.abs(x).max() > 65504.0:
            raise NetFormatError("value out of FLOAT16 range")
        return x.astype("<f2").tobytes(), 0.0, 0.0
    if enc == BFLOAT16:
        bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return bits.astype("<u2").tobytes(), 0.0, 0.0
    return x.astype("<f4").tobytes(), 0.0, 0.0


def fill_layer(layer, values, encoding="LINEAR16", dims=None) -> None:
    """Write `values` into a `Weights.Layer` message with the given encoding.

    LINEAR16 layers get no `encoding` field (so lc0 v0.32.1 reads them); other encodings set it.
    `dims`, if given, is stored in the master-only `dims` field.
    """
    enc = encoding_number(encoding)
    params, lo, hi = encode_values(values, enc)
    layer.params = params
    if enc == LINEAR16:
        layer.min_val, layer.max_val = lo, hi
    else:
        layer.encoding = enc
    if dims is not None:
        layer.dims.extend(int(d) for d in dims)
