"""Fuzzing kept in the suite: the net loader and the UCI parser under hypothesis (any input, one clean line).

Outcome classes for a mutated net: one clean `NetFormatError` with a one-line message, or a
`NetDescription` whose start-position evaluation is finite; any other exception, any escaping
warning, or more than `HANG_S` seconds for one example fails. For the UCI engine: `run()` returns 0,
every output line is a UCI line, and every `go` gets exactly one `bestmove`: for streams of noise
without a net, and for whole sessions on a small net (section "UCI sessions on a net": option noise,
go/stop/position/ponderhit interleavings, tree reuse, degenerate limits, checked against a
python-chess model of the position), plus the recorded session in ../shared/repro.

Budgets (hypothesis settings profiles registered below):
- default (CI): `fuzz-ci`, a few dozen examples per test, `derandomize=True` (the same examples on
  every run), no example database; the whole file runs in well under a minute on 2 cores;
- `LC0_ROCM_FUZZ=long`: `fuzz-long`, 2000 random examples per test (`LC0_ROCM_FUZZ_EXAMPLES=N`
  overrides the count), e.g. `LC0_ROCM_FUZZ=long timeout 600 pytest tests/test_fuzz.py -x`.
A failure prints the shrunk example and a `@reproduce_failure` blob.
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import random
import signal
import subprocess
import sys
import time
import warnings
import zlib
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lc0_rocm.errors import NetFormatError  # noqa: E402
from lc0_rocm.net import schema  # noqa: E402
from lc0_rocm.net.description import NetDescription  # noqa: E402
from lc0_rocm.api import load_net  # noqa: E402  (with the start-position proof)
from lc0_rocm.net.make_net import make_net  # noqa: E402
from lc0_rocm.net.writer import iter_layers  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HANG_S = 5.0  # one example (load, or one UCI stream) longer than this is a hang

# ------------------------------------------------------------------------------------ profiles

_COMMON = dict(deadline=None, print_blob=True, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much, HealthCheck.large_base_example])
settings.register_profile("fuzz-ci", max_examples=40, derandomize=True, **_COMMON)
settings.register_profile("fuzz-long", max_examples=int(os.environ.get("LC0_ROCM_FUZZ_EXAMPLES", "2000")),
                          derandomize=False, **_COMMON)
LONG = os.environ.get("LC0_ROCM_FUZZ", "").lower() == "long"
FUZZ = settings.get_profile("fuzz-long" if LONG else "fuzz-ci")


def budget(ci_examples: int, long_cap: int | None = None) -> settings:
    """The active profile, with this test's own example count under the CI budget (and at most
    `long_cap` examples under the long one)."""
    if not LONG:
        return settings(FUZZ, max_examples=ci_examples)
    return FUZZ if long_cap is None else settings(FUZZ, max_examples=min(long_cap, FUZZ.max_examples))


class Hang(Exception):
    """Raised by SIGALRM inside an example that ran past HANG_S (not a class the loader catches)."""


class time_limit:
    def __init__(self, seconds: float, what: str):
        self.seconds, self.what = seconds, what

    def _fire(self, signum, frame):
        raise Hang(f"{self.what}: still running after {self.seconds:g} s")

    def __enter__(self):
        self.t0 = time.monotonic()
        self.old = signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.old)
        elapsed = time.monotonic() - self.t0
        if exc[0] is None and elapsed > self.seconds:
            raise Hang(f"{self.what}: took {elapsed:.1f} s (limit {self.seconds:g} s)")
        return False


# ------------------------------------------------------------------------------------ base nets

# small generated nets covering the three bodies: attention (smolgen, PE_DENSE, gating, MLH,
# multihead), SE conv tower with conv policy, hybrid conv+attention
BASE_SHAPES = {
    "tiny": dict(embedding=16, heads=2, dff=16, smolgen_hs=8, smolgen_g=8, emb_dff=16, preproc_d=4,
                 value_hidden=16, mlh_hidden=16, value_channels=8),
    "se": dict(filters=8, blocks=2, se_channels=4, value_hidden=16, mlh_hidden=16, value_channels=8,
               policy_channels=8),
    "hybrid": dict(filters=8, blocks=1, embedding=16, heads=2, dff=16, value_hidden=16, mlh_hidden=16,
                   value_channels=8),
}


@functools.lru_cache(maxsize=None)
def base_bytes(shape: str) -> bytes:
    """Serialized protobuf of a small random-weight net (loads cleanly)."""
    return make_net(shape, seed=1, **BASE_SHAPES[shape]).SerializeToString()


def base_net(shape: str):
    net = schema.Net()
    net.ParseFromString(base_bytes(shape))
    return net


@functools.lru_cache(maxsize=None)
def layer_paths(shape: str) -> tuple[str, ...]:
    return tuple(p for p, _ in iter_layers(base_net(shape)))


@functools.lru_cache(maxsize=None)
def header_offsets(shape: str) -> tuple[int, ...]:
    """Offsets in the serialized net where a layer's params start: the ~20 bytes before each hold its
    min_val/max_val floats, the params tag and its length varint (the places a flip matters most)."""
    data = base_bytes(shape)
    offs = []
    for _, layer in iter_layers(base_net(shape)):
        if len(layer.params) >= 16:
            i = data.find(layer.params[:64])
            if i > 0:
                offs.append(i)
    return tuple(sorted(set(offs)))


def get_layer(net, path: str):
    obj = net
    for part in path.split("."):
        if part.endswith("]"):
            name, idx = part[:-1].split("[")
            obj = getattr(obj, name)[int(idx)]
        else:
            obj = getattr(obj, part)
    return obj


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=1, mtime=0)


# ------------------------------------------------------------------------------------ the property

_EVAL_PLANES = {}


def _event(text: str) -> None:
    """hypothesis.event (shown by --hypothesis-show-statistics), a no-op outside a @given test."""
    try:
        event(text)
    except hypothesis.errors.InvalidArgument:
        pass


def assert_clean_outcome(path: Path) -> str:
    """Load `path`; return "error" or "ok", failing on anything outside the two outcome classes."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            with time_limit(HANG_S, f"load_net({path.name})"):
                desc = load_net(path)
        except NetFormatError as e:
            msg = str(e)
            assert msg.strip(), "NetFormatError with an empty message"
            assert len(msg.splitlines()) == 1 and "\n" not in msg and "\r" not in msg, \
                f"NetFormatError message is not one line: {msg!r}"
            assert "Traceback" not in msg
            _event("outcome: NetFormatError")
            return "error"
        assert isinstance(desc, NetDescription)
        # the loader already checked the start position; check it again independently
        import chess

        from lc0_rocm import reference
        from lc0_rocm.encoding.planes import encode_position

        key = desc.input_format
        if key not in _EVAL_PLANES:
            _EVAL_PLANES[key] = encode_position(chess.Board(), key)
        with np.errstate(all="ignore"):
            out = reference.forward(desc, _EVAL_PLANES[key])
        for k in ("policy", "wdl", "q", "d", "mlh"):
            v = getattr(out, k, None)
            if v is not None:
                assert np.all(np.isfinite(v)), f"accepted net evaluates to non-finite {k} on the start position"
        _event("outcome: loaded, finite")
        return "ok"


