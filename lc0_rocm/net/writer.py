"""Writes `pblczero.Net` messages to weights files (`.pb.gz`, or plain protobuf for a `.pb` name).

`write_net(net, path, encoding=None)`: `net` is a `pblczero.Net`, serialized protobuf bytes, or a
shape name / `NetShape` handed to `make_net`. With `encoding` set, every layer stored in another
encoding is re-encoded (decoded to float32 and encoded again), so a net can be converted between
LINEAR16, FLOAT16, BFLOAT16 and FLOAT32.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from . import schema
from .codec import LINEAR16, decode_layer, encoding_number, fill_layer

_LAYER = "pblczero.Weights.Layer"


def _is_repeated(fd) -> bool:
    flag = getattr(fd, "is_repeated", None)  # protobuf >= 6; older versions only have `label`
    return bool(flag) if flag is not None else fd.label == 3


def iter_layers(msg, path: str = ""):
    """Yield (dotted path, Layer message) for every set Layer inside `msg`, in field order."""
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        repeated = _is_repeated(fd)
        items = value if repeated else [value]
        for i, item in enumerate(items):
            p = f"{path}.{fd.name}" if path else fd.name
            if repeated:
                p = f"{p}[{i}]"
            if fd.message_type.full_name == _LAYER:
                yield p, item
            else:
                yield from iter_layers(item, p)


def reencode(net, encoding) -> None:
    """Re-encode, in place, every layer of `net` whose encoding differs from `encoding`."""
    enc = encoding_number(encoding)
    for path, layer in iter_layers(net):
        cur = layer.encoding if layer.HasField("encoding") else LINEAR16
        if cur == enc or not layer.params:
            continue
        values = decode_layer(layer, path)
        layer.Clear()
        fill_layer(layer, values, enc)
    if enc != LINEAR16:
        mv = net.min_version
        if (mv.major, mv.minor, mv.patch) < (0, 33, 0):
            mv.major, mv.minor, mv.patch = 0, 33, 0  # lc0 before 0.33 would misread these layers


def write_net(net, path, encoding=None, compress=None, level=None, seed: int = 0) -> Path:
    """Write a net to `path`; returns the path. See the module docstring for the arguments.

    compress: None = gzip unless the name ends in ".pb"; level: gzip level (None = 9 for small
    nets, 1 above 32 MB so that BT4-sized nets write quickly).
    """
    path = Path(path)
    if isinstance(net, (bytes, bytearray)):
        if encoding is not None:
            msg = schema.Net()
            msg.ParseFromString(bytes(net))
            net = msg
        else:
            data = bytes(net)
    if not isinstance(net, (bytes, bytearray)):
        if not isinstance(net, schema.Net):
            from .make_net import make_net

            net = make_net(net, seed=seed, **({"encoding": encoding} if encoding is not None else {}))
        elif encoding is not None:
            reencode(net, encoding)
        data = net.SerializeToString()
    if compress is None:
        compress = path.suffix != ".pb"
    if compress:
        if level is None:
            level = 9 if len(data) < 32 << 20 else 1
        data = gzip.compress(data, compresslevel=level, mtime=0)
    path.write_bytes(data)
    return path
