"""backendbench: statistics against numpy, Clippy against lc0's formula by hand, lc0 v0.32.1's line
format (against the real lc0's output) and lc0 master's table format, the sizing for a CPU,
the measuring loop (lc0's timing: encoding inside the wall clock; first-batch exclusion, device-timed
backends as the extra column or with --device-time as the table's timing, split batches), the command
line end to end on the default net, and one-line errors for bad arguments."""

import csv
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from chess import STARTING_FEN

from lc0_rocm.backends.cpu import CpuBackend
from lc0_rocm.bench import report
from lc0_rocm.bench.backendbench import (BatchEncoder, BenchConfig, encode_fen, estimate_seconds, fit_config,
                                         has_device_timer, make_timer, position_history, replicate, run_bench,
                                         timer_kind)
from lc0_rocm.bench.clippy import Clippy, threshold
from lc0_rocm.bench.stats import size_stats, with_extra
from lc0_rocm.default_net import default_net_path
from lc0_rocm.encoding.outputs import NetOutputs
from lc0_rocm.encoding.planes import encode_positions
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.net.loader import load_net

ROOT = Path(__file__).resolve().parent.parent

# recorded per-batch times (s) of one batch size, first batch first (it is excluded)
RECORDED = [0.0131, 0.00402, 0.00398, 0.00411, 0.00395, 0.00467, 0.00401, 0.00399, 0.00404]


# ------------------------------------------------------------------------------------------------
# statistics


@pytest.mark.parametrize("measured", [RECORDED[1:], RECORDED[1:-1]], ids=["even", "odd"])
def test_size_stats_match_numpy(measured):
    size = 48
    s = size_stats(size, RECORDED[0], measured)
    t = np.array(measured, dtype=np.float64)
    assert s.times == tuple(measured)
    assert s.mean_nps == pytest.approx(size * len(t) / t.sum(), rel=1e-12)
    assert s.mean_ms == pytest.approx(t.mean() * 1000, rel=1e-12)
    assert s.sdev_ms == pytest.approx(t.std(ddof=1) * 1000, rel=1e-12)
    assert s.cv == pytest.approx(t.std(ddof=1) / t.mean(), rel=1e-12)
    assert s.max_nps == pytest.approx(size / t.min(), rel=1e-12)
    assert s.min_nps == pytest.approx(size / t.max(), rel=1e-12)
    assert s.median_nps == pytest.approx(size / np.median(t), rel=1e-12)
    assert s.first_max_ms == s.first_mean_ms == pytest.approx(13.1)


def test_size_stats_single_measured_batch_has_nan_sdev():
    s = size_stats(4, 0.01, [0.002])
    assert math.isnan(s.sdev_ms) and math.isnan(s.cv)
    assert s.mean_nps == pytest.approx(2000.0)
    assert report.format_row(s).split(",")[3].strip() == "nan"


class _ScriptedClock:
    """perf_counter stand-in returning recorded batch times: start/stop pairs 0, t1, 0, t2, ..."""

    def __init__(self, durations):
        self.values = []
        for d in durations:
            self.values += [100.0, 100.0 + d]
        self.calls = 0

    def __call__(self):
        v = self.values[self.calls]
        self.calls += 1
        return v