@pytest.fixture(scope="module")
def fuzzdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def write(fuzzdir: Path, data: bytes, compress: bool, name: str = "net") -> Path:
    p = fuzzdir / (f"{name}.pb.gz" if compress else f"{name}.pb")
    p.write_bytes(gz(data) if compress else data)
    return p


def test_base_nets_load(fuzzdir):
    for shape in BASE_SHAPES:
        assert assert_clean_outcome(write(fuzzdir, base_bytes(shape), True)) == "ok"


shapes = st.sampled_from(sorted(BASE_SHAPES))


# ------------------------------------------------------------------------------------ bytes level

@st.composite
def flips(draw, shape: str):
    """1-8 bit flips: anywhere, in the first/last 2 KB, or in the header bytes of a layer."""
    data = base_bytes(shape)
    n = len(data)
    heads = header_offsets(shape)
    out = []
    for _ in range(draw(st.integers(1, 8))):
        where = draw(st.sampled_from(["any", "start", "end", "layer"]))
        if where == "any":
            pos = draw(st.integers(0, n - 1))
        elif where == "start":
            pos = draw(st.integers(0, min(n, 2048) - 1))
        elif where == "end":
            pos = draw(st.integers(max(0, n - 2048), n - 1))
        else:
            pos = max(0, draw(st.sampled_from(heads)) - draw(st.integers(1, 20)))
        out.append((pos, draw(st.integers(0, 7))))
    return out


@budget(150)
@given(data=st.data(), shape=shapes, compress=st.booleans())
def test_fuzz_bit_flips(fuzzdir, data, shape, compress):
    buf = bytearray(base_bytes(shape))
    for pos, bit in data.draw(flips(shape), label="flips"):
        buf[pos] ^= 1 << bit
    assert_clean_outcome(write(fuzzdir, bytes(buf), compress))


@budget(80)
@given(shape=shapes, frac=st.floats(0, 1), where=st.sampled_from(["protobuf", "gzip", "gzip-then-garbage"]),
       junk=st.binary(max_size=64))
def test_fuzz_truncation(fuzzdir, shape, frac, where, junk):
    data = base_bytes(shape)
    if where == "protobuf":  # a truncated protobuf, stored compressed and whole
        blob = gz(data[:int(frac * len(data))])
    else:  # a truncated gzip stream (optionally with junk after the cut)
        z = gz(data)
        blob = z[:int(frac * len(z))] + (junk if where == "gzip-then-garbage" else b"")
    p = fuzzdir / "trunc.pb.gz"
    p.write_bytes(blob)
    assert_clean_outcome(p)


@budget(60)
@given(data=st.data(), shape=shapes)
def test_fuzz_gzip_header_and_trailer(fuzzdir, data, shape):
    """Flips in the gzip header/trailer (flags, CRC32, ISIZE: a declared-size lie), multi-member
    streams and trailing bytes."""
    z = bytearray(gz(base_bytes(shape)))
    kind = data.draw(st.sampled_from(["header", "trailer", "isize", "two-members", "trailing"]))
    if kind == "header":
        pos = data.draw(st.integers(0, 17))
        z[pos] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "trailer":
        pos = len(z) - data.draw(st.integers(1, 8))
        z[pos] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "isize":
        z[-4:] = data.draw(st.integers(0, 2**32 - 1)).to_bytes(4, "little")
    elif kind == "two-members":
        z += gz(data.draw(st.binary(max_size=256)))
    else:
        z += data.draw(st.binary(min_size=1, max_size=64))
    p = fuzzdir / "hdr.pb.gz"
    p.write_bytes(bytes(z))
    assert_clean_outcome(p)


# ------------------------------------------------------------------------------------ schema level

floats_any = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 3.4e38, -3.4e38, 2.0e38, 1e-45, 65504.0, 1e19]),
)


@st.composite
def layer_mutation(draw, shape: str):
    path = draw(st.sampled_from(layer_paths(shape)))
    kind = draw(st.sampled_from(["min_val", "max_val", "minmax", "swap", "encoding", "unknown-encoding",
                                 "params-random", "params-short", "params-long", "params-empty",
                                 "params-zeros", "params-ff", "dims"]))
    arg = None
    if kind in ("min_val", "max_val"):
        arg = draw(floats_any)
    elif kind == "minmax":
        arg = (draw(floats_any), draw(floats_any))
    elif kind == "encoding":
        arg = draw(st.integers(0, 4))
    elif kind == "unknown-encoding":
        arg = draw(st.one_of(st.integers(5, 2**31 - 1), st.integers(-2**31, -1)))
    elif kind == "params-random":
        arg = draw(st.binary(max_size=512))
    elif kind in ("params-short", "params-long"):
        arg = draw(st.integers(1, 4096))
    elif kind == "dims":
        arg = draw(st.lists(st.integers(0, 2**32 - 1), max_size=5))
    return path, kind, arg


