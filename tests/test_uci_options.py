"""Engine options whose effect is a limit or a report, checked on the running engine (committed
random-weight net, CPU backend): RamLimitMb, NodesPerSecondLimit, TimeManager, PerPVCounters,
NNCacheSize's default, MaxCollisionEvents and the options kept only for lc0 compatibility."""

from __future__ import annotations

import sys
import time

from netpaths import WEIGHTS_DIR
from uci_pipe import UciPipe
from side_by_side import side_by_side

NET = WEIGHTS_DIR / "se-classical-small.pb.gz"


def _session(lines: list[str], timeout: float = 240) -> list[str]:
    """Run the engine on `lines` (each `go` waits for its bestmove, except `go infinite`), quit, and
    return its stdout lines. A `go` left without a bestmove fails the test instead of hanging it."""
    eng = UciPipe([sys.executable, "-m", "lc0_rocm.cli", "-w", str(NET), "-b", "cpu"])
    try:
        for line in lines:
            eng.send(line)
            if line.startswith("go") and "infinite" not in line:
                eng.until("bestmove", timeout)
        eng.send("quit")
        assert eng.p.wait(timeout=60) == 0
        while (line := eng.lines.get(timeout=10)[1]) is not None:
            eng.seen.append(line)
    finally:
        eng.close()
    return eng.seen


def _searches(out: list[str]) -> list[tuple[list[str], str]]:
    """[(info lines, bestmove line)] in order."""
    res, infos = [], []
    for line in out:
        if line.startswith("bestmove"):
            res.append((infos, line))
            infos = []
        elif line.startswith("info") and " pv " in line:
            infos.append(line)
    return res


def _field(line: str, key: str) -> int:
    words = line.split()
    return int(words[words.index(key) + 1])


def test_ram_limit_stops_the_search():
    """With RamLimitMb the search ends when tree and NN cache reach the limit, long before `go nodes`."""
    def limited(mb):
        return lambda: _searches(_session([f"setoption name RamLimitMb value {mb}", "isready", "go nodes 400000"]))

    small, large = side_by_side(limited(2), limited(4))  # the two engines at once
    (infos, best), = small
    nodes = _field(infos[-1], "nodes")
    assert best.startswith("bestmove ") and 1000 < nodes < 400000, nodes
    (infos2, _), = large
    assert _field(infos2[-1], "nodes") > nodes  # a larger limit, a larger tree


def test_nodes_per_second_limit_is_kept():
    t0 = time.monotonic()
    (infos, best), = _searches(_session(["setoption name NodesPerSecondLimit value 200",
                                         "setoption name SmartPruningFactor value 0",
                                         "setoption name MinibatchSize value 4", "isready", "go nodes 300"]))
    last = infos[-1]
    assert _field(last, "nodes") == 300
    assert _field(last, "time") >= 1300  # 300 nodes at <= 200 nps: at least ~1.5 s
    assert time.monotonic() - t0 >= 1.3


def test_time_manager_option_chooses_the_budget():
    out = _session(["setoption name SmartPruningFactor value 0", "setoption name MoveOverheadMs value 0",
                    "setoption name TimeManager value alphazero(alphazero-time-pct=2.0)", "isready",
                    "go wtime 60000 btime 60000"])
    (infos, best), = _searches(out)
    ms = _field(infos[-1], "time")
    assert 900 <= ms <= 1500, ms  # 2 % of 60 s = 1200 ms
    err = _session(["setoption name TimeManager value turbo", "go nodes 1"])
    assert any(x.startswith("info string error: option TimeManager: unknown time manager 'turbo'") for x in err), err
    assert any(x.startswith("bestmove ") for x in err)  # the search still answers, with the old manager


def test_a_search_that_cannot_start_still_answers_go():
    """A SyzygyPath that does not exist fails when the search opens the tables: one error line, and
    `go` still gets a legal bestmove."""
    out = _session(["setoption name SyzygyPath value /nonexistent/tables", "position startpos moves e2e4",
                    "go nodes 5"])
    assert any(x.startswith("info string error: SyzygyPath: '/nonexistent/tables' is not a directory")
               for x in out), out
    best = [x for x in out if x.startswith("bestmove ")]
    assert len(best) == 1 and best[0].split()[1] in {m.uci() for m in _board_after_e4().legal_moves}


def _board_after_e4():
    import chess

    b = chess.Board()
    b.push_uci("e2e4")
    return b


def test_per_pv_counters_report_each_lines_visits():
    out = _session(["setoption name MultiPV value 3", "setoption name PerPVCounters value true", "isready",
                    "go nodes 200"])
    (infos, _), = _searches(out)
    last = {(_field(x, "multipv")): _field(x, "nodes") for x in infos[-3:]}
    assert sum(last.values()) <= 200 and last[1] >= last[2] >= last[3]


def test_lc0_worker_options_are_accepted_without_effect():
    out = _session(["setoption name MinimumProcessingWork value 4", "setoption name MaxPrefetch value 0",
                    "setoption name MaxCollisionEvents value 32", "setoption name MinimumPickingWork value 5",
                    "isready", "go nodes 20"])
    assert not [x for x in out if "error" in x], out
    assert _searches(out)[0][1].startswith("bestmove ")