def test_run_bench_excludes_warmup_and_first_batch_of_each_size():
    net = load_net(default_net_path())
    backend = CpuBackend(net)
    position = position_history(STARTING_FEN)
    cfg = BenchConfig(batches=4, start_batch_size=1, max_batch_size=3, batch_step=2)
    warm = [0.5, 0.25]
    size1 = [0.02, 0.001, 0.003, 0.002]
    size3 = [0.04, 0.006, 0.005, 0.007]
    clock = _ScriptedClock(warm + size1 + size3)
    seen = []
    warm_out, stats = run_bench(backend, position, cfg, seen.append, clock=clock)
    assert clock.calls == 2 * (2 + 4 + 4)  # every batch really evaluated and timed once
    assert warm_out == pytest.approx(warm)
    assert [s.size for s in stats] == [1, 3] and seen == stats
    for s, rec in zip(stats, (size1, size3)):
        t = np.array(rec[1:])
        assert s.first == pytest.approx(rec[0])
        assert s.times == pytest.approx(tuple(rec[1:]))
        assert s.mean_nps == pytest.approx(s.size * 3 / t.sum())
        assert s.median_nps == pytest.approx(s.size / np.median(t))
        assert s.sdev_ms == pytest.approx(1000 * t.std(ddof=1))
        assert s.extra_kind == ""  # the cpu backend has no device timer: lc0's table exactly
        assert report.format_row(s).count(",") == 9


@pytest.mark.parametrize("fen,moves,fmt", [
    (STARTING_FEN, [], 1),
    (None, ["e2e4", "c7c5", "g1f3"], 3),
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 0 1", [], 5),
])
def test_batch_encoder_rows_equal_the_batch_encoding(fen, moves, fmt):
    history = parse_position(fen, moves)
    want = encode_positions([history] * 5, fmt)
    got = BatchEncoder(history, fmt)(5)
    np.testing.assert_array_equal(got.masks, want.masks)
    np.testing.assert_array_equal(got.values, want.values)
    np.testing.assert_array_equal(got.transforms, want.transforms)
    one = replicate(encode_positions([history], fmt), 5)
    np.testing.assert_array_equal(got.masks, one.masks)
    assert got.masks is not BatchEncoder(history, fmt)(5).masks  # every batch is built afresh