def apply_layer_mutation(net, path: str, kind: str, arg) -> None:
    layer = get_layer(net, path)
    if kind == "min_val":
        layer.min_val = arg
    elif kind == "max_val":
        layer.max_val = arg
    elif kind == "minmax":
        layer.min_val, layer.max_val = arg
    elif kind == "swap":
        layer.min_val, layer.max_val = layer.max_val, layer.min_val
    elif kind == "encoding":
        layer.encoding = arg  # relabel the bytes (LINEAR16 as FLOAT16/BFLOAT16/FLOAT32, ...)
    elif kind == "unknown-encoding":
        layer.ClearField("encoding")
        layer.MergeFromString(b"\x20" + varint(arg))  # field 4 varint: kept aside as an unknown field
    elif kind == "params-random":
        layer.params = arg
    elif kind == "params-short":
        layer.params = layer.params[:max(0, len(layer.params) - arg)]
    elif kind == "params-long":
        layer.params = layer.params + bytes(random.Random(arg).getrandbits(8) for _ in range(arg))
    elif kind == "params-empty":
        layer.params = b""
    elif kind == "params-zeros":
        layer.params = bytes(len(layer.params))
    elif kind == "params-ff":
        layer.params = b"\xff" * len(layer.params)
    elif kind == "dims":
        del layer.dims[:]
        layer.dims.extend(arg)


@budget(150)
@given(data=st.data(), shape=shapes, compress=st.booleans())
def test_fuzz_layer_fields(fuzzdir, data, shape, compress):
    net = base_net(shape)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        path, kind, arg = data.draw(layer_mutation(shape), label="mutation")
        apply_layer_mutation(net, path, kind, arg)
    assert_clean_outcome(write(fuzzdir, net.SerializeToString(), compress))


def scalar_fields(msg, path=""):
    """(path, message, field descriptor) of every set scalar (non-Layer-params) field."""
    for fd, value in msg.ListFields():
        p = f"{path}.{fd.name}" if path else fd.name
        repeated = getattr(fd, "is_repeated", None)
        repeated = bool(repeated) if repeated is not None else fd.label == 3
        if fd.message_type is not None:
            if fd.message_type.full_name == "pblczero.Weights.Layer":
                continue
            for i, item in enumerate(value if repeated else [value]):
                yield from scalar_fields(item, f"{p}[{i}]" if repeated else p)
        elif not repeated and fd.type != fd.TYPE_BYTES and fd.type != fd.TYPE_STRING:
            yield p, msg, fd


@functools.lru_cache(maxsize=None)
def scalar_paths(shape: str) -> tuple[str, ...]:
    return tuple(p for p, _, _ in scalar_fields(base_net(shape)))


