"""Decoding and encoding of one `Weights.Layer` tensor: LINEAR16, FLOAT16, BFLOAT16, FLOAT32.

LINEAR16 (the only encoding lc0 v0.32.1 reads) stores little-endian uint16 `u` with the layer's
`min_val`/`max_val`: value = (u / 65535) * (max - min) + min. FLOAT16 is IEEE binary16, BFLOAT16 the
top half of an IEEE float32, FLOAT32 plain little-endian float32 (master's per-layer `encoding`).
A layer without `encoding` is LINEAR16. An unset layer decodes to an empty array.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..errors import NetFormatError

UNKNOWN_ENCODING, LINEAR16, FLOAT16, BFLOAT16, FLOAT32 = 0, 1, 2, 3, 4
ENCODINGS = {"LINEAR16": LINEAR16, "FLOAT16": FLOAT16, "BFLOAT16": BFLOAT16, "FLOAT32": FLOAT32}
ENCODING_NAMES = {v: k for k, v in ENCODINGS.items()}
_BYTES = {LINEAR16: 2, FLOAT16: 2, BFLOAT16: 2, FLOAT32: 4}
_ENCODING_FIELD = 4  # Weights.Layer.encoding


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


def _unknown_encoding(layer) -> Optional[int]:
    """An `encoding` value the schema's (closed) enum does not know, which protobuf keeps aside as an
    unknown field instead of setting `encoding`; None when there is none."""
    try:
        from google.protobuf.unknown_fields import UnknownFieldSet
        for f in UnknownFieldSet(layer):
            if f.field_number == _ENCODING_FIELD:
                return int(f.data) if isinstance(f.data, int) else -1
    except (ImportError, TypeError, ValueError):  # pragma: no cover - older protobuf runtimes
        pass
    return None


def layer_encoding(layer, name: str = "layer") -> int:
    """The layer's encoding number (LINEAR16 when unset); an unknown value is a `NetFormatError`."""
    if layer.HasField("encoding"):
        enc = layer.encoding
    else:
        bad = _unknown_encoding(layer)
        if bad is not None:
            raise NetFormatError(f"{name}: unknown layer encoding {bad}")
        enc = LINEAR16
    if enc == UNKNOWN_ENCODING:
        enc = LINEAR16
    if enc not in _BYTES:
        raise NetFormatError(f"{name}: unknown layer encoding {enc}")
    return enc


def _count(layer, enc: int, name: str) -> int:
    width = _BYTES[enc]
    n = len(layer.params)
    if n % width:
        raise NetFormatError(f"{name}: {n} bytes is not a whole number of {width}-byte values")
    return n // width


def layer_size(layer, name: str = "layer") -> int:
    """How many values the layer holds, from its byte length alone (nothing is decoded)."""
    return _count(layer, layer_encoding(layer, name), name)


def decode_layer(layer, name: str = "layer") -> np.ndarray:
    """The layer's values as a flat, read-only float32 array (empty when the layer is absent).

    Proves the layer usable: a known encoding, for LINEAR16 a finite `min_val <= max_val`, and every
    decoded value finite; anything else is one `NetFormatError` naming the layer (no numpy warning).
    """
    enc = layer_encoding(layer, name)
    _count(layer, enc, name)
    raw = layer.params
    with np.errstate(all="ignore"):
        if enc == LINEAR16:
            lo_f, hi_f = layer.min_val, layer.max_val
            if raw and not (math.isfinite(lo_f) and math.isfinite(hi_f)):
                raise NetFormatError(f"{name}: min_val/max_val must be finite (min_val {lo_f!r}, max_val {hi_f!r})")
            if raw and lo_f > hi_f:
                raise NetFormatError(f"{name}: min_val {lo_f!r} is greater than max_val {hi_f!r}")
            u = np.frombuffer(raw, dtype="<u2")
            lo = np.float32(lo_f)
            span = np.float32(hi_f) - lo
            if not np.isfinite(span):
                raise NetFormatError(f"{name}: max_val - min_val ({hi_f!r} - {lo_f!r}) overflows float32")
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
        finite = np.isfinite(out)
        if not finite.all():
            i = int(np.argmin(finite))
            raise NetFormatError(f"{name}: {int(out.size - np.count_nonzero(finite))} of {out.size} values are "
                                 f"not finite (value {i} is {float(out[i])!r}; {ENCODING_NAMES[enc]} encoding)")
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
