"""analyse's start-up overlapped: the reader and the workers prepare games while the backend is still
opening (`pipeline.Opening`), the records equal a run whose backend was open first, a backend that
sees another input format than the net file's is still fed the right planes, and a backend that fails
to open leaves no output file behind."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import chess
import chess.pgn

from lc0_rocm.analyse import pipeline
from lc0_rocm.analyse.pipeline import Opening, RunConfig, run_raw
from lc0_rocm.analyse.reader import Selection
from lc0_rocm.analyse.work import FinishConfig, WorkConfig
from lc0_rocm.api import load_for_backend, open_backend

GAMES = ('[Event "a"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *\n\n[Event "b"]\n\n1. d4 d5 2. c4 e6 3. Nc3 Nf6 *\n\n'
         '[Event "c"]\n\n1. c4 c5 *\n')


def _run(evaluator, pgn, input_format: int) -> str:
    cfg = RunConfig([str(pgn)], "auto", WorkConfig("raw", Selection(), input_format, 5),
                    FinishConfig("raw", 5, frozenset({"jsonl"})), batch_size=4, games_per_unit=1)
    text = []
    run_raw(evaluator, cfg, lambda unit, outs: text.extend(go.jsonl for go in outs))
    return "".join(text)


def test_games_are_prepared_while_the_backend_opens(tmp_path, monkeypatch):
    pgn = tmp_path / "g.pgn"
    pgn.write_text(GAMES)
    net = load_for_backend(None)
    times: dict = {}
    prepare_unit = pipeline.prepare_unit

    def timed_prepare(unit, cfg):
        times.setdefault("prepared", time.monotonic())
        return prepare_unit(unit, cfg)

    def slow_open():
        time.sleep(1.0)  # a GPU's start: net conversion, preparation, the start-position check
        ev = open_backend(net, "cpu", check=True)
        times["open"] = time.monotonic()
        return ev

    monkeypatch.setattr(pipeline, "prepare_unit", timed_prepare)
    opening = Opening(slow_open)
    try:
        overlapped = _run(opening, pgn, net.input_format)
    finally:
        opening.close()
    assert times["prepared"] < times["open"] - 0.5
    with open_backend(net, "cpu") as ev:
        assert overlapped == _run(ev, pgn, net.input_format) and overlapped.count("\n") == 14


def test_a_backend_with_another_input_format_gets_its_planes(tmp_path):
    """The random backend answers for input format 1 (its `input_mode`) whatever the net file says: the
    games prepared for the file's format while it opened are prepared again, and the records are those
    of a run prepared for format 1 from the start (the random backend's outputs hash the planes)."""
    pgn = tmp_path / "g.pgn"
    pgn.write_text(GAMES)
    net = load_for_backend(None)
    assert net.input_format != 1
    opening = Opening(lambda: open_backend(net, "random", "input_mode=1", check=True))
    try:
        text = _run(opening, pgn, net.input_format)
    finally:
        opening.close()
    with open_backend(net, "random", "input_mode=1") as ev:
        assert ev.net.input_format == 1
        assert text == _run(ev, pgn, 1)
        # the API's own evaluation of a position of the first game (its history included)
        board = chess.Board()
        for san in ("e4", "e5", "Nf3"):
            board.push_san(san)
        record = json.loads(text.splitlines()[3])
        assert record["fen"] == board.fen() and record["q"] == ev.evaluate(board).q


def test_a_backend_that_fails_to_open_leaves_no_output(tmp_path):
    pgn = tmp_path / "g.pgn"
    pgn.write_text(GAMES)
    out = tmp_path / "o.jsonl"
    p = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "analyse", str(pgn), "--backend", "random",
                        "--backend-opts", "input_mode=7", "--jsonl", str(out), "--csv", str(tmp_path / "o.csv")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [pgn]
    assert chess.pgn.read_game(open(pgn)) is not None  # the input is untouched


def test_raw_mode_opens_its_backend_with_early_start(tmp_path, monkeypatch):
    """The multi-GPU backend's early start (the first batch on the first GPU ready): raw mode asks for it
    unless the user chose; the options still parse to the user's own plus it."""
    from lc0_rocm import api
    from lc0_rocm.analyse import driver
    from lc0_rocm.backends.options import parse_backend_options
    from lc0_rocm.commands.analyse import build_request, configure

    assert pipeline.early_start_options("") == "early_start=true"
    assert parse_backend_options(pipeline.early_start_options("gpus=0,1")) == {"gpus": "0,1", "early_start": "true"}
    assert pipeline.early_start_options("gpus=0:1,early_start=false") == "gpus=0:1,early_start=false"
    pgn = tmp_path / "g.pgn"
    pgn.write_text(GAMES)
    seen = []
    real_open = api.open_backend

    def spy(net, backend, options="", **kw):
        seen.append(options)
        return real_open(net, backend, options, **kw)

    monkeypatch.setattr(api, "open_backend", spy)
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args([str(pgn), "--backend", "random", "--backend-opts", "input_mode=1", "--workers", "0",
                              "--jsonl", str(tmp_path / "o.jsonl"), "--no-progress"])
    assert driver.run(build_request(args)) == 0
    assert seen == ["input_mode=1,early_start=true"]
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 6 + 6 + 2


def test_devices_open_early_only_for_gpu_backends():
    from lc0_rocm.backends.factory import open_devices_early

    for name in ("cpu", "random", "trivial"):
        assert open_devices_early(name, "") is None
    assert open_devices_early("rocm-fp16", "gpus=x") is None  # the backend's own start says what is wrong
    for name, opts in (("rocm", ""), ("rocm-fp16", "gpus=0:1"), ("auto", "gpu=0")):
        thread = open_devices_early(name, opts)
        assert thread is not None and thread.daemon
        thread.join(60)  # without a GPU it ends at once; with one, the devices are open (tests/gpu)
        assert not thread.is_alive()
