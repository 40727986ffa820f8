"""The bytes of an Lc0 weights file (gzip or plain protobuf, as lc0's gzread accepts both), read under
size caps before anything is decoded, so that a hostile or broken file fails with one line and
never exhausts memory or hangs: `read_net_bytes` (net/loader.py parses what it returns).
"""

from __future__ import annotations

import io
import zlib
from pathlib import Path

from ..errors import NetFormatError

# Size caps (see read_net_bytes). The largest real Lc0 nets (BT4-class, ~190M parameters) are
# ~0.2-0.4 GB of protobuf (LINEAR16 or FLOAT16; ~0.8 GB even as FLOAT32), and protobuf itself cannot
# parse a message over 2 GiB, so 2 GiB is never hit by a real net. Weights are high-entropy: real
# nets compress ~1.0-1.4x (the committed nets 1.02x, maia 1.4x), so a stream that expands more
# than 64x once past 64 MiB is a bomb, not a net; below 64 MiB the ratio is not checked (a small
# test net of constant layers may compress very well and costs nothing to read).
MAX_NET_BYTES = 2 << 30
MAX_COMPRESSION_RATIO = 64
RATIO_CHECK_FLOOR = 64 << 20
_IN_CHUNK = 1 << 20  # uncompressed input: noise or /dev/zero is refused after its first MiB
# gzip input is read and inflated 16 MiB at a time: a T82-size file (184 MB) inflated 1 MiB at a time
# took ~15 % longer (more calls, each growing its output buffer from 32 KiB; measured, docs/perf.md);
# 64 MiB was slower again (buffers past glibc's mmap threshold are fresh pages every time)
_GZIP_IN_CHUNK = 16 << 20
_OUT_CHUNK = 16 << 20


class _Input:
    """The bytes of a weights file read in chunks, never more than `max_bytes` in all (a device such
    as /dev/zero or a FIFO has no size to check first): NetFormatError past it."""

    def __init__(self, source, name: str, max_bytes: int, first: bytes = b"", chunk: int = _IN_CHUNK):
        self.source, self.name, self.max_bytes = source, name, max_bytes
        self.first, self.chunk = first, chunk
        self.read_total = len(first)

    def read(self) -> bytes:
        if self.first:
            chunk, self.first = self.first, b""
            return chunk
        chunk = self.source.read(self.chunk)
        self.read_total += len(chunk)
        if self.read_total > self.max_bytes:
            raise NetFormatError(f"{self.name}: more than {self.max_bytes >> 20} MiB to read, over the limit for a "
                                 "network (a device or an endless stream, not a weights file)")
        return chunk


def _gunzip(data, name: str, max_bytes: int = MAX_NET_BYTES, max_ratio: float = MAX_COMPRESSION_RATIO,
            ratio_floor: int = RATIO_CHECK_FLOOR) -> bytes:
    """Decompress a gzip stream (bytes, or an `_Input` read as it goes; several members allowed, as
    gzread does) incrementally, stopping as soon as the output passes `max_bytes`, or passes
    `ratio_floor` while being more than `max_ratio` times the compressed bytes consumed so far: a
    bomb is rejected without allocating its payload, an endless stream once `max_bytes` are read."""
    src = data if isinstance(data, _Input) else _Input(io.BytesIO(data), name, max(max_bytes, len(data)),
                                                       chunk=_GZIP_IN_CHUNK)
    parts: list[bytes] = []
    total = 0
    pending = b""
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            if not pending:
                pending = src.read()
                if not pending:
                    break
            try:
                out = d.decompress(pending, _OUT_CHUNK)
            except zlib.error as e:
                raise NetFormatError(f"{name}: corrupt gzip stream ({e})") from None
            pending = d.unconsumed_tail
            total += len(out)
            consumed = src.read_total - len(pending)
            if total > max_bytes:
                raise NetFormatError(f"{name}: decompressed size exceeds {max_bytes >> 20} MiB "
                                     "(not an Lc0 network: compressed bomb or corrupt file)")
            if total > ratio_floor and total > max_ratio * consumed:
                raise NetFormatError(f"{name}: gzip stream expands more than {max_ratio:g}x "
                                     f"({consumed} bytes -> {total}+ bytes; compressed bomb, not an Lc0 network)")
            if out:
                parts.append(out)
            if d.eof:
                break
        if not d.eof:
            raise NetFormatError(f"{name}: truncated gzip stream")
        rest = d.unused_data
        while len(rest) < 2:
            more = src.read()
            if not more:
                break
            rest += more
        if rest[:2] == b"\x1f\x8b":  # another gzip member
            pending = rest
            continue
        while rest:  # what follows the gzip data may only be zeros (padding)
            if rest.strip(b"\0"):
                raise NetFormatError(f"{name}: corrupt gzip stream (trailing garbage after the gzip data)")
            rest = src.read()
        return b"".join(parts)