def field_value(draw, fd):
    if fd.type == fd.TYPE_ENUM:
        return draw(st.one_of(st.sampled_from([v.number for v in fd.enum_type.values]),
                              st.integers(-2**31, 2**31 - 1)))
    if fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        return draw(floats_any)
    if fd.type == fd.TYPE_BOOL:
        return draw(st.booleans())
    unsigned = fd.type in (fd.TYPE_UINT32, fd.TYPE_UINT64, fd.TYPE_FIXED32, fd.TYPE_FIXED64)
    bits = 64 if fd.type in (fd.TYPE_INT64, fd.TYPE_UINT64, fd.TYPE_SINT64, fd.TYPE_FIXED64,
                             fd.TYPE_SFIXED64) else 32
    lo, hi = (0, 2**bits - 1) if unsigned else (-2**(bits - 1), 2**(bits - 1) - 1)
    return draw(st.one_of(st.integers(0, 64), st.sampled_from([lo, hi, hi // 2 + 1]), st.integers(lo, hi)))


@budget(150)
@given(data=st.data(), shape=shapes)
def test_fuzz_format_and_scalar_fields(fuzzdir, data, shape):
    """Every set scalar field (magic, versions, format enums, headcounts, ...) set to a random value,
    including enum numbers the schema does not know (kept as unknown fields)."""
    net = base_net(shape)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        fields = {p: (m, fd) for p, m, fd in scalar_fields(net)}
        path = data.draw(st.sampled_from(sorted(fields)), label="field")
        msg, fd = fields[path]
        value = field_value(data.draw, fd)
        try:
            setattr(msg, fd.name, value)
        except ValueError:  # an enum number the closed enum lacks: write it raw
            msg.ClearField(fd.name)
            msg.MergeFromString(varint(fd.number << 3) + varint(value))
    # and sometimes a whole sub-message dropped
    if data.draw(st.booleans(), label="drop"):
        top = [fd.name for fd, _ in net.format.network_format.ListFields()] + ["format", "weights", "min_version"]
        victim = data.draw(st.sampled_from(top), label="cleared")
        if victim in ("format", "weights", "min_version"):
            net.ClearField(victim)
        else:
            net.format.network_format.ClearField(victim)
    assert_clean_outcome(write(fuzzdir, net.SerializeToString(), True))


@budget(80)
@given(data=st.data(), shape=shapes)
def test_fuzz_declared_length_lies(fuzzdir, data, shape):
    """The length varint of a layer's params (or of any length-delimited field near it) rewritten to
    a larger or smaller size than the bytes that follow."""
    buf = bytearray(base_bytes(shape))
    off = data.draw(st.sampled_from(header_offsets(shape)), label="layer")
    # the params length varint ends right before `off`; find its first byte
    start = off - 1
    while start > 0 and buf[start - 1] & 0x80:
        start -= 1
    old = 0
    for i, b in enumerate(buf[start:off]):
        old |= (b & 0x7F) << (7 * i)
    new = data.draw(st.one_of(st.integers(0, old + 64), st.integers(0, 2**63 - 1),
                              st.sampled_from([old - 1, old + 1, old * 2, 2**31, 2**32 - 1])), label="length")
    assume(new != old and new >= 0)
    buf[start:off] = varint(new)
    assert_clean_outcome(write(fuzzdir, bytes(buf), data.draw(st.booleans(), label="gz")))


# ------------------------------------------------------------------------------------ bombs

def zeros_gzip(prefix: bytes, n_zeros: int, suffix: bytes = b"") -> bytes:
    """gzip of prefix + n zero bytes + suffix, built without holding the zeros."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [c.compress(prefix)]
    chunk = bytes(1 << 20)
    left = n_zeros
    while left:
        k = min(left, len(chunk))
        parts.append(c.compress(chunk[:k]))
        left -= k
    parts.append(c.compress(suffix))
    parts.append(c.flush())
    return b"".join(parts)


def layer_bomb_prefix(shape: str, path: str, n: int) -> bytes:
    """Serialized net followed by the start of a field that sets layer `path`'s params to `n` bytes
    (protobuf merges it into the net; the zeros that follow are the params)."""
    net = base_net(shape)
    layer = get_layer(net, path)
    numbers = []
    msg = net
    for part in path.split("."):
        name = part.split("[")[0]
        fd = msg.DESCRIPTOR.fields_by_name[name]
        numbers.append(fd.number)
        msg = getattr(msg, name)
        if part.endswith("]"):
            msg = msg[int(part[:-1].split("[")[1])]
    assert msg is layer
    inner = varint((3 << 3) | 2) + varint(n)  # Layer.params
    size = len(inner) + n
    head = b""
    for num in reversed(numbers):
        head = varint((num << 3) | 2) + varint(size) + head
        size += len(varint((num << 3) | 2)) + len(varint(size))
    return net.SerializeToString() + head + inner


@functools.lru_cache(maxsize=8)
def bomb(kind: str, mib: int, shape: str, path: str) -> bytes:
    n = mib << 20
    if kind == "zeros":
        return zeros_gzip(b"", n)
    if kind == "after-net":  # a valid net, then megabytes of zeros in the same gzip member
        return zeros_gzip(base_bytes(shape), n)
    if kind == "layer":  # one layer whose params are megabytes of zeros (the 1 GiB net, smaller)
        return zeros_gzip(layer_bomb_prefix(shape, path, n), n)
    if kind == "members":  # many gzip members of zeros
        one = zeros_gzip(b"", n // 16)
        return one * 16
    raise ValueError(kind)


@budget(12, long_cap=100)
@given(kind=st.sampled_from(["zeros", "after-net", "layer", "members"]), mib=st.sampled_from([1, 16, 80]),
       shape=st.sampled_from(["tiny", "se"]), data=st.data())
def test_fuzz_compressed_bombs(fuzzdir, kind, mib, shape, data):
    path = data.draw(st.sampled_from(layer_paths(shape)), label="layer")
    if kind != "layer":
        path = layer_paths(shape)[0]  # unused: keep the cache small
    p = fuzzdir / "bomb.pb.gz"
    p.write_bytes(bomb(kind, mib, shape, path))
    assert_clean_outcome(p)


# ------------------------------------------------------------------------------------ UCI, in-process

from lc0_rocm import engine_options as eo  # noqa: E402
from lc0_rocm.uci import UciEngine, _next_token  # noqa: E402

MISSING_NET = "/nonexistent/lc0-rocm-fuzz/net.pb.gz"
UCI_PREFIXES = ("id ", "option ", "uciok", "readyok", "bestmove ", "info ")
# options a random stream may set to random values: not WeightsFile (it stays missing, so no net
# loads), LogFile (it would write files where the fuzzer says) nor ConfigFile/SyzygyPath (paths)
SAFE_SPECS = [s for s in eo.SPECS if s.name not in ("WeightsFile", "LogFile", "ConfigFile", "SyzygyPath")]

garbage = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
words = st.sampled_from(["uci", "isready", "go", "position", "setoption", "name", "value", "startpos", "fen",
                         "moves", "quit", "stop", "ponderhit", "debug", "on", "off", "ucinewgame", "infinite",
                         "wtime", "btime", "nodes", "depth", "movetime", "ponder", "searchmoves", "-1",
                         "999999999999999999999", "e2e4", "e7e5", "0000", "a1a1", "nan", "inf", "", "\t",
                         "\x00", "\r", "\x0c", "\u2028", "\x85", "\ufffd", "é"])


@st.composite
def option_value(draw, spec):
    typed = []
    if spec.kind == "check":
        typed = [st.sampled_from(["true", "false", "TRUE", "yes", "1"])]
    elif spec.kind in ("spin", "float"):
        lo = spec.min if spec.min is not None else -1e9
        hi = spec.max if spec.max is not None else 1e9
        typed = [st.integers(int(lo) - 2, int(hi) + 2).map(str), st.floats(allow_nan=True).map(str)]
    elif spec.kind == "combo":
        typed = [st.sampled_from(list(spec.choices)).map(lambda c: c.upper() if c.isascii() else c)]
    return draw(st.one_of(*typed, garbage, st.just("")))


@st.composite
def setoption_line(draw):
    spec = draw(st.sampled_from(SAFE_SPECS))
    value = draw(option_value(spec))
    form = draw(st.sampled_from(["full", "no-value", "no-name", "lower"]))
    if form == "no-value":
        return f"setoption name {spec.name}"
    if form == "no-name":
        return f"setoption {spec.name} value {value}"
    name = spec.name.lower() if form == "lower" else spec.name
    return f"setoption name {name} value {value}"


@st.composite
def position_line(draw):
    import chess

    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    fen_choice = draw(st.sampled_from(["startpos", "startfen", "kiwipete", "960", "garbage-fen", "none"]))
    fens = {"startfen": chess.STARTING_FEN,
            "kiwipete": "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q2/PPPBBPPP/R3K2R w KQkq - 0 1",
            "960": "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"}
    if fen_choice == "startpos":
        board, head = chess.Board(), "position startpos"
    elif fen_choice in fens:
        board = chess.Board(fens[fen_choice], chess960=fen_choice == "960")
        head = f"position fen {fens[fen_choice]}"
    elif fen_choice == "garbage-fen":
        return f"position fen {draw(garbage)} moves {draw(garbage)}"
    else:
        return f"position {draw(garbage)}"
    moves = []
    for _ in range(draw(st.integers(0, 12))):
        legal = list(board.legal_moves)
        if not legal:
            break
        m = rng.choice(legal)
        moves.append(m.uci())
        board.push(m)
    if draw(st.booleans()):  # sometimes one bad token in the move list
        moves.insert(rng.randint(0, len(moves)), draw(st.sampled_from(["e2e5", "zz", "e7e8q", "0000", "a1"])))
    return head + (" moves " + " ".join(moves) if moves else draw(st.sampled_from(["", " moves"])))


go_line = st.one_of(
    st.sampled_from(["go", "go nodes 1", "go infinite", "go movetime 10", "go wtime 1000 btime 1000",
                     "go depth 1", "go ponder", "go searchmoves e2e4 d2d4", "go mate 1"]),
    st.builds(lambda ws: "go " + " ".join(ws), st.lists(words, max_size=4)),
)

uci_line = st.one_of(
    st.sampled_from(["uci", "ucinewgame", "debug on", "debug off", "stop", "ponderhit", "isready", ""]),
    setoption_line(), position_line(), go_line, garbage,
    st.builds(" ".join, st.lists(words, max_size=6)),
)


def count_expected_bestmoves(lines: list[str]) -> tuple[int, int]:
    """(bestmoves, readyoks) the engine owes for these lines (it stops at `quit`)."""
    best = ready = 0
    for line in lines:
        cmd, args = _next_token(line)
        if cmd == "quit":
            break
        if cmd == "isready":
            ready += 1
        if cmd == "go":
            best += 1  # a malformed go too: an error line, then a bestmove (no search is running here)
    return best, ready


def check_uci_output(text: str, expected_best: int, expected_ready: int) -> None:
    lines = text.splitlines()  # as a GUI reading with universal newlines splits them
    for line in lines:
        assert line.startswith(UCI_PREFIXES) or line in ("uciok", "readyok"), f"not a UCI line: {line!r}"
    assert not text or text.endswith("\n")
    best = [ln for ln in lines if ln.startswith("bestmove ")]
    assert len(best) == expected_best, f"{len(best)} bestmove lines for {expected_best} go commands"
    assert sum(ln == "readyok" for ln in lines) == expected_ready


def run_engine(stream: bytes) -> str:
    inp = io.TextIOWrapper(io.BytesIO(stream), encoding="utf-8", errors="replace", newline=None)
    out = io.StringIO()
    engine = UciEngine(inp=inp, out=out, overrides={"WeightsFile": MISSING_NET, "Backend": "cpu"})
    with time_limit(HANG_S * 2, "UciEngine.run"):
        rc = engine.run()
    assert rc == 0
    return out.getvalue()


def expected_for(stream: bytes) -> tuple[int, int]:
    lines = io.TextIOWrapper(io.BytesIO(stream), encoding="utf-8", errors="replace", newline=None).readlines()
    return count_expected_bestmoves(lines)


@budget(100)
@given(lines=st.lists(uci_line, max_size=25), end=st.sampled_from(["quit", "eof", "quit-then-more"]),
       eol=st.sampled_from(["\n", "\r\n", "\r"]), raw=st.lists(st.binary(max_size=8), max_size=3))
def test_fuzz_uci_stream(lines, end, eol, raw):
    text = eol.join(lines) + eol
    if end == "quit":
        text += "quit" + eol
    elif end == "quit-then-more":
        text += "quit" + eol + "go" + eol + "uci" + eol
    stream = text.encode("utf-8", "surrogatepass")
    for i, chunk in enumerate(raw):  # raw bytes (invalid UTF-8 too) spliced in at line starts
        stream = stream.replace(b"\n", b"\n" + chunk, 1) if i % 2 else chunk + stream
    out = run_engine(stream)
    check_uci_output(out, *expected_for(stream))


# ------------------------------------------------------------------------------------ UCI, subprocess

def byte_stream(seed: int) -> tuple[bytes, int, int]:
    """A fixed pseudo-random stream of UCI commands, garbage and invalid UTF-8, ending in quit."""
    rng = random.Random(seed)
    bad = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf", b"\x00",
           "é".encode("latin-1"), "♞".encode("utf-8"), b"\xef\xbb\xbf"]
    cmds = [b"uci", b"isready", b"go nodes 1", b"position startpos moves e2e4", b"ucinewgame", b"stop",
            b"setoption name Threads value 2", b"debug on", b"go", b"position fen 8/8/8/8/8/8/8/8 w - - 0 1"]
    lines = []
    for _ in range(200):
        r = rng.random()
        if r < 0.4:
            lines.append(rng.choice(cmds))
        elif r < 0.7:
            lines.append(rng.choice(cmds) + rng.choice(bad) + bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 6))))
        else:
            lines.append(bytes(rng.choice([rng.getrandbits(8), 0x41 + rng.randint(0, 25)])
                               for _ in range(rng.randint(1, 30))).replace(b"\n", b" "))
    data = b"\n".join(lines) + b"\nquit\n"
    text_lines = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline=None).readlines()
    best, ready = count_expected_bestmoves(text_lines)
    return data, best, ready


@pytest.mark.parametrize("env_name,env_vars", [
    ("C", {"LC_ALL": "C"}),
    ("C-no-utf8-mode", {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}),
    ("C.UTF-8", {"LC_ALL": "C.UTF-8"}),
    ("en_US.UTF-8", {"LC_ALL": "en_US.UTF-8"}),
])
def test_fuzz_stdin_bytes_subprocess(env_name, env_vars):
    data, best, ready = byte_stream(13)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIOENCODING", "PYTHONUTF8"))}
    env.update(env_vars, LANG=env_vars["LC_ALL"], PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "-w", MISSING_NET, "-b", "cpu"], input=data,
                       capture_output=True, timeout=60, env=env, cwd=REPO)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, f"exit {p.returncode} under {env_name}: {err[-2000:]}"
    assert "Traceback" not in err, err[-4000:]
    out = p.stdout.decode("utf-8", "replace")
    check_uci_output(out, best, ready)


# ------------------------------------------------------------------------------------ UCI sessions on a net

# Whole sessions against a real (small, committed) net on the cpu backend, driven step by step as a
# GUI drives the engine: every listed option set to noise (valid and invalid values), positions that
# continue the game (tree reuse), new and broken positions, Chess960, go with every limit (degenerate
# ones too: nodes 0 and below, depth 0, movetime 0, a clock at 0, searchmoves 0000 or illegal), stop,
# ponder and ponderhit, a go at once after a stop, isready during searches. A python-chess model of
# the position says what is legal. The property: exactly one bestmove per go that owes one (a go the
# engine searches or cannot search, a stopped search, a search ended by `position` or `quit`; not a
# go infinite or ponder replaced by the next go, which lc0 aborts too), in order, each legal in the
# position its go searched (and among its legal searchmoves); every finite go answers without a
# `stop`; isready always gets readyok; every output line is UCI. A failure prints the session.

import queue  # noqa: E402
import threading  # noqa: E402

import chess  # noqa: E402

SESSION_NET = str(REPO / "weights" / "se-classical-small.pb.gz")
SYZYGY = REPO.parent / "shared" / "syzygy"
ANSWER_S = 20.0  # a finite go unanswered this long (or a stopped one) is a hang, on a loaded 2-core CI
FENS_960 = ["bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
            "nrkbqrbn/pppppppp/8/8/8/8/PPPPPPPP/NRKBQRBN w FBfb - 0 1"]
FENS = ["r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q2/PPPBBPPP/R3K2R w KQkq - 0 1",
        "8/8/8/4k3/8/8/8/KQ6 w - - 0 1", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",  # stalemate: no legal move
        "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"]
# counters the search cannot hold (encoding.position's limits): refused at `position`, as a bad FEN
BAD_COUNTERS = ["position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 9223372036854775808 1",
                "position fen 4k3/8/8/8/8/8/4P3/4K3 w - - 32766 1 moves e1d1 e8d8",
                "position fen 4k3/8/8/8/8/8/4P3/4K3 b - - 0 2147483647 moves e8d8"]


class _LineQueueIn:
    """stdin for an in-process engine: lines put by the driver; "" (end of input) after close()."""

    def __init__(self):
        self.q: queue.Queue = queue.Queue()

    def readline(self) -> str:
        return self.q.get()


class _LineQueueOut:
    """stdout for an in-process engine: each finished line onto a queue (and kept)."""

    def __init__(self):
        self.q: queue.Queue = queue.Queue()
        self.lines: list[str] = []
        self._buf = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._buf += text
            while "\n" in self._buf:
                line, self._buf = self._buf.split("\n", 1)
                self.lines.append(line)
                self.q.put(line)
        return len(text)

    def flush(self) -> None:
        pass


class _Owed:
    """A search the engine owes a bestmove for: the position, the searchmoves that bind the answer."""

    def __init__(self, board, searchmoves, kind, go):
        self.board, self.searchmoves, self.kind, self.go = board, searchmoves, kind, go
        self.stopped = False


class SessionDriver:
    """One engine in a thread, one random session (`rng`), the bookkeeping of what it owes."""

    def __init__(self, rng: random.Random, tmp: Path):
        self.rng, self.tmp = rng, tmp
        self.inp, self.out = _LineQueueIn(), _LineQueueOut()
        self.engine = UciEngine(inp=self.inp, out=self.out, overrides={"WeightsFile": SESSION_NET, "Backend": "cpu"})
        self.shadow = eo.Options()  # the option values the engine holds (same parser)
        self.shadow.set("WeightsFile", SESSION_NET)
        self.shadow.set("Backend", "cpu")
        self.sent: list[str] = []
        self.board: chess.Board | None = chess.Board()  # the position `go` searches (None: a bad one)
        self.game: tuple[str | None, list[chess.Move]] = (None, [])  # (fen, moves) sent last
        self.running: _Owed | None = None  # the search running now, if it owes a bestmove
        self.pending: list[_Owed] = []  # owed, not yet answered, in order
        self.readyoks = 0
        self.net_ok = True  # whether the engine can load its net with the options it holds
        self.rc = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.rc = self.engine.run()

    def fail(self, what: str):
        tail = "\n".join(self.out.lines[-15:])
        raise AssertionError(f"{what}\n--- session sent:\n" + "\n".join(self.sent) + f"\n--- last output:\n{tail}")

    def send(self, line: str):
        self.sent.append(line)
        self.inp.q.put(line + "\n")

    # ---- reading answers
    def _next(self, timeout: float) -> str | None:
        try:
            return self.out.q.get(timeout=timeout)
        except queue.Empty:
            return None

    def _take(self, line: str) -> None:
        if not (line.startswith(UCI_PREFIXES) or line in ("uciok", "readyok")):
            self.fail(f"not a UCI line: {line!r}")
        if line == "readyok":
            self.readyoks += 1
        elif line.startswith("bestmove "):
            if not self.pending:
                self.fail(f"a bestmove nobody owed: {line!r}")
            self.check_bestmove(self.pending.pop(0), line.split()[1])

    def drain(self, until: Callable = None, timeout: float = 0.0) -> bool:
        """Read what has come; with `until`, wait (up to timeout) for a line it accepts."""
        end = time.monotonic() + timeout
        while True:
            line = self._next(max(0.0, end - time.monotonic()) if until else 0.0)
            if line is None:
                return until is None
            self._take(line)
            if until is not None and until(line):
                return True

    def wait_answers(self, what: str) -> None:
        """Every owed bestmove must come (finite searches on their own)."""
        while self.pending:
            if not self.drain(lambda ln: ln.startswith("bestmove "), ANSWER_S):
                self.fail(f"no bestmove in {ANSWER_S:g} s ({what}; owed for {self.pending[0].go!r})")
        self.running = None

    def check_bestmove(self, owed: _Owed, text: str) -> None:
        board = owed.board
        if board is None or not any(board.legal_moves):
            if text != "(none)":
                self.fail(f"bestmove {text} for {owed.go!r} where the position has no legal move")
            return
        try:
            move = board.parse_uci(text)
        except ValueError:
            self.fail(f"bestmove {text} for {owed.go!r} is not legal in {board.fen()}")
        legal_sm = [m for m in owed.searchmoves if m in board.legal_moves]
        if legal_sm and move not in legal_sm:
            self.fail(f"bestmove {text} for {owed.go!r} outside its searchmoves {[m.uci() for m in legal_sm]}")

    # ---- the steps
    def step(self) -> None:
        r = self.rng.random()
        if r < 0.22:
            self.setoption()
        elif r < 0.42:
            self.position()
        elif r < 0.75:
            self.go()
        elif r < 0.85:
            self.stop()
        elif r < 0.90:
            self.ponderhit()
        elif r < 0.95:
            self.send("isready")
            if not self.drain(lambda ln: ln == "readyok", ANSWER_S):
                self.fail("no readyok")
        else:
            self.ucinewgame()
        self.drain()

    def setoption(self) -> None:
        rng = self.rng
        spec = rng.choice(eo.SPECS)
        if spec.name == "WeightsFile":
            value = rng.choice([SESSION_NET, SESSION_NET, "/nonexistent/net.pb.gz"]
                               + (["/dev/zero"] if os.path.exists("/dev/zero") else []))  # an endless stream
        elif spec.name == "Backend":
            value = rng.choice(["cpu", "cpu", "CPU", "auto", "nonsense"])
        elif spec.name == "BackendOptions":
            value = rng.choice(["", "", "threads=1", "max_batch=8", "max_batch=0", "bogus=1", "=,="])
        elif spec.name == "LogFile":
            value = rng.choice(["", str(self.tmp / "uci.log"), str(self.tmp / "no" / "such" / "dir.log")])
        elif spec.name == "ConfigFile":
            value = rng.choice(["", str(self.tmp / "missing.config")])
        elif spec.name == "SyzygyPath":
            good = str(SYZYGY) if SYZYGY.is_dir() else ""
            value = rng.choice(["", good, f"{good}{os.pathsep}/not/mounted", "/not/mounted", str(self.tmp)])
        elif spec.name == "NodesPerSecondLimit":  # a crawl would make finite searches look hung
            value = rng.choice(["0", "2000", "-1", "nan"])
        elif spec.kind == "check":
            value = rng.choice(["true", "false", "TRUE", "yes", ""])
        elif spec.kind == "combo":
            value = rng.choice(list(spec.choices) + ["nonsense", ""])
        elif spec.kind in ("spin", "float"):
            lo = spec.min if spec.min is not None else -1e6
            hi = spec.max if spec.max is not None else 1e6
            pick = rng.random()
            if pick < 0.5:
                value = str(spec.default)
            elif pick < 0.8:
                v = rng.uniform(lo, min(hi, lo + 4 * (abs(float(spec.default)) + 1)))
                value = str(int(v) if spec.kind == "spin" else round(v, 3))
            else:
                value = rng.choice([str(lo - 1), str(hi + 1), "nan", "-inf", "1.5", "x", ""])
        else:
            value = rng.choice(["", "x", "legacy", "smooth", "legacy(steepness=7)", "alphazero(bad=1)"])
        if spec.name == "MinibatchSize" and value not in ("0",) and value.lstrip("-").isdigit() and int(value) > 64:
            value = "64"  # the small net on 2 cores: keep batches short
        self.send(f"setoption name {spec.name} value {value}")
        try:
            self.shadow.set(spec.name, value)
        except eo.OptionError:
            pass
        if spec.name == "TimeManager":  # the engine takes back a manager it cannot build
            from lc0_rocm.search.timemgr import make_time_manager
            try:
                make_time_manager(self.shadow["TimeManager"], 200)
            except ValueError:
                self.shadow.set("TimeManager", "legacy")
        if spec.name == "WeightsFile" and value == "":
            self.shadow.set("WeightsFile", "<default>")
        if spec.name in ("WeightsFile", "Backend", "BackendOptions"):
            self.net_ok = _net_loads(self.shadow["WeightsFile"], self.shadow["Backend"], self.shadow["BackendOptions"])

    def _owe_running(self) -> None:
        """The running search is stopped by this command and answers."""
        if self.running is not None:
            self.running.stopped = True
            self.running = None

    def position(self) -> None:
        rng = self.rng
        c960 = self.shadow["UCI_Chess960"]
        kind = rng.random()
        fen, moves = self.game
        if kind < 0.55 and self.board is not None:  # the game goes on: one or two more moves
            board = self.board.copy()
            for _ in range(rng.randint(1, 2)):
                legal = list(board.legal_moves)
                if not legal:
                    break
                m = rng.choice(legal)
                moves = moves + [board.uci(m)]
                board.push(m)
        elif kind < 0.8:
            fen = rng.choice([None] + FENS + (FENS_960 if c960 else []))
            board = chess.Board(fen or chess.STARTING_FEN, chess960=c960)
            moves = []
            for _ in range(rng.randint(0, 6)):
                legal = list(board.legal_moves)
                if not legal:
                    break
                m = rng.choice(legal)
                moves.append(board.uci(m))
                board.push(m)
        else:
            bad = rng.choice(["position startpos moves e2e5", "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
                              "position fen garbage", "position startpos moves e2e4 0000 e7e5",
                              *BAD_COUNTERS])
            self.send(bad)
            self._owe_running()
            self.board = None
            return
        head = "position startpos" if fen is None else f"position fen {fen}"
        self.send(head + (" moves " + " ".join(moves) if moves else ""))
        self._owe_running()
        board = chess.Board(fen or chess.STARTING_FEN, chess960=c960)
        for u in moves:
            board.push_uci(u)
        self.board, self.game = board, (fen, moves)

    def go(self) -> None:
        rng = self.rng
        board = self.board
        if self.running is not None and self.running.kind == "finite":
            self.wait_answers("a finite go before the next go")  # a GUI waits for the bestmove
        legal = list(board.legal_moves) if board is not None else []
        searchmoves = []
        pick = rng.random()
        if pick < 0.30:
            words, kind = rng.choice([("nodes 0", "finite"), ("nodes -5", "finite"), ("nodes 1", "finite"),
                                      ("nodes 30", "finite"), ("nodes 120", "finite"), ("depth 0", "finite"),
                                      ("depth 2", "finite"), ("movetime 0", "finite"), ("movetime 50", "finite"),
                                      ("movetime -10", "finite"), ("mate 0", "unbounded"), ("nodes 50", "finite")])
        elif pick < 0.55:
            t = rng.choice([0, 1, 50, 300, 2000])
            inc = rng.choice([None, 0, 10, -5])
            words = f"wtime {t} btime {t}" + (f" winc {inc} binc {inc}" if inc is not None else "")
            words += rng.choice(["", "", " movestogo 1", " movestogo 0"])
            kind = "finite"
        elif pick < 0.70:
            words, kind = rng.choice([("infinite", "hold"), ("infinite nodes 20", "hold"),
                                      ("ponder wtime 500 btime 500", "hold"), ("ponder nodes 40", "hold"),
                                      ("mate 1", "unbounded")])
        elif pick < 0.85:
            chosen = rng.sample(legal, min(len(legal), rng.randint(1, 3))) if legal else []
            toks = [board.uci(m) for m in chosen] + rng.choice([[], ["0000"], ["e2e5"], ["zz"]])
            rng.shuffle(toks)
            searchmoves = [board.parse_uci(t) for t in toks if board is not None and _legal_uci(board, t)]
            words, kind = "nodes 40 searchmoves " + " ".join(toks), "finite"
        else:
            words, kind = rng.choice([("nodes x", "malformed"), ("wtime", "malformed"), ("bogus", "malformed"),
                                      ("depth 1.5", "malformed")])
        line = f"go {words}"
        if kind == "malformed":
            if self.running is None:
                self.wait_answers("a stopped search before a malformed go")  # it may still be finishing
            self.send(line)
            if self.running is None:  # no search: an error line and a bestmove
                self.pending.append(_Owed(board, [], "finite", line))
            return  # else the running search goes on and answers for its own go
        if self.running is not None and self.running.kind != "finite" and not self.running.stopped:
            self.pending.remove(self.running)  # a go replaces a search that holds its bestmove: aborted
        self.running = None
        owed = _Owed(board, searchmoves, kind, line)
        self.pending.append(owed)
        self.send(line)
        no_search = board is None or not legal or not self.net_ok
        if no_search:
            self.wait_answers("a go that cannot search")
        else:
            self.running = owed
            if kind == "unbounded":
                time.sleep(0.05)
                self.stop()

    def stop(self) -> None:
        self.send("stop")
        self._owe_running()
        if self.rng.random() < 0.5:
            self.wait_answers("a stopped search")

    def ponderhit(self) -> None:
        self.send("ponderhit")
        r = self.running
        if r is not None and r.kind == "hold" and r.go.startswith("go ponder") and not r.stopped:
            r.kind = "finite"  # the ponder search now runs on its own limits

    def ucinewgame(self) -> None:
        self.send("ucinewgame")
        self._owe_running()
        self.board, self.game = chess.Board(chess960=self.shadow["UCI_Chess960"]), (None, [])

    def finish(self) -> None:
        if self.rng.random() < 0.5:
            self.send("quit")
        else:
            self.inp.q.put("")  # end of input
        self._owe_running()
        self.thread.join(ANSWER_S)
        if self.thread.is_alive():
            self.fail("the engine did not end after quit")
        self.drain()
        if self.pending:
            self.fail(f"{len(self.pending)} bestmove(s) owed at quit, first for {self.pending[0].go!r}")
        isready = sum(1 for x in self.sent if x == "isready")
        if self.readyoks != isready or self.rc != 0:
            self.fail(f"readyok {self.readyoks} for {isready} isready; run() returned {self.rc}")


@functools.lru_cache(maxsize=None)
def _net_loads(weights: str, backend: str, options: str) -> bool:
    """Whether open_backend accepts these settings (what the engine's `go` will find)."""
    from lc0_rocm.api import open_backend
    from lc0_rocm.errors import Lc0RocmError

    if weights == "<default>":
        return True
    try:
        open_backend(weights, backend, options, notify=lambda message: None).close()
    except (Lc0RocmError, OSError):
        return False
    return True


def _legal_uci(board: chess.Board, tok: str) -> bool:
    try:
        return bool(board.parse_uci(tok))
    except ValueError:
        return False


def run_session(seed: int, steps: int, tmp: Path) -> None:
    drv = SessionDriver(random.Random(seed), tmp)
    try:
        drv.send("uci")
        drv.send("isready")
        if not drv.drain(lambda ln: ln == "readyok", 900.0):  # a first start compiles the search
            drv.fail("no readyok at start")
        for _ in range(steps):
            drv.step()
        drv.finish()
    finally:
        if drv.thread.is_alive():
            drv.inp.q.put("stop\n")
            drv.inp.q.put("quit\n")


@budget(12, long_cap=500)
@given(seed=st.integers(0, 2**32 - 1))
def test_fuzz_uci_sessions_on_a_net(tmp_path_factory, seed):
    run_session(seed, 30 if not LONG else 80, tmp_path_factory.mktemp("session"))


def test_uci_session_reproduction_inputs():
    """The session of `../shared/repro/uci-session-go-nodes-unanswered.txt` fed line by line (raw bytes):
    every go answers (a `stop` after 5 s only for infinite and ponder searches), the last one at once."""
    from netpaths import require_shared

    path = require_shared(REPO.parent / "shared" / "repro" / "uci-session-go-nodes-unanswered.txt")
    require_shared(REPO.parent / "shared" / "weights" / "maia-1100.pb.gz")
    inp, out = _LineQueueIn(), _LineQueueOut()
    engine = UciEngine(inp=inp, out=out)
    cwd = os.getcwd()
    os.chdir(REPO)  # the session names ../shared/weights relative to the repository root
    try:
        t = threading.Thread(target=engine.run, daemon=True)
        t.start()
        raw = path.read_bytes().split(b"\n")
        gos = 0
        for chunk in raw:
            if not chunk:
                continue
            line = chunk.decode("utf-8", "replace")
            inp.q.put(line + "\n")
            if not line.startswith("go"):
                continue
            gos += 1
            holds = "infinite" in line or "ponder" in line
            deadline = time.monotonic() + (0.3 if holds else ANSWER_S)
            while True:  # each go answers once (a search that holds its bestmove after a stop)
                try:
                    x = out.q.get(timeout=max(0.01, deadline - time.monotonic()))
                except queue.Empty:
                    assert holds, f"{line!r} (go {gos}) got no bestmove in {ANSWER_S:g} s"
                    inp.q.put("stop\n")
                    holds, deadline = False, time.monotonic() + ANSWER_S
                    continue
                if x.startswith("bestmove"):
                    break
        inp.q.put("quit\n")
        t.join(ANSWER_S)
        assert not t.is_alive()
    finally:
        os.chdir(cwd)
    assert out.lines[-1].startswith("bestmove ") and out.lines[-1] != "bestmove (none)", out.lines[-5:]