class _FakeTime:
    """A clock that only the encoder and the backends below advance."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class _SlowEncoder(BatchEncoder):
    """The real encoder; building a batch of n rows takes n * 0.5 ms of fake time."""

    def __init__(self, history, input_format, clock):
        super().__init__(history, input_format)
        self.clock = clock

    def __call__(self, n):
        planes = super().__call__(n)
        self.clock.now += 0.0005 * n
        return planes


class _SlowCpu(CpuBackend):
    """A real CPU evaluation that takes 2 ms of fake time per call."""

    def __init__(self, net, clock):
        super().__init__(net)
        self.clock = clock

    def evaluate(self, planes):
        out = super().evaluate(planes)
        self.clock.now += 0.002
        return out


def test_wall_timing_includes_encoding_the_batch_as_lc0():
    net = load_net(default_net_path())
    clock = _FakeTime()
    backend = _SlowCpu(net, clock)
    position = position_history(STARTING_FEN)
    encoder = _SlowEncoder(position, net.input_format, clock)
    warm, stats = run_bench(backend, position, BenchConfig(batches=3, start_batch_size=2, max_batch_size=4,
                                                           batch_step=2), clock=clock, encoder=encoder)
    assert warm == pytest.approx([0.004, 0.004])  # 4 rows encoded (2 ms) + one evaluation (2 ms)
    s2, s4 = stats
    assert s2.mean_ms == pytest.approx(3.0) and s2.first == pytest.approx(0.003)  # 1 ms encoding + 2 ms
    assert s4.mean_ms == pytest.approx(4.0) and s4.mean_nps == pytest.approx(1000.0)


class _DeviceTimedCpu(CpuBackend):
    """A real CPU evaluation that reports a fixed 'device' time of 1 ms per position, like a GPU
    backend's evaluate_timed would report event times; records the piece sizes it was given.
    With a fake clock, every evaluation also takes 2 ms of it."""

    name = "cpu-timed"

    def __init__(self, net, max_batch, clock=None):
        super().__init__(net)
        self._max = max_batch
        self.pieces = []
        self.clock = clock

    @property
    def max_batch(self):
        return self._max

    def evaluate_timed(self, planes):
        """In passes of at most max_batch, as the batch contract asks of a backend (backends/base.py)."""
        outs = []
        for piece in planes.chunks(self._max):
            outs.append(self.evaluate(piece))
            assert len(outs[-1]) == len(piece)
            self.pieces.append(len(piece))
            if self.clock is not None:
                self.clock.now += 0.002
        return NetOutputs.concat(outs), 0.001 * len(planes)


def test_device_timer_is_the_extra_column_and_large_batches_are_split():
    net = load_net(default_net_path())
    clock = _FakeTime()
    backend = _DeviceTimedCpu(net, max_batch=2, clock=clock)
    assert has_device_timer(backend) and not has_device_timer(CpuBackend(net))
    assert timer_kind(backend) == "wall" and timer_kind(backend, "device") == "device"
    assert timer_kind(CpuBackend(net), "device") == "wall"
    position = position_history(STARTING_FEN)
    encoder = _SlowEncoder(position, net.input_format, clock)
    warm, stats = run_bench(backend, position, BenchConfig(batches=3, start_batch_size=5, max_batch_size=5),
                            clock=clock, encoder=encoder)
    assert backend.pieces == [2, 2, 1] * 5  # 2 warm-up + 3 measured batches of 5, split by max_batch 2
    assert warm == pytest.approx([0.0085, 0.0085])  # wall: 2.5 ms encoding + 3 pieces x 2 ms
    (s,) = stats
    assert s.mean_ms == pytest.approx(8.5) and s.sdev_ms == pytest.approx(0.0)
    assert s.extra_kind == "device" and s.extra_times == pytest.approx((0.005, 0.005))
    assert s.extra_first == pytest.approx(0.005) and s.extra_mean_ms == pytest.approx(5.0)
    row = report.format_row(s)
    assert row.split(",")[-1] == "    5.0000" and row.count(",") == 10
    assert report.header("device").endswith(", device ms")
    assert [len(c) for c in report.header("device").split(",")] == [len(c) for c in row.split(",")]


def test_device_time_as_primary_timing():
    net = load_net(default_net_path())
    clock = _FakeTime()
    backend = _DeviceTimedCpu(net, max_batch=2, clock=clock)
    position = position_history(STARTING_FEN)
    encoder = _SlowEncoder(position, net.input_format, clock)
    warm, stats = run_bench(backend, position, BenchConfig(batches=3, start_batch_size=5, max_batch_size=5),
                            clock=clock, encoder=encoder, primary="device")
    assert warm == pytest.approx([0.005, 0.005])
    (s,) = stats
    assert s.mean_ms == pytest.approx(5.0) and s.mean_nps == pytest.approx(1000.0)
    assert s.extra_kind == "wall" and s.extra_mean_ms == pytest.approx(8.5)
    assert report.header("wall").endswith(",   wall ms")
    with pytest.raises(ValueError, match="device timing"):
        run_bench(CpuBackend(net), position, BenchConfig(batches=2, max_batch_size=1), primary="device")


def test_ready_batch_timer_times_the_evaluation_only():
    net = load_net(default_net_path())
    backend = _DeviceTimedCpu(net, max_batch=2)
    timed = make_timer(backend)  # the kernel-work timer (tools/perf_suite.py): device time of a ready batch
    assert timed(encode_fen(STARTING_FEN, net.input_format)) == pytest.approx(0.001)
    assert timed(replicate(encode_fen(STARTING_FEN, net.input_format), 5)) == pytest.approx(0.005)
    assert backend.pieces == [1, 2, 2, 1]


def test_bench_config_ranges():
    BenchConfig(2, 1, 1024, 256).validate()
    for bad in (BenchConfig(batches=1), BenchConfig(max_batch_size=1025), BenchConfig(batch_step=257),
                BenchConfig(start_batch_size=0), BenchConfig(start_batch_size=300, max_batch_size=256)):
        with pytest.raises(ValueError):
            bad.validate()
    assert list(BenchConfig(start_batch_size=1, max_batch_size=4, batch_step=2).sizes()) == [1, 3]


def test_estimate_counts_every_position_of_the_run():
    c = BenchConfig(batches=10, start_batch_size=1, max_batch_size=7, batch_step=3)  # sizes 1, 4, 7
    assert estimate_seconds(c, 0.5) == pytest.approx((10 * 12 + 2 * 7) * 0.5)
    assert estimate_seconds(c, 0.5, warm_up=False) == pytest.approx(10 * 12 * 0.5)


@pytest.mark.parametrize("per_position", [1e-6, 2e-5, 3e-4, 5e-3, 0.1, 10.0])
def test_fit_config_fits_the_budget_with_the_largest_sizes(per_position):
    c = fit_config(per_position, budget_s=60.0, batches=10)
    c.validate()
    if c.max_batch_size > 1:
        assert estimate_seconds(c, per_position) <= 60.0
    if c.batch_step > 1:  # one step finer would not fit
        finer = BenchConfig(10, 1, c.max_batch_size, c.batch_step // 2)
        assert estimate_seconds(finer, per_position) > 60.0
    if c.max_batch_size < 256:  # nothing with twice the largest size fits
        bigger = BenchConfig(10, 1, 2 * c.max_batch_size, 2 * c.max_batch_size - 1)
        assert estimate_seconds(bigger, per_position) > 60.0
    assert (c.max_batch_size, c.batch_step) == {1e-6: (256, 1), 10.0: (1, 1)}.get(per_position, (c.max_batch_size,
                                                                                                 c.batch_step))


# ------------------------------------------------------------------------------------------------
# Clippy


def test_clippy_thresholds_match_lc0_formula_by_hand():
    # ((1500 + 1000) / 2) ** 1.085 = 2291.645; 0.16947 * exp(-4.1695e-6 * 2291.645 * T) + 0.02
    assert threshold(1500, 1000, 180) == pytest.approx(0.0503493, abs=2e-7)
    assert threshold(1500, 1000, 15) == pytest.approx(0.1668410, abs=2e-7)
    assert threshold(1500, 1000, 1) == pytest.approx(0.1878584, abs=2e-7)
    # ((1600 + 1500) / 2) ** 1.085 = 2893.0
    assert threshold(1600, 1500, 180) == pytest.approx(0.0393104, abs=2e-7)
    assert threshold(1600, 1500, 15) == pytest.approx(0.1614114, abs=2e-7)


def test_clippy_picks_on_a_synthetic_table():
    c = Clippy()
    # size 1: every pick starts at (1, 0 nps): 0 < 1000 accepts it everywhere
    assert c.update(1, 1000.0, now=0.0)
    assert c.recommendations == {"tournament": 1, "rapid": 1, "bullet": 1}
    # size 2, 1500 nps: gain (1500-1000)*1 = 500 beats 0.0503*1*1000, 0.1668*1000, 0.1879*1000
    assert c.update(2, 1500.0, now=1.0)
    assert c.recommendations == {"tournament": 2, "rapid": 2, "bullet": 2}
    # size 4, 1600 nps: gain 100*2 = 200; tournament 0.0393*2*1500 = 118 < 200 accepts,
    # rapid 0.1614*2*1500 = 484 > 200 rejects (and bullet, nested inside, is not tried)
    assert c.update(4, 1600.0, now=2.0)
    assert c.recommendations == {"tournament": 4, "rapid": 2, "bullet": 2}
    # a slower size changes nothing
    assert not c.update(5, 1550.0, now=3.0)
    assert c.recommendations == {"tournament": 4, "rapid": 2, "bullet": 2}


def _clippy_by_formula(table):
    """Independent double-precision transcription of lc0's rule (`src/benchmark/backendbench.cc`, clippy)."""
    best, best_nps = [1, 1, 1], [0.0, 0.0, 0.0]
    for i, nps in table:
        thr = [0.16947 * math.exp(-4.1695e-6 * ((nps + best_nps[k]) / 2) ** 1.085 * T) + 0.02
               for k, T in enumerate((180, 15, 1))]
        ok = [thr[k] * (i - best[k]) * best_nps[k] < (nps - best_nps[k]) * best[k] for k in range(3)]
        if nps > best_nps[0] and ok[0]:
            best[0], best_nps[0] = i, nps
            if ok[1]:
                best[1], best_nps[1] = i, nps
                if ok[2]:
                    best[2], best_nps[2] = i, nps
    return best


