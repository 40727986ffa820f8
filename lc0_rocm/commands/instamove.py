"""`lc0-rocm policyhead` and `lc0-rocm valuehead`: the UCI engine with lc0 0.32's instamove searches.

`lc0 policyhead` / `lc0 valuehead` are modes of lc0 (its search algorithms, `src/search/instamove/
instamove.cc`): the engine speaks UCI as usual but answers each `go` with the move of highest policy
(policyhead; what Maia plays at one node) or with the best move by the value head one ply down
(valuehead), after one `info depth 1 seldepth 1 nodes N score ...` line. The moves themselves are
`lc0_rocm.instamove`'s. Like lc0, the engine declares only the options these searches read; it takes
the engine's flags (`lc0-rocm --help`).
"""

from __future__ import annotations

import argparse
import sys
import threading

# the options lc0 0.32.1 declares in these modes (`lc0 policyhead`, then `uci`)
MODE_OPTIONS = ("LogFile", "ConfigFile", "Ponder", "SyzygyPath", "UCI_Chess960", "UCI_ShowWDL",
                "UCI_ShowMovesLeft", "PolicyTemperature", "HistoryFill", "WeightsFile", "Backend",
                "BackendOptions", "NNCacheSize")
HELP = {
    "policyhead": "UCI engine that plays the policy head's best move (lc0's policyhead mode)",
    "valuehead": "UCI engine that plays the value head's best move one ply deep (lc0's valuehead mode)",
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("flags", nargs=argparse.REMAINDER, help="lc0-style flags (lc0-rocm --help lists them)")


def main(algorithm: str, argv: list[str]) -> int:
    """`lc0-rocm <algorithm> [flags]`: the flags set the options, then UCI on stdin/stdout."""
    from .. import engine_options as eo
    from ..uci import UciError

    try:
        settings, extra = eo.settings_from_command_line(argv)
    except eo.OptionError as e:
        print(f"lc0-rocm: error: {e}", file=sys.stderr)
        return 2
    if extra["help"]:
        print(f"Usage: lc0-rocm {algorithm} [flags...]\n\n{HELP[algorithm]}: speaks UCI on stdin/stdout.\n"
              f"Options it reads (each also a flag, see lc0-rocm --help): {', '.join(MODE_OPTIONS)}.")
        return 0
    try:
        engine = instamove_engine(algorithm, settings=settings)
    except (UciError, eo.OptionError) as e:
        print(f"lc0-rocm: error: {e}", file=sys.stderr)
        return 2
    return engine.run()


def instamove_engine(algorithm: str, **kwargs):
    """A `uci.UciEngine` whose `go` runs `algorithm` ("policyhead" or "valuehead"); kwargs as UciEngine's."""
    from .. import __version__
    from ..uci import UciEngine

    class InstamoveEngine(UciEngine):
        def cmd_uci(self, args: str) -> None:
            self.send(f"id name lc0-rocm {__version__}")
            self.send("id author the lc0-rocm authors (search and nets after The LCZero Authors)")
            for line in self.options.declarations():
                if line.split()[2] in MODE_OPTIONS:  # "option name <Name> type ..."
                    self.send(line)
            self.send("uciok")

        def _start_search(self, go, received=None) -> None:
            from ..instamove import InstamoveSearch

            self._sync_evaluator()
            self.go_params = go
            aborted = self._search_aborted = threading.Event()
            show_wdl = bool(self.opt("UCI_ShowWDL"))  # as at `go` (lc0 answers within its `go`)

            def on_info(result) -> None:
                self.send(info_line(result, show_wdl))

            def on_bestmove(best, ponder) -> None:
                s = self.search
                if s is not None and s.error is not None:
                    self.error(f"search failed: {type(s.error).__name__}: {s.error}")
                with self._bestmove_lock:
                    if not aborted.is_set():
                        self.send(f"bestmove {best.uci()}" if best is not None else "bestmove (none)")

            self.search = InstamoveSearch(algorithm, self.evaluator, self.position.history,
                                          go.infinite or go.ponder, on_info, on_bestmove)
            self.search.start()

    return InstamoveEngine(**kwargs)


def info_line(result, show_wdl: bool) -> str:
    """lc0's `info` line of an instamove search: depth 1, seldepth 1, nodes, the score (cp or mate)
    and, with UCI_ShowWDL, the WDL in permille."""
    parts = ["info depth 1 seldepth 1 nodes", str(result.nodes)]
    if result.mate is not None:
        parts += ["score mate", str(result.mate)]
    elif result.cp is not None:
        parts += ["score cp", str(result.cp)]
    if show_wdl and result.wdl is not None:
        parts += ["wdl", *map(str, result.wdl)]
    return " ".join(parts)
