#!/usr/bin/env python3
"""Soak: many self-play games in ONE engine process, and the engine's memory after each game.

The engine is the product's UCI engine (default `python3 -m lc0_rocm.cli uci`, or any command given
with --engine-cmd), started once through python-chess (`chess.engine.SimpleEngine.popen_uci`). It
plays --games games against itself; python-chess sends `ucinewgame` before each one. Every game
opens with 4-8 random legal plies drawn from a seeded RNG (so games differ and a run is repeatable),
then the engine plays both sides with `go nodes K` (--nodes, default 32) or `go movetime MS`. A game
ends by python-chess's rules, claimable draws included (`board.outcome(claim_draw=True)`), or is
adjudicated a draw at --max-plies (default 300, opening plies included). A move that is not legal,
no move at all, or a move without a search (no `info ... nodes N` before `bestmove`, or an `info
string error` last: the engine's fallback move after a failure) stops the run (exit code 1).

After each game the tool samples the resident memory of the engine's process tree (psutil when
installed, else VmRSS of /proc/PID/status) and, when the backend is not `cpu`, the GPU memory in use
on the device (total - free from hipMemGetInfo through hip-python, in this process; `-` when
hip-python or a device is missing). Device memory is the whole card's, so it includes this
process's own context: a constant offset.

Output: a CSV (--out; columns game, plies, result, seconds, rss_mb, gpu_mb, opening_plies, end), one
line per game on stderr (unless --quiet), and a summary on stdout: RSS before the first game, at
N/2 and at the end, and least-squares slopes in MB/game over games [N/2, N] and over all games
(RSS, and GPU memory when sampled). With --max-slope S the exit code is 1 when the second-half
RSS (or GPU) slope is >= S. --pgn FILE writes the games.

    python3 tools/soak.py --games 1000 --nodes 32 --backend cpu --out /tmp/soak.csv --max-slope 0.005
    python3 tools/soak.py --games 200 --backend rocm-fp16 --weights NET --nodes 32 --out soak-gpu.csv

Flags: --games, --weights (default: the engine's own default net), --backend (a name of
engine_options.BACKENDS; default auto), --nodes | --movetime, --option NAME=VALUE (an engine option;
repeatable), --engine-cmd "CMD ARGS" (shell-style words), --seed, --max-plies, --out, --pgn,
--max-slope, --quiet, --no-newgame (`ucinewgame` before the first game only, as from a GUI that never
sends it: the NN cache is then never emptied and fills up to NNCacheSize). A bad flag is one line on
stderr and exit code 2; an engine that does not start or get ready, exit code 1.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Optional

import chess
import chess.engine
import chess.pgn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from lc0_rocm.engine_options import BACKENDS  # noqa: E402  (the one list of backend names)

COLUMNS = ["game", "plies", "result", "seconds", "rss_mb", "gpu_mb", "opening_plies", "end"]
MB = 1_000_000


# ---- memory probes

def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
    except OSError:
        pass
    return out


def _vmrss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes(pid: int, descendants: bool = True) -> int:
    """Resident memory of `pid` and (`descendants`) its child processes, theirs too (a wrapper
    script's engine counts)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            p = psutil.Process(pid)
            procs = [p] + (p.children(recursive=True) if descendants else [])
            return sum(q.memory_info().rss for q in procs)
        except psutil.Error:
            return 0
    total, todo, seen = 0, [pid], set()
    while todo:
        q = todo.pop()
        if q in seen:
            continue
        seen.add(q)
        total += _vmrss_bytes(q)
        if descendants:
            todo.extend(_children(q))
    return total


class GpuMemory:
    """Device memory in use (total - free) through hip-python's hipMemGetInfo; `available` is False
    without hip-python or a device (`why` says which), and `used()` then returns None."""

    def __init__(self):
        self._hip = None
        self.why = ""
        try:
            from hip import hip
        except Exception as e:  # no hip-python, or no HIP runtime library to load
            self.why = f"hip-python not usable: {type(e).__name__}: {e}"
            return
        try:
            err, _free, _total = hip.hipMemGetInfo()
        except Exception as e:
            self.why = f"hipMemGetInfo failed: {type(e).__name__}: {e}"
            return
        if not self._ok(err):
            self.why = f"hipMemGetInfo: {err}"
            return
        self._hip = hip

    @staticmethod
    def _ok(err) -> bool:
        return int(getattr(err, "value", err)) == 0  # hipSuccess

    @property
    def available(self) -> bool:
        return self._hip is not None

    def used(self) -> Optional[int]:
        if self._hip is None:
            return None
        err, free, total = self._hip.hipMemGetInfo()
        if not self._ok(err):
            return None
        return int(total) - int(free)


# ---- numbers

def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys on xs (0 for fewer than two points)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def second_half(rows: list[dict], key: str) -> tuple[list[float], list[float]]:
    """(games, values) of the games N/2 .. N that have a value under `key`."""
    n = len(rows)
    pts = [(r["game"], r[key]) for r in rows if r["game"] >= n // 2 and r[key] is not None]
    return [float(g) for g, _ in pts], [float(v) for _, v in pts]


def all_games(rows: list[dict], key: str) -> tuple[list[float], list[float]]:
    pts = [(r["game"], r[key]) for r in rows if r[key] is not None]
    return [float(g) for g, _ in pts], [float(v) for _, v in pts]


# ---- games

def random_opening(rng: random.Random, board: chess.Board) -> int:
    """Play 4-8 random legal plies on `board` (fewer if the game ends); returns how many."""
    want = rng.randint(4, 8)
    done = 0
    while done < want and not board.is_game_over(claim_draw=True):
        moves = sorted(board.legal_moves, key=lambda m: m.uci())
        board.push(rng.choice(moves))
        done += 1
    return done


def play_game(engine: chess.engine.SimpleEngine, rng: random.Random, limit: chess.engine.Limit,
              max_plies: int, game: Optional[object] = None) -> tuple[chess.Board, int, str, str]:
    """One self-play game; returns (board, opening plies, result, how it ended). Raises RuntimeError
    when the engine gives no move, an illegal one or one without a search. `game`: python-chess's
    game identity (a new one, the default, makes it send `ucinewgame` before the first move)."""
    board = chess.Board()
    opening = random_opening(rng, board)
    if game is None:
        game = object()
    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            return board, opening, outcome.result(), outcome.termination.name.lower()
        if len(board.move_stack) >= max_plies:
            return board, opening, "1/2-1/2", "max_plies"
        try:
            res = engine.play(board, limit, game=game, info=chess.engine.INFO_BASIC)
        except chess.engine.EngineError as e:  # python-chess refuses an illegal bestmove
            raise RuntimeError(f"engine error at ply {len(board.move_stack)} ({board.fen()}): {e}") from None
        mv = res.move
        if mv is None or mv not in board.legal_moves:
            raise RuntimeError(f"engine answered {mv} at ply {len(board.move_stack)} ({board.fen()}): not a legal move")
        if not res.info.get("nodes") or str(res.info.get("string", "")).startswith("error"):
            # a move without a search (the engine's fallback after an error) would soak nothing
            why = res.info.get("string") or "no info with nodes before bestmove"
            raise RuntimeError(f"engine did not search at ply {len(board.move_stack)} ({board.fen()}): {why}")
        board.push(mv)


def _fmt(v: Optional[float], digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def summarize(rows: list[dict], rss0: float, gpu0: Optional[float], max_slope: Optional[float]) -> tuple[list[str], bool]:
    """The summary lines of a run and whether it passes --max-slope (RSS and, when sampled, GPU
    memory: the least-squares slope over games N/2 .. N below `max_slope`)."""
    n = len(rows)
    if not n:
        return ["no game finished"], False
    results = {k: sum(r["result"] == k for r in rows) for k in ("1-0", "0-1", "1/2-1/2")}
    mid = rows[max(0, n // 2 - 1)]
    out = [f"games {n}, {sum(r['plies'] for r in rows)} plies; 1-0 {results['1-0']}, 0-1 {results['0-1']}, "
           f"draws {results['1/2-1/2']}",
           f"rss MB: before game 1 {rss0:.1f}, after game {mid['game']} {mid['rss_mb']:.1f}, "
           f"after game {n} {rows[-1]['rss_mb']:.1f}"]
    ok = True
    keys = [("rss_mb", "rss")] + ([("gpu_mb", "gpu")] if gpu0 is not None else [])
    for key, label in keys:
        s_half = slope(*second_half(rows, key))
        s_all = slope(*all_games(rows, key))
        out.append(f"{label} slope MB/game: games {n // 2}-{n} {s_half:+.5f}, all games {s_all:+.5f}")
        if max_slope is not None and s_half >= max_slope:
            out.append(f"FAIL: {label} slope {s_half:.5f} MB/game over games {n // 2}-{n} >= {max_slope}")
            ok = False
    if gpu0 is not None:
        out.append(f"gpu MB: before game 1 {gpu0:.1f}, after game {mid['game']} {mid['gpu_mb']:.1f}, "
                   f"after game {n} {rows[-1]['gpu_mb']:.1f}")
    return out, ok


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line on stderr, exit code 2
        print(f"soak.py: error: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    ap = _Parser(prog="soak.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, required=True)
    ap.add_argument("--weights", default=None)
    ap.add_argument("--backend", default="auto", choices=BACKENDS)
    lim = ap.add_mutually_exclusive_group()
    lim.add_argument("--nodes", type=int, default=None)
    lim.add_argument("--movetime", type=int, default=None, help="milliseconds per move")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--engine-cmd", default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-plies", type=int, default=300)
    ap.add_argument("--out", default=None)
    ap.add_argument("--pgn", default=None)
    ap.add_argument("--max-slope", type=float, default=None)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--no-newgame", action="store_true", help="never send ucinewgame (one game identity)")
    a = ap.parse_args(argv)
    if a.games < 1:
        ap.error("--games must be at least 1")
    if a.nodes is not None and a.nodes < 1 or a.movetime is not None and a.movetime < 1:
        ap.error("--nodes and --movetime must be positive")
    for o in a.option:
        if "=" not in o:
            ap.error(f"--option {o!r}: expected NAME=VALUE")
    if a.weights is not None and not Path(a.weights).is_file():
        ap.error(f"--weights {a.weights}: no such file")
    return a


def main(argv: Optional[list[str]] = None) -> int:
    a = parse_args(argv)
    cmd = shlex.split(a.engine_cmd) if a.engine_cmd else [sys.executable, "-m", "lc0_rocm.cli", "uci"]
    limit = chess.engine.Limit(time=a.movetime / 1000.0) if a.movetime else chess.engine.Limit(nodes=a.nodes or 32)
    options: dict[str, str] = {}
    if a.weights is not None:
        options["WeightsFile"] = str(Path(a.weights).resolve())
    options["Backend"] = a.backend
    for o in a.option:
        name, value = o.split("=", 1)
        options[name.strip()] = value.strip()
    gpu = GpuMemory() if a.backend != "cpu" else None
    gpu_on = gpu is not None and gpu.available
    if gpu is not None and not gpu_on:
        print(f"gpu memory not sampled ({gpu.why})", flush=True)
    rng = random.Random(a.seed)
    rows: list[dict] = []
    pgn_out = open(a.pgn, "w") if a.pgn else None
    csv_file = open(a.out, "w", newline="") if a.out else None
    writer = csv.writer(csv_file) if csv_file else None
    if writer:
        writer.writerow(COLUMNS)
    failure = None
    same_game = object() if a.no_newgame else None
    t_run = time.monotonic()
    try:
        engine = chess.engine.SimpleEngine.popen_uci(cmd, timeout=600, cwd=str(REPO), stderr=sys.stderr)
    except (OSError, chess.engine.EngineError, TimeoutError) as e:
        print(f"FAIL: cannot start the engine {' '.join(cmd)}: {e}")
        return 1
    try:
        try:
            engine.configure(options)
            engine.ping()  # isready: the net is loaded and the search compiled/loaded before the baseline
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError) as e:
            print(f"FAIL: the engine did not get ready with {options}: {e}")
            return 1
        pid = engine.protocol.transport.get_pid()
        rss0 = rss_bytes(pid) / MB
        gpu0 = gpu.used() / MB if gpu_on else None
        print(f"engine pid {pid}: {' '.join(cmd)}; options {options}; limit "
              f"{'movetime ' + str(a.movetime) + ' ms' if a.movetime else 'nodes ' + str(a.nodes or 32)}; "
              f"rss before game 1: {rss0:.1f} MB" + (f", gpu {gpu0:.1f} MB" if gpu_on else ""), flush=True)
        for g in range(1, a.games + 1):
            t0 = time.monotonic()
            try:
                board, opening, result, end = play_game(engine, rng, limit, a.max_plies, same_game)
            except (RuntimeError, chess.engine.EngineTerminatedError) as e:
                failure = f"game {g}: {e}"
                break
            secs = time.monotonic() - t0
            rss = rss_bytes(pid) / MB
            gmb = gpu.used() / MB if gpu_on else None
            row = {"game": g, "plies": len(board.move_stack), "result": result, "seconds": secs,
                   "rss_mb": rss, "gpu_mb": gmb, "opening_plies": opening, "end": end}
            rows.append(row)
            if writer:
                writer.writerow([g, row["plies"], result, f"{secs:.2f}", f"{rss:.2f}", _fmt(gmb, 2), opening, end])
                csv_file.flush()
            if pgn_out:
                pg = chess.pgn.Game.from_board(board)
                pg.headers.update({"Event": "lc0-rocm soak", "Round": str(g), "White": "lc0-rocm",
                                   "Black": "lc0-rocm", "Result": result, "Termination": end,
                                   "Opening": " ".join(m.uci() for m in board.move_stack[:opening])})
                print(pg, file=pgn_out, end="\n\n", flush=True)
            if not a.quiet:
                print(f"game {g}: {result} {end} in {row['plies']} plies, {secs:.1f} s, rss {rss:.1f} MB"
                      + (f", gpu {gmb:.1f} MB" if gmb is not None else ""), file=sys.stderr, flush=True)
    finally:
        try:
            engine.quit()
        except Exception:
            pass
        if csv_file:
            csv_file.close()
        if pgn_out:
            pgn_out.close()

    lines, ok = summarize(rows, rss0, gpu0, a.max_slope)
    print(f"{len(rows)} games in {time.monotonic() - t_run:.0f} s")
    for line in lines:
        print(line)
    if failure:
        print(f"FAIL: {failure}")
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