@pytest.mark.parametrize("table, expected", [
    ([(i, 40000 * i / (i + 24)) for i in range(1, 257)], [256, 256, 147]),
    ([(i, 4000 * i / (i + 6)) for i in range(1, 65)], [64, 40, 26]),
    ([(i, 30000 * i / (i + 40) * (0.8 if i % 7 == 0 else 1.0)) for i in range(8, 520, 8)], None),
])
def test_clippy_follows_lc0_formula_on_saturating_curves(table, expected):
    c = Clippy()
    for i, nps in table:
        c.update(i, nps, now=0.0)
    want = _clippy_by_formula(table)
    if expected is not None:
        assert want == expected
    assert [c.best[0], c.best[1], c.best[2]] == want


def test_clippy_interim_after_ten_seconds_pending():
    c = Clippy()
    c.update(1, 100.0, now=50.0)
    assert not c.interim_due(now=59.0)
    assert c.interim_due(now=60.5)
    assert not c.interim_due(now=61.0)  # shown once, until a new best arrives
    box = c.box(final=True)
    assert "Recommended minibatch-size for this net:" in box
    assert "3min/move (Tournament):    1" in box and "1s/move   (Bullet):        1" in box


# ------------------------------------------------------------------------------------------------
# the table


def test_v032_line_is_lc0s():
    s = size_stats(64, 0.0123456, [0.004, 0.0041, 0.0039])  # four batches in all
    total = 0.0123456 + 0.004 + 0.0041 + 0.0039
    assert report.v032_line(s) == (f"Benchmark batch size 64 with inference average time {total / 4 * 1000:g}ms - "
                                   f"throughput {64 * 4 / total:g} nps.")
    assert report.v032_line(s) == "Benchmark batch size 64 with inference average time 6.0864ms - throughput 10515.2 nps."
    assert report.v032_nps(s) == pytest.approx(64 * 4 / total)