def _check_top_level_fields(data, start: int, name: str, max_bytes: int) -> int:
    """Walk the top-level fields of protobuf bytes `data` from offset `start` as far as they are
    there; the offset of the first field not complete yet. NetFormatError as soon as the bytes
    cannot be a protobuf message (field number 0, a wire type without fields in `pblczero.Net`) or a
    field would end past `max_bytes`: a stream of zeros or of noise stops in its first chunk."""
    n = len(data)
    pos = start
    while True:
        field_start = pos
        tag, pos = _varint(data, pos, name)
        if tag is None:
            return field_start
        wire = tag & 7
        if tag >> 3 == 0 or wire not in (0, 1, 2, 5):
            raise NetFormatError(f"{name}: not an Lc0 network (no protobuf field at byte {field_start})")
        if wire == 0:
            value, pos = _varint(data, pos, name)
            if value is None:
                return field_start
            continue
        if wire == 2:
            length, pos = _varint(data, pos, name)
            if length is None:
                return field_start
        else:
            length = 8 if wire == 1 else 4
        end = pos + length
        if end > max_bytes:
            raise NetFormatError(f"{name}: not an Lc0 network (a protobuf field of {length} bytes at byte "
                                 f"{field_start} would end past the {max_bytes >> 20} MiB limit)")
        if end > n:
            return field_start
        pos = end


def _varint(data, pos: int, name: str):
    """(value, next offset) of the protobuf varint at `pos`; (None, pos) when `data` ends first.
    NetFormatError for one longer than ten bytes."""
    value = shift = 0
    for k in range(pos, min(len(data), pos + 10)):
        b = data[k]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, k + 1
        shift += 7
    if len(data) >= pos + 10:
        raise NetFormatError(f"{name}: not an Lc0 network (a protobuf varint at byte {pos} is over ten bytes)")
    return None, pos


def read_net_bytes(path, max_bytes: int = MAX_NET_BYTES) -> bytes | bytearray:
    """The decompressed protobuf bytes of a weights file (gzip or uncompressed).

    Size caps before anything is decoded: the file itself and the decompressed stream are limited to
    `max_bytes` (2 GiB: protobuf cannot parse more, and the largest real nets are ~0.2-0.8 GB), and a
    gzip stream may expand at most `MAX_COMPRESSION_RATIO` (64x) once past `RATIO_CHECK_FLOOR`
    (64 MiB) - real weights compress ~1.0-1.4x (BT4-shape 1.0x, maia 1.4x). Decompression is
    streamed, so a 3 MB file holding 1 GiB of zeros stops after ~150 MB of output (64x what was read)
    in ~0.2 s and ~200 MB RSS, instead of inflating the GiB. A file without a size (a device, a
    FIFO) is read in chunks up to the same limit, and uncompressed bytes are refused as soon as
    their top-level protobuf fields cannot be a message (/dev/zero: at its first byte).
    """
    path = Path(path)
    name = path.name
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # let open raise the usual error
    if size > max_bytes:
        raise NetFormatError(f"{name}: file of {size} bytes exceeds the {max_bytes >> 20} MiB limit for a network")
    with open(path, "rb") as f:
        src = _Input(f, name, max_bytes)
        first = src.read()
        if not first:
            raise NetFormatError(f"{name}: empty file")
        if first[:2] == b"\x1f\x8b":
            data = _gunzip(_Input(f, name, max_bytes, first, _GZIP_IN_CHUNK), name, max_bytes)
        elif first[:2] in (b"1\n", b"2\n"):
            raise NetFormatError(f"{name}: old text weights format is not supported")
        else:
            buf = bytearray(first)
            checked = _check_top_level_fields(buf, 0, name, max_bytes)
            while True:
                chunk = src.read()
                if not chunk:
                    break
                buf += chunk
                checked = _check_top_level_fields(buf, checked, name, max_bytes)
            data = buf  # parsed as it is: a bytes copy would hold the net twice
    if len(data) < 2:
        raise NetFormatError(f"{name}: not an Lc0 network (file too small)")
    if data[:2] in (b"1\n", b"2\n"):
        raise NetFormatError(f"{name}: old text weights format is not supported")
    return data
