"""`lc0-rocm benchmark` and `lc0-rocm bench`: lc0 0.32's search benchmarks (`src/tools/benchmark.cc`).

The engine (the options and flags of `lc0-rocm --help`, with lc0's benchmark defaults Threads 2 and
NNCacheSize 200000) searches each of lc0's benchmark positions (Stockfish's) from a fresh tree, for
--movetime ms (benchmark: 10000, bench: 500; -1: no limit) and/or --nodes visits (-1: no limit), with
no other stopper (no smart pruning, no move overhead), the NN cache kept across positions. It prints
what lc0 prints: per position a `Position: i/N <fen>` line, a `Benchmark time T ms, N nodes, NPS nps,
move M` line per `info` of the search and its `bestmove`, then the total time (ms, each position's
wall time truncated), the playouts searched and nodes/second = round(1000 playouts / (time + 1)).
So `lc0 bench -w NET` and `lc0-rocm bench -w NET` print numbers that go side by side. The net is
loaded and the search compiled before the first position's clock starts.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

# lc0's `Benchmark::positions` (src/tools/benchmark.h): "Same positions as Stockfish uses."
POSITIONS = (
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "rq3rk1/ppp2ppp/1bnpb3/3N2B1/3NP3/7P/PPPQ1PP1/2KR3R w - - 7 14 moves d4e6",
    "r1bq1r1k/1pp1n1pp/1p1p4/4p2Q/4Pp2/1BNP4/PPP2PPP/3R1RK1 w - - 2 14 moves g2g4",
    "r3r1k1/2p2ppp/p1p1bn2/8/1q2P3/2NPQN2/PPP3PP/R4RK1 b - - 2 15",
    "r1bbk1nr/pp3p1p/2n5/1N4p1/2Np1B2/8/PPP2PPP/2KR1B1R w kq - 0 13",
    "r1bq1rk1/ppp1nppp/4n3/3p3Q/3P4/1BP1B3/PP1N2PP/R4RK1 w - - 1 16",
    "4r1k1/r1q2ppp/ppp2n2/4P3/5Rb1/1N1BQ3/PPP3PP/R5K1 w - - 1 17",
    "2rqkb1r/ppp2p2/2npb1p1/1N1Nn2p/2P1PP2/8/PP2B1PP/R1BQK2R b KQ - 0 11",
    "r1bq1r1k/b1p1npp1/p2p3p/1p6/3PP3/1B2NN2/PP3PPP/R2Q1RK1 w - - 1 16",
    "3r1rk1/p5pp/bpp1pp2/8/q1PP1P2/b3P3/P2NQRPP/1R2B1K1 b - - 6 22",
    "r1q2rk1/2p1bppp/2Pp4/p6b/Q1PNp3/4B3/PP1R1PPP/2K4R w - - 2 18",
    "4k2r/1pb2ppp/1p2p3/1R1p4/3P4/2r1PN2/P4PPP/1R4K1 b - - 3 22",
    "3q2k1/pb3p1p/4pbp1/2r5/PpN2N2/1P2P2P/5PP1/Q2R2K1 b - - 4 26",
    "6k1/6p1/6Pp/ppp5/3pn2P/1P3K2/1PP2P2/3N4 b - - 0 1",
    "3b4/5kp1/1p1p1p1p/pP1PpP1P/P1P1P3/3KN3/8/8 w - - 0 1",
    "2K5/p7/7P/5pR1/8/5k2/r7/8 w - - 0 1 moves g5g6 f3e3 g6g5 e3f3",
    "8/6pk/1p6/8/PP3p1p/5P2/4KP1q/3Q4 w - - 0 1",
    "7k/3p2pp/4q3/8/4Q3/5Kp1/P6b/8 w - - 0 1",
    "8/2p5/8/2kPKp1p/2p4P/2P5/3P4/8 w - - 0 1",
    "8/1p3pp1/7p/5P1P/2k3P1/8/2K2P2/8 w - - 0 1",
    "8/pp2r1k1/2p1p3/3pP2p/1P1P1P1P/P5KR/8/8 w - - 0 1",
    "8/3p4/p1bk3p/Pp6/1Kp1PpPp/2P2P1P/2P5/5B2 b - - 0 1",
    "5k2/7R/4P2p/5K2/p1r2P1p/8/8/8 b - - 0 1",
    "6k1/6p1/P6p/r1N5/5p2/7P/1b3PP1/4R1K1 w - - 0 1",
    "1r3k2/4q3/2Pp3b/3Bp3/2Q2p2/1p1P2P1/1P2KP2/3N4 w - - 0 1",
    "6k1/4pp1p/3p2p1/P1pPb3/R7/1r2P1PP/3B1P2/6K1 w - - 0 1",
    "8/3p3B/5p2/5P2/p7/PP5b/k7/6K1 w - - 0 1",
    "5rk1/q6p/2p3bR/1pPp1rP1/1P1Pp3/P3B1Q1/1K3P2/R7 w - - 93 90",
    "4rrk1/1p1nq3/p7/2p1P1pp/3P2bp/3Q1Bn1/PPPB4/1K2R1NR w - - 40 21",
    "r3k2r/3nnpbp/q2pp1p1/p7/Pp1PPPP1/4BNN1/1P5P/R2Q1RK1 w kq - 0 16",
    "3Qb1k1/1r2ppb1/pN1n2q1/Pp1Pp1Pr/4P2p/4BP2/4B1R1/1R5K b - - 11 40",
)
# lc0's Benchmark::Run: (movetime ms, number of positions) of `benchmark` and of `bench`
DEFAULTS = {"benchmark": (10000, 34), "bench": (500, 10)}
ENGINE_DEFAULTS = [("Threads", 2), ("NNCacheSize", 200000)]  # lc0's benchmark defaults


def _bench_specs() -> tuple:
    """The benchmark's own flags (lc0's), parsed by engine_options' flag parser beside the engine's."""
    from ..engine_options import Spec

    return (Spec("nodes", "spin", -1, "nodes", min=-1, max=999999999),
            Spec("movetime", "spin", -1, "movetime", min=-1, max=999999999),
            Spec("num_positions", "spin", 1, "num-positions", min=1, max=len(POSITIONS)),
            Spec("fen", "string", "", "fen"))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("flags", nargs=argparse.REMAINDER, help="--nodes, --movetime, --fen, --num-positions and "
                                                                "the engine's flags (lc0-rocm --help)")


@dataclasses.dataclass
class BenchSettings:
    nodes: int = -1
    movetime: int = DEFAULTS["benchmark"][0]
    fen: str = ""
    num_positions: int = DEFAULTS["benchmark"][1]

    def positions(self) -> list[str]:
        return [self.fen] if self.fen else list(POSITIONS[:self.num_positions])


def parse_args(command: str, argv: list[str]) -> tuple[BenchSettings, list]:
    """(the benchmark's own settings, the engine's (option, value) settings from the flags and the
    config file), with --help in the second's extras: (bench, settings, extra). OptionError on a bad
    flag or value."""
    from ..engine_options import settings_from_command_line

    movetime, count = DEFAULTS[command]
    b = BenchSettings(movetime=movetime, num_positions=count)
    specs = _bench_specs()
    names = {s.name for s in specs}
    settings, extra = settings_from_command_line(argv, specs)
    for name, value in settings:
        if name in names:
            setattr(b, name, value.strip() if isinstance(value, str) else value)
    return b, [(n, v) for n, v in settings if n not in names], extra


def main(command: str, argv: list[str], out=None) -> int:
    """`lc0-rocm benchmark|bench [flags]`; the report goes to `out` (stdout), notes to stderr."""
    from .. import engine_options as eo
    from ..encoding.position import parse_position
    from ..engine import Engine, EngineError
    from ..errors import Lc0RocmError, PositionError

    out = sys.stdout if out is None else out
    try:
        bench, settings, extra = parse_args(command, argv)
    except eo.OptionError as e:
        raise Lc0RocmError(f"{command}: {e}") from None
    if extra["help"]:
        movetime, count = DEFAULTS[command]
        print(f"Usage: lc0-rocm {command} [flags...]\n\n{__doc__.split(chr(10))[0]}\n\n"
              f"  --nodes=-1..999999999        visits per position (default -1: no limit)\n"
              f"  --movetime=-1..999999999     ms per position (default {movetime}; -1: no limit)\n"
              f"  --num-positions=1..{len(POSITIONS)}        how many of lc0's positions (default {count})\n"
              f"  --fen=FEN                    one position instead (FEN [moves ...])\n"
              f"and the engine's flags (lc0-rocm --help); Threads defaults to 2 and NNCacheSize to 200000.")
        return 0
    quiet = _ErrorsOnly()
    engine = Engine(quiet)
    try:
        engine.configure(ENGINE_DEFAULTS + settings)
    except EngineError as e:
        raise Lc0RocmError(f"{command}: {e}") from None
    positions = []
    for text in bench.positions():
        fen, _, moves = text.partition(" moves ")
        try:
            positions.append((text, fen.strip(), moves.split(), parse_position(fen.strip(), moves.split())))
        except PositionError as e:
            raise Lc0RocmError(f"{command}: {e}") from None
    if not engine.ensure_net():
        raise Lc0RocmError(f"{command}: {quiet.last_error or 'cannot load the network'}")
    try:
        return run_positions(engine, positions, bench, out)
    finally:
        engine.close()


def run_positions(engine, positions: list, bench: BenchSettings, out) -> int:
    """Search each (text, fen, moves, History) as lc0's Benchmark::Run does and print its report."""
    import chess

    from ..search.factory import GamePosition, new_search
    from ..search.limits import NODE_LIMIT_MAX, GoParams, SearchLimits

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    total_ms, total_playouts = 0, 0
    for k, (text, fen, moves, history) in enumerate(positions, 1):
        say(f"\nPosition: {k}/{len(positions)} {text}")
        position = GamePosition(history, moves, fen)
        params = dataclasses.replace(engine.search_params(GoParams(), position.board.turn == chess.BLACK),
                                     smart_pruning_factor=0.0)
        limits = SearchLimits(deadline_ms=float(bench.movetime) if bench.movetime >= 0 else None,
                              nodes=bench.nodes if bench.nodes >= 0 else NODE_LIMIT_MAX)
        start = time.monotonic()
        search = new_search(position, engine.evaluator, params, limits, has_wdl=engine.net.has_wdl,
                            has_mlh=engine.net.has_moves_left,
                            on_info=lambda lines: [say(benchmark_line(x)) for x in lines[:1] if not x.comment],
                            on_bestmove=lambda best, ponder: say(f"bestmove {best.uci() if best else '(none)'}"))
        search.run()
        if search.error is not None:
            raise search.error
        total_ms += int((time.monotonic() - start) * 1000)
        total_playouts += search.playouts
    say(f"\n===========================\nTotal time (ms) : {total_ms}\nNodes searched  : {total_playouts}\n"
        f"Nodes/second    : {int(1000.0 * total_playouts / (total_ms + 1) + 0.5)}")  # std::lround
    return 0


def benchmark_line(info) -> str:
    """lc0's Benchmark::OnInfo line for an `info` of the search."""
    line = f"Benchmark time {info.time_ms} ms, {info.nodes} nodes, {info.nps if info.nps is not None else -1} nps"
    return line + (f", move {info.pv[0].uci()}" if info.pv else "")


class _ErrorsOnly:
    """The engine's responder during a benchmark: nothing is shown but the notes (stderr); the last
    error is kept for the one-line error."""

    last_error = ""

    def error(self, text: str) -> None:
        self.last_error = text

    def note(self, text: str) -> None:
        print(f"lc0-rocm: {text}", file=sys.stderr, flush=True)

    def infos(self, lines) -> None:
        pass

    instamove_info = info_string = infos

    def policy_move(self, best, cp, ms) -> None:
        pass

    def bestmove(self, best, ponder) -> None:
        pass