def test_v032_lines_look_like_the_real_lc0s():
    from lc0_oracle import require_lc0

    net = default_net_path()
    theirs = subprocess.run([require_lc0(), "backendbench", "--backend=eigen", "--batches=2", "--max-batch-size=2",
                             f"--weights={net}"], capture_output=True, text=True, timeout=120).stdout
    ours = _run(["--backend", "cpu", "--batches", "2", "--max-batch-size", "2", "-w", str(net)]).stdout
    shape = r"Benchmark batch size (\d+) with inference average time [0-9.e+-]+ms - throughput [0-9.e+-]+ nps\."
    for text in (theirs, ours):
        assert [re.fullmatch(shape, ln).group(1) for ln in text.splitlines()] == ["1", "2"], text


def test_row_format_is_lc0s():
    s = size_stats(64, 0.0123456, [0.004, 0.0041, 0.0039])
    row = report.format_row(s)
    # size %4d, mean nps %9.0f, mean ms 4 significant digits in 8, sdev %7.4f, cv %7.4f,
    # max/median/min nps %8.0f, first max %10.4f, first mean %11.4f
    assert row == "  64,    16000,       4, 0.1000, 0.0250,   16410,   16000,   15610,   12.3456,    12.3456"
    assert len(report.HEADER.split(",")) == 10
    assert [len(c) for c in report.HEADER.split(",")] == [len(c) for c in row.split(",")]


