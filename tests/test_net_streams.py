"""A weights path that is an endless stream (/dev/zero, a FIFO) is read up to the limit, never without
bound: the read stops at `netfile.MAX_NET_BYTES` (injected smaller here, to keep the test's memory
small), or earlier where the bytes cannot be a gzip stream or a protobuf message (/dev/zero: at its
first byte). Every surface (the API, the UCI engine, validate, analyse) gives one clear line."""

from __future__ import annotations

import gzip
import os
import random
import threading
import time
import zlib
from pathlib import Path

import chess
import pytest

from netpaths import WEIGHTS_DIR

from lc0_rocm.cli import main
from lc0_rocm.errors import NetFormatError
from lc0_rocm.net import netfile

LIMIT = 4 << 20  # the limit these tests inject instead of the real 2 GiB
ZERO = Path("/dev/zero")

pytestmark = pytest.mark.skipif(not ZERO.exists() or not hasattr(os, "mkfifo"), reason="needs /dev/zero and FIFOs")


def _fifo_fed(tmp_path: Path, chunks, stop_after: int) -> tuple[Path, threading.Thread]:
    """A FIFO that a thread feeds with `chunks` (an endless iterator of bytes) until the reader goes
    away or `stop_after` bytes are written (so that a reader without a bound ends too)."""
    path = tmp_path / "net.fifo"
    os.mkfifo(path)

    def feed():
        written = 0
        try:
            with open(path, "wb") as f:
                for chunk in chunks:
                    f.write(chunk)
                    written += len(chunk)
                    if written > stop_after:
                        return
        except (BrokenPipeError, OSError):
            pass  # the reader stopped: what the test wants

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return path, t


def _protobuf_fields():
    """An endless run of well-formed top-level protobuf fields (`license`, a 100-byte string)."""
    field = b"\x12\x64" + b"x" * 100
    block = field * 1000
    while True:
        yield block


def _gzip_of_noise():
    """An endless gzip stream of random bytes (it expands about 1x, as real weights do)."""
    rng = random.Random(7)
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    while True:
        out = z.compress(rng.randbytes(1 << 16))
        if out:
            yield out


@pytest.mark.parametrize("chunks", [_protobuf_fields, _gzip_of_noise], ids=["protobuf", "gzip"])
def test_a_fifo_is_read_up_to_the_limit(tmp_path, chunks):
    path, feeder = _fifo_fed(tmp_path, chunks(), stop_after=4 * LIMIT)
    t0 = time.monotonic()
    with pytest.raises(NetFormatError, match=r"^net\.fifo: .*4 MiB"):
        netfile.read_net_bytes(path, max_bytes=LIMIT)
    feeder.join(30)
    assert not feeder.is_alive() and time.monotonic() - t0 < 30


def test_dev_zero_stops_at_its_first_bytes():
    t0 = time.monotonic()
    with pytest.raises(NetFormatError, match=r"^zero: not an Lc0 network \(no protobuf field at byte 0\)$"):
        netfile.read_net_bytes(ZERO)  # the real limit: the structure stops it, not the size
    assert time.monotonic() - t0 < 5


def test_a_real_net_still_reads_from_a_fifo(tmp_path):
    """A net streamed through a FIFO (no size to check first) loads as from its file."""
    net = WEIGHTS_DIR / "se-classical-small.pb.gz"
    data = net.read_bytes()
    path, feeder = _fifo_fed(tmp_path, iter([data]), stop_after=len(data))
    assert netfile.read_net_bytes(path) == gzip.decompress(data)
    feeder.join(10)


def test_dev_zero_on_every_surface(capsys, tmp_path):
    import io

    import lc0_rocm
    from lc0_rocm.uci import UciEngine

    t0 = time.monotonic()
    with pytest.raises(NetFormatError, match=r"zero: not an Lc0 network"):
        lc0_rocm.load_net(str(ZERO))

    out = io.StringIO()
    UciEngine(io.StringIO("setoption name WeightsFile value /dev/zero\nisready\ngo nodes 1\nquit\n"), out,
              overrides={"Backend": "cpu"}).run()
    lines = out.getvalue().splitlines()
    errors = [x for x in lines if x.startswith("info string error: cannot load network")]
    assert errors == ["info string error: cannot load network /dev/zero: zero: not an Lc0 network "
                      "(no protobuf field at byte 0)"] * 2, lines  # at isready and at go
    first_legal = next(iter(chess.Board().legal_moves)).uci()
    assert "readyok" in lines and lines[-1] == f"bestmove {first_legal}", lines
    capsys.readouterr()

    assert main(["validate", "-w", str(ZERO), "-b", "cpu", "-n", "2"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "zero: not an Lc0 network" in err[0], err

    pgn = tmp_path / "g.pgn"
    pgn.write_text('[Event "x"]\n\n1. e4 e5 *\n')
    assert main(["analyse", str(pgn), "-w", str(ZERO), "-b", "cpu", "--jsonl", str(tmp_path / "o.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "zero: not an Lc0 network" in err[0], err
    assert time.monotonic() - t0 < 60
