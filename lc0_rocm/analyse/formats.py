"""One game's records → its JSONL lines, CSV rows and annotated PGN (text ready to write).

JSONL: one JSON object per record, keys in `records.keys(mode)` order. CSV: the same columns (lists
joined with spaces, the policy as `uci:p` pairs), a header row written once by the writer.
Annotated PGN: the input game's tags (plus `Annotator`) and moves; after each move a comment
`[%eval E] [%wdl W D L]` (E: White's view in pawns from lc0's centipawn formula, or `#N`; W D L:
White's win/draw/loss per mille) with the value of the position after it, and the judgement of the
move as a NAG (`?!` 6, `?` 2, `??` 4) with a short text naming the best move (raw mode: the policy's top
move; lichess's words for a mate created or lost); the game's summary
(`summary.game_summary`: accuracy, average loss, judgement counts per side) in tags. Chess GUIs and
lichess read these comments. FEN/EPD inputs have no moves: they get no PGN. Every game gets its
summary dict (`GameOutput.summary`), which the writer puts in `--summary FILE`.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Optional

from . import records as rec
from .accuracy import MATE_SEQUENCES
from .summary import PGN_TAGS, game_summary

_WORDS = {"?!": "Inaccuracy", "?": "Mistake", "??": "Blunder"}


@dataclass
class GameOutput:
    """What the writer gets for one game, in game order."""

    number: int
    source: str = ""
    line: int = 0
    error: Optional[str] = None
    positions: int = 0
    jsonl: str = ""
    csv: str = ""
    pgn: str = ""
    summary: Optional[dict] = None  # `summary.game_summary` of the game (None: a skipped game)
    headers: dict = field(default_factory=dict)  # the game's PGN tags
    records: list = field(default_factory=list)  # kept only when asked (tests, Ray merge)


def public(record: dict, mode: str) -> dict:
    """The record as written: schema keys only, in order."""
    return {k: record.get(k) for k in rec.keys(mode)}


def jsonl_text(records: list, mode: str) -> str:
    return "".join(json.dumps(public(r, mode)) + "\n" for r in records)


def csv_header(mode: str) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(rec.keys(mode))
    return buf.getvalue()


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return " ".join(f"{k}:{p!r}" for k, p in v.items())
    if isinstance(v, (list, tuple)):
        return " ".join(str(x) for x in v)
    return v


def csv_text(records: list, mode: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in records:
        w.writerow([_cell(r.get(k)) for k in rec.keys(mode)])
    return buf.getvalue()


def white_view(record: dict) -> tuple:
    """(q, wdl or None, mate or None) of a record's position from White's view."""
    q, wdl, mate = record["q"], record.get("wdl"), record.get("mate")
    if record["turn"] == "w":
        return q, wdl, mate
    return -q, (wdl[::-1] if wdl else None), (-mate if mate is not None else None)


def pgn_text(task, records: list, annotator: str, summary: Optional[dict] = None) -> str:
    """The annotated PGN of a game (task: work.GameTask), "" for a FEN/EPD line; the summary's
    per-side accuracy, average loss and judgement counts go into tags (`summary.PGN_TAGS`)."""
    import chess
    import chess.pgn

    if task.kind != "pgn":
        return ""
    game = chess.pgn.Game()
    game.headers.clear()
    for k, v in task.headers:
        game.headers[k] = v
    game.headers["Annotator"] = annotator
    for key, tag in PGN_TAGS.items():
        if summary is not None and summary.get(key) is not None:
            game.headers[tag] = str(summary[key])
    board = chess.Board(task.start_fen) if task.start_fen else chess.Board()
    board.chess960 = task.chess960
    if task.start_fen:
        game.setup(board)
    by_ply = {r["ply"]: r for r in records}
    node = game
    for p, uci in enumerate(task.moves, 1):
        move = chess.Move.from_uci(uci)
        node = node.add_variation(move)
        r = by_ply.get(p)
        nxt = by_ply.get(p + 1)
        view = white_view(nxt) if nxt is not None else (r.get("_after") if r is not None else None)
        parts = []
        if view is not None:
            q, wdl, mate = view
            parts.append(f"[%eval {rec.pgn_eval(q, mate)}]")
            if wdl:
                parts.append("[%wdl {} {} {}]".format(*rec.wdl_per_mille(wdl)))
        if r is not None and r.get("nag"):
            node.nags.add(rec.NAG_CODES[r["nag"]])
            if r.get("best") and r["best"] != uci:
                best = chess.Move.from_uci(r["best"])
                before = node.parent.board()
                if before.is_legal(best):
                    words = MATE_SEQUENCES.get(r.get("_mate")) or _WORDS[r["nag"]]
                    what = "best" if rec.best_is(r) == "best" else f"the {rec.best_is(r)} move"
                    parts.append(f"{words}. {before.san(best)} was {what}.")
        if parts:
            node.comment = " ".join(parts)
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    return game.accept(exporter) + "\n\n"


def game_output(task, records: list, mode: str, want: set, annotator: str = "lc0-rocm",
                keep_records: bool = False) -> GameOutput:
    """Text of the outputs in `want` ("jsonl", "csv", "pgn") for one game."""
    out = GameOutput(task.number, task.source, task.line, task.error, len(records))
    if task.error is not None:
        return out
    out.headers = dict(task.headers)
    out.summary = game_summary(records, out.headers, task.number, len(task.moves))
    if "jsonl" in want:
        out.jsonl = jsonl_text(records, mode)
    if "csv" in want:
        out.csv = csv_text(records, mode)
    if "pgn" in want:
        out.pgn = pgn_text(task, records, annotator, out.summary)
    if keep_records:
        out.records = [public(r, mode) for r in records]
    return out