def test_header_every_32_sizes_or_once():
    stats = [size_stats(i, 0.01, [0.001 * i, 0.001 * i]) for i in range(3, 3 + 2 * 70, 2)]
    lines = report.format_table(stats, start=3, step=2).splitlines()
    assert [k for k, line in enumerate(lines) if line == report.HEADER] == [0, 33, 66]
    assert len(lines) == 70 + 3
    once = report.format_table(stats, start=3, step=2, header_only_once=True).splitlines()
    assert once.count(report.HEADER) == 1 and once[0] == report.HEADER and len(once) == 71


def test_csv_and_json_files(tmp_path):
    stats = [size_stats(i, 0.02, [0.001 * i + 1e-4 * k for k in range(5)]) for i in (1, 2, 4)]
    report.write_csv(tmp_path / "b.csv", stats)
    rows = list(csv.reader(open(tmp_path / "b.csv")))
    assert rows[0] == report.COLUMNS
    for r, s in zip(rows[1:], stats):
        got = [float(x) for x in r]
        t = np.array(s.times)
        want = [s.size, s.size * 5 / t.sum(), t.mean() * 1000, t.std(ddof=1) * 1000, t.std(ddof=1) / t.mean(),
                s.size / t.min(), s.size / np.median(t), s.size / t.max(), 20.0, 20.0]
        assert got == pytest.approx(want, rel=1e-12)
    report.write_json(tmp_path / "b.json", {"backend": "cpu"}, [0.1, 0.2], stats, {"tournament": 4})
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["backend"] == "cpu" and doc["clippy"] == {"tournament": 4}
    assert doc["warmup_ms"] == pytest.approx([100.0, 200.0])
    assert [d["size"] for d in doc["sizes"]] == [1, 2, 4]
    assert doc["sizes"][2]["times_ms"] == pytest.approx([4.0, 4.1, 4.2, 4.3, 4.4])
    assert doc["columns"] == report.COLUMNS and "device_mean_ms" not in doc["sizes"][0]


def test_csv_and_json_files_with_the_extra_timing(tmp_path):
    stats = [with_extra(size_stats(i, 0.02, [0.001 * i + 1e-4 * k for k in range(4)]), "device", 0.01,
                        [0.0005 * i + 1e-5 * k for k in range(4)]) for i in (1, 8)]
    report.write_csv(tmp_path / "b.csv", stats)
    rows = list(csv.reader(open(tmp_path / "b.csv")))
    assert rows[0] == report.COLUMNS + ["device ms"]
    for r, i in zip(rows[1:], (1, 8)):
        assert float(r[-1]) == pytest.approx(1000 * np.mean([0.0005 * i + 1e-5 * k for k in range(4)]), rel=1e-12)
    report.write_json(tmp_path / "b.json", {"timer": "wall"}, [0.1], stats, None)
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["columns"][-1] == "device ms"
    d = doc["sizes"][1]
    assert d["device_first_ms"] == pytest.approx(10.0)
    assert d["device_times_ms"] == pytest.approx([4.0, 4.01, 4.02, 4.03])
    assert d["device_mean_ms"] == pytest.approx(4.015)
    with pytest.raises(ValueError):
        with_extra(stats[0], "device", 0.01, [0.001])  # not the same batches


