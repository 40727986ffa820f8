#!/usr/bin/env python3
"""Nodes per second of whole UCI engines, side by side in one run: ours (`lc0-rocm uci`) against lc0.

Role: the end-to-end speed comparison. Each engine is driven as a GUI would drive it (python-chess,
`chess.engine.SimpleEngine.popen_uci`), so the numbers include everything an engine does per node —
search, encoding, NN cache, batching and the backend — not just the network's raw throughput
(`lc0-rocm backendbench` and `tools/search_bench.py` measure those parts).

For each repeat, each bench position and each engine (engines alternate, so drift hits all alike):
  1. a FRESH engine process; the per-engine UCI options are set, then `isready` (the time from start
     to `readyok` is reported separately, never in the nps);
  2. a warm-up search (`go nodes --warmup`, default 1000) on an unrelated position (1.d4 Nf6 2.c4 e6
     3.Nc3 Bb4), so that net loading (lc0 loads its net at the first `go`, not at `isready`), kernel
     compilation, autotuning and allocator growth all happen before the clock;
  3. `ucinewgame` + `isready`, then the measured `go nodes --nodes` (default 100000) on the bench
     position: the engine's own last reported `nodes`, `nps` and `time`, and our wall clock from
     sending `go` to receiving `bestmove` (wall nps = reported nodes / wall seconds).
Bench positions: startpos; a Ruy Lopez middlegame (1.e4 e5 2.Nf3 Nc6 3.Bb5 a6 4.Ba4 Nf6 5.O-O Be7);
"kiwipete" (r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1).

  python3 tools/engine_bench.py \\
      --engine lc0=".dev/lc0/lc0 --backend=cuda-fp16 --weights=/tmp/t82.pb.gz" \\
      --engine ours="python3 -m lc0_rocm.cli uci -w /tmp/t82.pb.gz -b rocm-fp16" \\
      --option '*:SmartPruningFactor=0' --option ours:MinibatchSize=256 \\
      --nodes 100000 --json bench.json

Several net sizes in one run (lc0's table in docs/perf.md: Maia, t1, T82, BT4): `--nets
maia=maia.pb.gz,t1=t1.pb.gz,...` runs every engine on every net, `{net}` in an engine's CMD standing for
the net's path, and ends with one table of mean wall nps per net and engine with the ratios to the first:

  python3 tools/engine_bench.py --nets maia=maia-1500.pb.gz,t1=t1.pb.gz,t82=t82.pb.gz,bt4=bt4.pb.gz \
      --engine lc0=".dev/lc0/lc0 --backend=cuda-fp16 --weights={net}" \
      --engine ours="python3 -m lc0_rocm.cli uci -w {net} -b rocm-fp16" --nodes 200000 --repeat 1

--engine NAME=CMD (repeatable; CMD is split with shlex and run without a shell); --option
NAME:KEY=VALUE sets a UCI option for engine NAME (`*` for every engine; python-chess checks it
against the options the engine declares). Output: a markdown table (engine, position, nodes,
engine-reported nps, wall nps, times, bestmove), the last `info string` each engine printed during
the measured search (e.g. our `info string batches ...` summary), per-engine mean nps with the ratio
to the first engine, and with --json FILE every number, the engines' ids and options, and the settings.

What to compare: the engines' mean wall nps on the same net, same card, same run (first row of the
summary is the reference). Engine-reported nps can count differently (lc0 divides the playouts of this
search by its own search time, which starts after `go` is parsed); wall nps is the same yardstick for
all. Smart pruning stops a search before its node limit when the best move cannot change: pass
`--option '*:SmartPruningFactor=0'` so that every search visits its full node count.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import math
import os
import platform
import shlex
import signal
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass, field

import chess
import chess.engine

# (name, FEN or None for the start position, UCI moves from it)
POSITIONS: list[tuple[str, str | None, list[str]]] = [
    ("startpos", None, []),
    ("ruy-lopez", None, "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6 e1g1 f8e7".split()),
    ("kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", []),
]
# Warm-up position: shares no early tree nodes (and so no NN-cache entries) with the bench positions.
WARMUP_POSITION: tuple[str | None, list[str]] = (None, "d2d4 g8f6 c2c4 e7e6 b1c3 f8b4".split())


@dataclass
class EngineSpec:
    name: str
    cmd: list[str]
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class RunResult:
    engine: str
    position: str
    repeat: int
    ok: bool
    error: str | None = None
    nodes: int | None = None            # the engine's last reported `nodes`
    engine_nps: int | None = None       # the engine's last reported `nps`
    engine_time_s: float | None = None  # the engine's last reported `time`
    wall_s: float | None = None         # `go` sent -> `bestmove` received
    wall_nps: float | None = None       # nodes / wall_s
    bestmove: str | None = None
    depth: int | None = None
    seldepth: int | None = None
    info_strings: list[str] = field(default_factory=list)  # `info string` text of the measured search
    ready_s: float | None = None        # process start -> options set -> `readyok`
    warmup_s: float | None = None       # the warm-up search's wall time
    engine_id: dict[str, str] = field(default_factory=dict)
    engine_log: list[str] = field(default_factory=list)  # stderr and stray stdout lines (start-up included)


class EngineChatter(logging.Handler):
    """Collects what python-chess logs of an engine's stderr and unexpected stdout (e.g. `info string`
    lines sent while loading the net, before any search) into the run in progress; echoes it unless quiet."""

    MAX_LINES = 200

    def __init__(self, quiet: bool):
        super().__init__(level=logging.INFO)
        self.quiet = quiet
        self.sink: list[str] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001
            return
        if self.sink is not None and len(self.sink) < self.MAX_LINES:
            self.sink.append(text)
        if not self.quiet or record.levelno >= logging.ERROR:
            print(text, file=sys.stderr, flush=True)


def board_of(fen: str | None, moves: list[str]) -> chess.Board:
    board = chess.Board(fen) if fen else chess.Board()
    for uci in moves:
        board.push_uci(uci)
    return board


def parse_engine(text: str) -> EngineSpec:
    name, sep, cmd = text.partition("=")
    name = name.strip()
    if not sep or not name or not cmd.strip():
        raise argparse.ArgumentTypeError(f"--engine wants NAME=CMD, got {text!r}")
    if name == "*" or ":" in name:
        raise argparse.ArgumentTypeError(f"engine name {name!r} may not be '*' or contain ':'")
    return EngineSpec(name, shlex.split(cmd))


def parse_option(text: str) -> tuple[str, str, str]:
    name, sep, rest = text.partition(":")
    key, sep2, value = rest.partition("=")
    if not sep or not sep2 or not name.strip() or not key.strip():
        raise argparse.ArgumentTypeError(f"--option wants NAME:KEY=VALUE, got {text!r}")
    return name.strip(), key.strip(), value


class Watchdog:
    """Kills the engine process if a step overruns (a hung engine must not eat a GPU lease)."""

    def __init__(self, engine: chess.engine.SimpleEngine, seconds: float, what: str):
        self.fired = False
        self.what = what
        self._pid = engine.protocol.transport.get_pid()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired = True
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def __enter__(self) -> "Watchdog":
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()


def search(engine: chess.engine.SimpleEngine, board: chess.Board, nodes: int, game: object) -> dict:
    """One `go nodes N` (after `ucinewgame` + `isready` for a new `game`): last info, strings, timing."""
    t_call = time.perf_counter()
    analysis = engine.analysis(board, chess.engine.Limit(nodes=nodes), game=game, info=chess.engine.INFO_ALL)
    # python-chess returns once `position` and `go` have been written (after `readyok` of the isready
    # that follows `ucinewgame`), so the clock starts here; t_call adds that round trip.
    t_go = time.perf_counter()
    last: dict = {}
    strings: list[str] = []
    for info in analysis:
        if "string" in info:
            strings.append(str(info["string"]))
        if "nodes" in info:
            last = dict(info)
        else:
            for key in ("depth", "seldepth", "nps", "time"):
                if key in info:
                    last[key] = info[key]
    best = analysis.wait()
    t_end = time.perf_counter()
    return dict(info=last, strings=strings, bestmove=best.move.uci() if best.move else None,
                wall_s=t_end - t_go, wall_call_s=t_end - t_call)


def run_one(spec: EngineSpec, pos: tuple[str, str | None, list[str]], repeat: int, args,
            chatter: EngineChatter) -> RunResult:
    name, fen, moves = pos
    res = RunResult(engine=spec.name, position=name, repeat=repeat, ok=False)
    chatter.sink = res.engine_log
    engine = None
    wd: Watchdog | None = None
    step = "start"
    try:
        t0 = time.perf_counter()
        engine = chess.engine.SimpleEngine.popen_uci(spec.cmd, timeout=args.timeout)
        res.engine_id = dict(engine.id)
        step = "options + isready"
        with Watchdog(engine, args.timeout, step) as wd:
            if spec.options:
                engine.configure(spec.options)
            engine.ping()  # isready: the net is loaded and the backend set up before any clock runs
        res.ready_s = time.perf_counter() - t0
        if args.warmup > 0:
            step = "warm-up search"
            with Watchdog(engine, args.timeout, step) as wd:
                w = search(engine, board_of(*WARMUP_POSITION), args.warmup, game=object())
            res.warmup_s = w["wall_s"]
        step = "measured search"
        with Watchdog(engine, args.timeout, step) as wd:
            r = search(engine, board_of(fen, moves), args.nodes, game=object())
        info = r["info"]
        res.nodes = info.get("nodes")
        res.engine_nps = info.get("nps")
        res.engine_time_s = info.get("time")
        res.depth = info.get("depth")
        res.seldepth = info.get("seldepth")
        res.wall_s = r["wall_s"]
        res.wall_nps = res.nodes / res.wall_s if res.nodes and res.wall_s else None
        res.bestmove = r["bestmove"]
        res.info_strings = r["strings"]
        res.ok = res.nodes is not None
        if not res.ok:
            res.error = "no info line with nodes"
    except Exception as e:  # noqa: BLE001 - one failed engine/position must not end the bench
        killed = wd is not None and wd.fired
        res.error = f"{step}: " + ("timed out after %gs (killed)" % args.timeout if killed
                                   else f"{type(e).__name__}: {e}".strip())
    finally:
        if engine is not None:
            try:
                engine.quit()
            except Exception:  # noqa: BLE001
                try:
                    engine.close()
                except Exception:  # noqa: BLE001
                    pass
        chatter.sink = None
    return res


def fmt_int(x) -> str:
    return "-" if x is None else f"{int(round(x)):,}"


def fmt_s(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def median(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def mean(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.fmean(xs) if xs else None


def summarize(specs: list[EngineSpec], positions: list[str], results: list[RunResult]) -> dict:
    """Median over repeats per (engine, position); per engine the mean over positions."""
    cells: dict[str, dict[str, dict]] = {}
    for spec in specs:
        cells[spec.name] = {}
        for pos in positions:
            rs = [r for r in results if r.engine == spec.name and r.position == pos and r.ok]
            cells[spec.name][pos] = dict(
                runs=len(rs),
                nodes=median([r.nodes for r in rs]),
                engine_nps=median([r.engine_nps for r in rs]),
                wall_nps=median([r.wall_nps for r in rs]),
                engine_time_s=median([r.engine_time_s for r in rs]),
                wall_s=median([r.wall_s for r in rs]),
                bestmove=rs[-1].bestmove if rs else None,
                last_info_string=next((r.info_strings[-1] for r in reversed(rs) if r.info_strings), None),
            )
    engines: dict[str, dict] = {}
    ref = specs[0].name
    for spec in specs:
        c = cells[spec.name]
        complete = all(c[p]["runs"] for p in positions)
        engines[spec.name] = dict(
            complete=complete,
            mean_engine_nps=mean([c[p]["engine_nps"] for p in positions]) if complete else None,
            mean_wall_nps=mean([c[p]["wall_nps"] for p in positions]) if complete else None,
        )
    for spec in specs:
        e, r = engines[spec.name], engines[ref]
        e["wall_nps_vs_" + ref] = (e["mean_wall_nps"] / r["mean_wall_nps"]
                                   if e["mean_wall_nps"] and r["mean_wall_nps"] else None)
    return dict(cells=cells, engines=engines, reference=ref)


def markdown(specs: list[EngineSpec], positions: list[str], summary: dict, results: list[RunResult],
             nodes: int) -> str:
    out = [f"### go nodes {nodes}", "",
           "| engine | position | runs | nodes | engine nps | wall nps | engine time s | wall s | bestmove |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for pos in positions:
        for spec in specs:
            c = summary["cells"][spec.name][pos]
            out.append(f"| {spec.name} | {pos} | {c['runs']} | {fmt_int(c['nodes'])} | {fmt_int(c['engine_nps'])} "
                       f"| {fmt_int(c['wall_nps'])} | {fmt_s(c['engine_time_s'])} | {fmt_s(c['wall_s'])} "
                       f"| {c['bestmove'] or '-'} |")
    ref = summary["reference"]
    out += ["", f"| engine | mean engine nps | mean wall nps | wall nps vs {ref} |", "|---|---:|---:|---:|"]
    for spec in specs:
        e = summary["engines"][spec.name]
        ratio = e["wall_nps_vs_" + ref]
        out.append(f"| {spec.name} | {fmt_int(e['mean_engine_nps'])} | {fmt_int(e['mean_wall_nps'])} "
                   f"| {'-' if ratio is None else f'{ratio:.3f}'} |")
    strings = [(spec.name, pos, summary["cells"][spec.name][pos]["last_info_string"])
               for spec in specs for pos in positions]
    strings = [s for s in strings if s[2]]
    if strings:
        out += ["", "Last `info string` of each measured search:"]
        out += [f"- {name} / {pos}: `{text}`" for name, pos, text in strings]
    errors = [r for r in results if not r.ok]
    if errors:
        out += ["", "Failed runs:"]
        out += [f"- {r.engine} / {r.position} (repeat {r.repeat}): {r.error}" for r in errors]
    return "\n".join(out)


def run_suite(args, specs: list[EngineSpec], pos_names: list[str], by_name: dict, chatter) -> int:
    """The bench once per net of --nets; one table of mean wall nps per net and engine at the end."""
    nets = [item.partition("=")[::2] for item in args.nets.split(",") if item.strip()]
    rows, ok = [], True
    for net_name, path in nets:
        net_specs = [EngineSpec(s.name, [w.replace("{net}", path) for w in s.cmd], dict(s.options)) for s in specs]
        results = []
        for rep in range(args.repeat):
            for pos in pos_names:
                for spec in net_specs:
                    r = run_one(spec, by_name[pos], rep, args, chatter)
                    results.append(r)
                    ok = ok and r.ok
                    print(f"{net_name} {spec.name:>10} {pos:<10} rep {rep}: "
                          + (f"wall nps {fmt_int(r.wall_nps)}, engine nps {fmt_int(r.engine_nps)}" if r.ok
                             else f"FAILED: {r.error}"), file=sys.stderr, flush=True)
        summary = summarize(net_specs, pos_names, results)
        print(f"## net {net_name} ({path})\n" + markdown(net_specs, pos_names, summary, results, args.nodes) + "\n",
              flush=True)
        rows.append((net_name, summary))
    ref = specs[0].name
    print(f"## wall nps per net, go nodes {args.nodes}\n")
    print("| net | " + " | ".join(s.name for s in specs) + " | " +
          " | ".join(f"{s.name} ÷ {ref}" for s in specs[1:]) + " |")
    print("|---|" + "---:|" * (2 * len(specs) - 1))
    for net_name, summary in rows:
        e = summary["engines"]
        cells = [fmt_int(e[s.name]["mean_wall_nps"]) for s in specs]
        ratios = [e[s.name]["wall_nps_vs_" + ref] for s in specs[1:]]
        print(f"| {net_name} | " + " | ".join(cells) + " | " +
              " | ".join("-" if r is None else f"{r:.2f}" for r in ratios) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({n: s for n, s in rows}, f, indent=1, default=str)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring (head of this file) for the method.")
    ap.add_argument("--engine", action="append", type=parse_engine, required=True, metavar="NAME=CMD",
                    help="an engine to bench (repeatable; the first is the reference of the ratios)")
    ap.add_argument("--option", action="append", type=parse_option, default=[], metavar="NAME:KEY=VALUE",
                    help="UCI option for engine NAME ('*' = all engines), e.g. ours:MinibatchSize=256")
    ap.add_argument("--nodes", type=int, default=100000, help="go nodes N of the measured search (default 100000)")
    ap.add_argument("--warmup", type=int, default=1000, help="go nodes of the warm-up search (0: none; default 1000)")
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes per engine and position (median; default 1)")
    ap.add_argument("--positions", default=",".join(p[0] for p in POSITIONS),
                    help="comma-separated subset of: " + ", ".join(p[0] for p in POSITIONS))
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds allowed for start-up+isready, for the warm-up and for the search each (default 600)")
    ap.add_argument("--nets", default="", metavar="NAME=PATH,...",
                    help="run the whole bench once per net ({net} in the engines' CMD is its path)")
    ap.add_argument("--json", metavar="FILE", help="write every number here")
    ap.add_argument("--quiet", action="store_true",
                    help="don't echo the engines' stderr and stray output (still kept in --json)")
    args = ap.parse_args(argv)
    chatter = EngineChatter(args.quiet)
    log = logging.getLogger("chess.engine")
    log.addHandler(chatter)
    log.setLevel(logging.WARNING)
    log.propagate = False

    specs: list[EngineSpec] = args.engine
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        ap.error("engine names must be distinct")
    for name, key, value in args.option:
        if name != "*" and name not in names:
            ap.error(f"--option names unknown engine {name!r} (engines: {', '.join(names)})")
        for spec in specs:
            if name in ("*", spec.name):
                spec.options[key] = value
    by_name = {p[0]: p for p in POSITIONS}
    pos_names = [p.strip() for p in args.positions.split(",") if p.strip()]
    for p in pos_names:
        if p not in by_name:
            ap.error(f"unknown position {p!r} (choose from {', '.join(by_name)})")

    if args.nets:
        return run_suite(args, specs, pos_names, by_name, chatter)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    results: list[RunResult] = []
    for rep in range(args.repeat):
        for pos in pos_names:
            for spec in specs:
                r = run_one(spec, by_name[pos], rep, args, chatter)
                results.append(r)
                if r.ok:
                    print(f"{spec.name:>10} {pos:<10} rep {rep}: nodes {fmt_int(r.nodes)}  engine nps "
                          f"{fmt_int(r.engine_nps)}  wall nps {fmt_int(r.wall_nps)}  (ready {fmt_s(r.ready_s)} s, "
                          f"warm-up {fmt_s(r.warmup_s)} s, bestmove {r.bestmove})", file=sys.stderr, flush=True)
                else:
                    print(f"{spec.name:>10} {pos:<10} rep {rep}: FAILED: {r.error}", file=sys.stderr, flush=True)

    summary = summarize(specs, pos_names, results)
    print(markdown(specs, pos_names, summary, results, args.nodes), flush=True)
    if args.json:
        doc = dict(
            tool="tools/engine_bench.py", started=started, host=platform.node(), python=platform.python_version(),
            settings=dict(nodes=args.nodes, warmup=args.warmup, repeat=args.repeat, positions=pos_names,
                          warmup_position=dict(fen=WARMUP_POSITION[0], moves=WARMUP_POSITION[1]),
                          timeout_s=args.timeout),
            positions={p: dict(fen=by_name[p][1], moves=by_name[p][2]) for p in pos_names},
            engines={s.name: dict(cmd=s.cmd, options=s.options,
                                  id=next((r.engine_id for r in results if r.engine == s.name and r.engine_id), {}))
                     for s in specs},
            summary=summary,
            runs=[asdict(r) for r in results],
        )
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, default=lambda x: None if isinstance(x, float) and math.isnan(x) else str(x))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