def test_plot_png(tmp_path):
    pytest.importorskip("matplotlib")
    stats = [size_stats(i, 0.02, [0.001 * i + 1e-4 * k for k in range(5)]) for i in range(1, 20, 3)]
    report.write_plot(tmp_path / "b.png", stats, title="test")
    data = (tmp_path / "b.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


# ------------------------------------------------------------------------------------------------
# command line


def _run(args, script=None):
    cmd = [sys.executable, str(script)] if script else [sys.executable, "-m", "lc0_rocm.cli", "backendbench"]
    return subprocess.run(cmd + args, cwd=ROOT, capture_output=True, text=True, timeout=120)


def _table_rows(stdout):
    return [line for line in stdout.splitlines() if line and line[0] in " 0123456789" and line.count(",") == 9]


def test_cli_end_to_end_cpu(tmp_path):
    p = _run(["--backend", "cpu", "--batches", "3", "--max-batch-size", "4", "--batch-step", "2", "--clippy", "--table",
              "--csv", str(tmp_path / "t.csv"), "--json", str(tmp_path / "t.json")])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == report.HEADER
    rows = _table_rows(p.stdout)
    assert len(rows) == 2 and lines[1:3] == rows
    assert [int(r.split(",")[0]) for r in rows] == [1, 3]
    assert "Recommended minibatch-size for this net:" in p.stdout
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["timer"] == "wall" and doc["extra_timer"] is None and doc["backend"] == "cpu" and doc["batches"] == 3
    assert "wall-clock timing around encoding + evaluation" in p.stderr
    assert len(doc["warmup_ms"]) == 2
    for row, d in zip(rows, doc["sizes"]):
        t = np.array(d["times_ms"])
        assert len(t) == 2  # 3 batches, the first excluded
        assert float(row.split(",")[1]) == pytest.approx(d["size"] * 2 / t.sum() * 1000, abs=0.5)
        assert d["mean_nps"] == pytest.approx(d["size"] * 2 / t.sum() * 1000, rel=1e-9)
    assert set(doc["clippy"]) == {"tournament", "rapid", "bullet"}
    with open(tmp_path / "t.csv") as f:
        assert len(list(csv.reader(f))) == 3


def test_cli_default_backend_is_auto():
    from lc0_rocm.backends.factory import gpu_usable

    ok, why = gpu_usable()
    if ok:
        pytest.skip("a GPU is usable here")
    p = _run(["--batches", "2", "--max-batch-size", "1"])
    assert p.returncode == 0, p.stderr
    assert f"lc0-rocm: {why}; using the cpu backend" in p.stderr.splitlines()
    assert ", backend cpu, wall-clock timing" in p.stderr
    assert "1 batch sizes x 2 batches: at least" in p.stderr
    assert p.stdout.startswith("Benchmark batch size 1 with inference average time ") and p.stdout.count("\n") == 1


def test_tools_script_header_only_once():
    p = _run(["-b", "cpu", "--batches", "2", "--start-batch-size", "2", "--max-batch-size", "2", "--header-only-once=true",
              "--clippy=false", "--table"],
             script=ROOT / "tools" / "backendbench.py")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == report.HEADER and len(_table_rows(p.stdout)) == 1
    assert "Recommended" not in p.stdout


@pytest.mark.parametrize("args", [
    ["--max-batch-size", "2000"],
    ["--batch-step", "0"],
    ["--batches", "1"],
    ["--batches", "many"],
    ["--start-batch-size", "8", "--max-batch-size", "4"],
    ["--fen", "not a fen"],
    ["--weights", "/nonexistent/net.pb.gz"],
    ["--backend", "nosuch"],
    ["--backend-opts", "garbage"],
    ["--csv", "/nonexistent/dir/out.csv"],
    ["--clippy=maybe"],
    ["--device-time"],  # the cpu backend has no device timer
    ["--device-time=maybe"],
], ids=lambda a: " ".join(a))
def test_bad_arguments_give_one_line_error(args):
    p = _run(["--backend", "cpu", "--batches", "2", "--max-batch-size", "2"] + args)
    assert p.returncode == 1
    assert p.stdout == ""
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lc0-rocm: error:"), p.stderr


def test_plot_without_matplotlib_is_one_line_error(tmp_path):
    try:
        import matplotlib  # noqa: F401

        pytest.skip("matplotlib is installed")
    except ImportError:
        pass
    p = _run(["--backend", "cpu", "--batches", "2", "--max-batch-size", "1", "--plot", str(tmp_path / "x.png")])
    assert p.returncode == 1 and p.stderr.strip() == "lc0-rocm: error: --plot needs matplotlib: pip install 'lc0-rocm[plot]'"
    assert not (tmp_path / "x.png").exists()
