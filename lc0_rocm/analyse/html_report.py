"""`--html FILE`: one self-contained page (its styles, script and graphs inline; no server, no network)
to look at an analysis: a table of the games (players, result, accuracy and judgements per side) and,
for each game, White's expected score over the moves (inline SVG, judgements marked), the move list
with its NAGs, and a board that shows the position after the move clicked (or chosen on the graph,
or with the arrow keys).

A game is {"summary": dict, "headers": {tag: value}, "records": [record]} (records as
`records.py` describes them); `games_from_records` groups a run's records into games, `write_html`
writes the page, and `Collector` writes the page of a run from its games as they come (holding only
their summaries). Missing values show as "–". Positions after each move come from the next record's
FEN, else from python-chess.
"""

from __future__ import annotations

import html
import io
import json
import os
import shutil
import tempfile
from typing import Callable, Iterable, Optional

from .records import best_is

DASH = "–"
NAG_CLASS = {"?!": "inaccuracy", "?": "mistake", "??": "blunder"}
HEADER_KEYS = {"white": "White", "black": "Black", "result": "Result", "event": "Event", "date": "Date"}


def games_from_records(records: Iterable[dict], headers_by_game: dict,
                       summarise: Optional[Callable] = None) -> list[dict]:
    """Records of any number of games (in game order) → [{"summary", "headers", "records"}]; the
    summary is `summarise(records, headers)` when given, else the header fields only."""
    by_game: dict = {}
    for r in records:
        by_game.setdefault(r["game"], []).append(r)
    games = []
    for number, recs in by_game.items():
        headers = dict(headers_by_game.get(number) or {})
        if summarise is not None:
            summary = dict(summarise(recs, headers))
        else:
            summary = {k: headers[t] for k, t in HEADER_KEYS.items() if t in headers}
        summary.setdefault("game", number)
        games.append({"summary": summary, "headers": headers, "records": recs})
    return games


def pgn_headers(text: str) -> dict:
    """The tags of a PGN game's text ({} for a FEN/EPD line or a game without tags)."""
    import chess.pgn

    h = chess.pgn.read_headers(io.StringIO(text))
    return dict(h) if h is not None else {}


class Collector:
    """The games of a run for the page at `path`, in the order they are written: `add(unit,
    game_outputs)` takes the sink's arguments (the outputs must keep their records:
    FinishConfig.keep_records); each game's section goes to a temporary file at once, so only the
    summaries stay in memory; `write()` puts the page together."""

    def __init__(self, path: str, summarise: Optional[Callable] = None):
        self.path = path
        self.summarise = summarise
        self.summaries: list = []
        self.sections = tempfile.TemporaryFile("w+", encoding="utf-8")

    def add(self, unit, outputs: list) -> None:
        texts = {g.number: g for g in unit.games}
        for go in outputs:
            if go.error is not None or not go.records:
                continue
            raw = texts.get(go.number)
            headers = pgn_headers(raw.text) if raw is not None and raw.kind == "pgn" else {}
            self._keep(games_from_records(go.records, {go.number: headers}, self.summarise))

    def add_written(self, jsonl_path: str, inputs: list, fmt: str, upto: int) -> None:
        """The games up to `upto` that an interrupted run wrote (`--resume`): records from its JSONL
        file, headers from the inputs."""
        from .reader import read_games

        headers = {}
        for raw, _ in read_games(inputs, fmt):
            if raw.number > upto:
                break
            if raw.kind == "pgn":
                headers[raw.number] = pgn_headers(raw.text)
        with open(jsonl_path, encoding="utf-8") as f:
            records = [r for r in map(json.loads, f) if r["game"] <= upto]
        self._keep(games_from_records(records, headers, self.summarise))

    def _keep(self, games: list) -> None:
        for game in games:
            self.summaries.append(game["summary"])
            self.sections.write(game_section(game))

    def write(self) -> None:
        try:
            self.sections.seek(0)
            _write_page(self.path, self.summaries, self.sections)
        except OSError as e:
            from .writers import OutputError

            raise OutputError(f"cannot write {self.path}: {e.strerror}") from None
        finally:
            self.sections.close()


# ------------------------------------------------------------------------------------------------
# values


def fmt(value, digits: int = 1) -> str:
    """A number for the page ("–" when missing)."""
    if value is None or isinstance(value, bool):
        return DASH if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    try:
        return f"{float(value):.{digits}f}"
    except (TypeError, ValueError):
        return html.escape(str(value))


def text(value) -> str:
    """A header or name for the page ("–" when missing or unknown)."""
    if value is None or str(value).strip() in ("", "?"):
        return DASH
    return html.escape(str(value))


def _white_after(rec: dict, nxt: Optional[dict]) -> Optional[float]:
    """White's expected score after the record's move: the next record's, else the played move's."""
    if nxt is not None and nxt["ply"] == rec["ply"] + 1 and nxt.get("white_score") is not None:
        return float(nxt["white_score"])
    s = rec.get("played_score")
    if s is None:
        return None
    return float(s) if rec["turn"] == "w" else 1.0 - float(s)


def _after_fen(rec: dict, nxt: Optional[dict]) -> Optional[str]:
    if nxt is not None and nxt["ply"] == rec["ply"] + 1:
        return nxt["fen"]
    board = _board(rec["fen"])
    move = _move(board, rec)
    if move is None:
        return None
    board.push(move)
    return board.fen()


def _board(fen: str):
    import chess

    return chess.Board(fen, chess960=True)  # accepts standard castling too; UCI castling as king takes rook


def _move(board, rec: dict):
    """The played move on `board` (SAN first: unambiguous in standard chess and Chess960 alike)."""
    for parse, what in ((board.parse_san, rec.get("played_san")), (board.parse_uci, rec.get("played"))):
        if what:
            try:
                return parse(what)
            except ValueError:
                pass
    return None


def _san(fen: str, uci: Optional[str]) -> Optional[str]:
    if not uci:
        return None
    board = _board(fen)
    try:
        return board.san(board.parse_uci(uci))
    except ValueError:
        return uci


def game_moves(records: list[dict]) -> list[dict]:
    """The page's data for each played move of a game, in ply order."""
    recs = sorted((r for r in records if r.get("played")), key=lambda r: r["ply"])
    out = []
    for i, r in enumerate(recs):
        nxt = recs[i + 1] if i + 1 < len(recs) else None
        board = _board(r["fen"])
        move = _move(board, r)
        sq = [] if move is None else [move.from_square, move.to_square]
        out.append({"ply": r["ply"], "turn": r["turn"], "number": board.fullmove_number,
                    "san": r.get("played_san") or r["played"],
                    "nag": r.get("nag"), "fen": _after_fen(r, nxt), "before": r["fen"], "sq": sq,
                    "best": _san(r["fen"], r.get("best")) if r.get("best") != r["played"] else None,
                    "best_is": best_is(r),
                    "loss": r.get("loss"), "accuracy": r.get("accuracy"), "score": r.get("white_score"),
                    "after": _white_after(r, nxt)})
    return out


def move_label(m: dict) -> str:
    """"12. Nf3" for White's 12th move, "12… Nc6" for Black's (the number from the position's FEN)."""
    return f"{m['number']}{'.' if m['turn'] == 'w' else '…'} {m['san']}"


# ------------------------------------------------------------------------------------------------
# the page


def write_html(path: str, games: list[dict]) -> None:
    """Write the page for `games` to `path` (atomically: a finished page or none)."""
    _write_page(path, [g["summary"] for g in games], io.StringIO("".join(map(game_section, games))))


def page(games: list[dict]) -> str:
    """The page of `games` as text."""
    return head([g["summary"] for g in games]) + "".join(map(game_section, games)) + FOOT


def _write_page(path: str, summaries: list[dict], sections) -> None:
    """The head and table of `summaries`, then the text of the file-like `sections`, then the script."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(head(summaries))
        shutil.copyfileobj(sections, f)
        f.write(FOOT)
    os.replace(tmp, path)


def head(summaries: list[dict]) -> str:
    """The page up to the games' sections: styles, title and the table of the games."""
    title = "lc0-rocm analyse"
    if len(summaries) == 1:
        s = summaries[0]
        title += f": {_plain(s.get('white'))} – {_plain(s.get('black'))}"
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n<h1>{html.escape(title)}</h1>\n{games_table(summaries)}")


def _plain(value) -> str:
    return DASH if value is None or str(value).strip() in ("", "?") else str(value)


def games_table(summaries: list[dict]) -> str:
    top = ("<table id=\"games\"><thead><tr><th rowspan=\"2\">#</th><th rowspan=\"2\">White</th>"
            "<th rowspan=\"2\">Black</th><th rowspan=\"2\">Result</th><th colspan=\"2\">Accuracy</th>"
            "<th colspan=\"3\">White</th><th colspan=\"3\">Black</th></tr><tr><th>White</th><th>Black</th>"
            + "<th title=\"inaccuracies\">?!</th><th title=\"mistakes\">?</th><th title=\"blunders\">??</th>" * 2
            + "</tr></thead><tbody>\n")
    rows = []
    for s in summaries:
        n = s.get("game")
        cells = [f"<td data-key=\"game\"><a href=\"#game-{n}\">{fmt(n)}</a></td>"]
        cells += [f"<td data-key=\"{k}\">{text(s.get(k))}</td>" for k in ("white", "black", "result")]
        cells += [f"<td data-key=\"{k}\" class=\"num\">{fmt(s.get(k))}</td>"
                  for k in ("white_accuracy", "black_accuracy")]
        for side in ("white", "black"):
            for kind in ("inaccuracies", "mistakes", "blunders"):
                k = f"{side}_{kind}"
                cells.append(f"<td data-key=\"{k}\" class=\"num {kind}\">{fmt(s.get(k))}</td>")
        rows.append(f"<tr data-game=\"{n}\">{''.join(cells)}</tr>\n")
    return top + "".join(rows) + "</tbody></table>\n"


def game_section(game: dict) -> str:
    """A game's heading, graph, board and move list; a position without a played move (a FEN/EPD
    line) gets its board and value only."""
    s, h = game["summary"], game.get("headers") or {}
    n = s.get("game")
    moves = game_moves(game["records"])
    first = min(game["records"], key=lambda r: r["ply"]) if game["records"] else None
    start_fen = first["fen"] if first else None
    data = {"game": n, "start": start_fen, "moves": moves}
    head = f"<section class=\"game\" id=\"game-{n}\" data-game=\"{n}\">\n"
    tail = f"<script type=\"application/json\" class=\"data\">{_json(data)}</script>\n</section>\n"
    board = f"<div class=\"board\" data-fen=\"{html.escape(start_fen or '')}\"></div>"
    if not moves:
        info = DASH
        if first is not None:
            best = _san(first["fen"], first.get("best"))
            info = f"White's expected score {fmt(first.get('white_score'), 2)}, {best_is(first)} {text(best)}"
        return (f"{head}<h2>{n}. {text(start_fen)}</h2>\n<div class=\"play\">{board}<div class=\"side\">"
                f"<div class=\"info\">{info}</div></div></div>\n{tail}")
    title = f"{text(s.get('white', h.get('White')))} – {text(s.get('black', h.get('Black')))}"
    result = s.get("result", h.get("Result"))
    if result and result != "*":
        title += f" <span class=\"result\">{html.escape(str(result))}</span>"
    meta = [text(x) for x in (s.get("event", h.get("Event")), h.get("Site"), s.get("date", h.get("Date")))
            if x and str(x).strip("?. ")]
    sides = []
    for side in ("white", "black"):
        sides.append(f"{side.capitalize()}: accuracy {fmt(s.get(f'{side}_accuracy'))}, average loss "
                     f"{fmt(s.get(f'{side}_avg_loss'), 3)}, inaccuracies {fmt(s.get(f'{side}_inaccuracies'))}, "
                     f"mistakes {fmt(s.get(f'{side}_mistakes'))}, blunders {fmt(s.get(f'{side}_blunders'))}")
    return (f"{head}<h2>{n}. {title}</h2>\n<p class=\"meta\">{' · '.join(meta)}</p>\n"
            f"<p class=\"sides\">{'<br>'.join(sides)}</p>\n{graph_svg(moves)}\n<div class=\"play\">{board}"
            f"<div class=\"side\"><div class=\"info\">Click a move.</div>{move_list(moves)}</div></div>\n{tail}")


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def move_list(moves: list[dict]) -> str:
    """The moves in rows of (number, White's move, Black's move), each clickable, NAG appended; plies
    that were not analysed show as "…"."""
    cells = []
    prev = None
    for m in moves:
        ply = m["ply"]
        if prev is not None and ply > prev + 1:
            cells.append("<span class=\"gap\">…</span>")
        if m["turn"] == "w" or prev != ply - 1:
            cells.append(f"<span class=\"num\">{m['number']}.</span>")
            if m["turn"] == "b":
                cells.append("<span class=\"empty\"></span>")
        nag = m["nag"] or ""
        cls = f"mv {NAG_CLASS[nag]}" if nag in NAG_CLASS else "mv"
        cells.append(f"<span class=\"{cls}\" data-ply=\"{ply}\" title=\"{html.escape(_move_title(m))}\">"
                     f"{html.escape(m['san'])}<b class=\"nag\">{html.escape(nag)}</b></span>")
        prev = ply
    return f"<div class=\"moves\">{''.join(cells)}</div>"


def _move_title(m: dict) -> str:
    parts = [move_label(m) + (m["nag"] or "")]
    if m.get("loss") is not None:
        parts.append(f"loss {m['loss']:.3f}")
    if m.get("best"):
        parts.append(f"{m.get('best_is', 'best')} {m['best']}")
    if m.get("accuracy") is not None:
        parts.append(f"accuracy {m['accuracy']:.0f}")
    return ", ".join(parts)


# the graph: x = the position (ply - 1 before a move, ply after it), y = White's expected score
GRAPH_W, GRAPH_H, PAD_L, PAD_R, PAD_T, PAD_B = 720, 180, 46, 10, 8, 20
Y_TITLE, X_TITLE = "White's expected score", "move"
_MARK_COLOUR = {"?!": "#e0a100", "?": "#e06000", "??": "#d00000"}


def graph_svg(moves: list[dict]) -> str:
    """White's expected score before each move and after the last (a light area under a line on a dark
    ground), a judgement marked where its move was played, a cursor at the chosen move."""
    pts = [(m["ply"] - 1, m["score"]) for m in moves if m.get("score") is not None]
    if moves and moves[-1].get("after") is not None:
        pts.append((moves[-1]["ply"], moves[-1]["after"]))
    x0 = min((p for p, _ in pts), default=0)
    x1 = max(max((p for p, _ in pts), default=1), x0 + 1)
    iw, ih = GRAPH_W - PAD_L - PAD_R, GRAPH_H - PAD_T - PAD_B
    sx = iw / (x1 - x0)

    def X(p):
        return PAD_L + (p - x0) * sx

    def Y(v):
        return PAD_T + (1.0 - max(0.0, min(1.0, v))) * ih

    out = [f"<svg class=\"graph\" viewBox=\"0 0 {GRAPH_W} {GRAPH_H}\" width=\"{GRAPH_W}\" height=\"{GRAPH_H}\" "
           f"data-x0=\"{x0}\" data-sx=\"{sx:.4f}\" data-left=\"{PAD_L}\" role=\"img\" "
           f"aria-label=\"White's expected score over the moves\">",
           f"<rect class=\"ground\" x=\"{PAD_L}\" y=\"{PAD_T}\" width=\"{iw}\" height=\"{ih}\" fill=\"#3b3b3b\"/>"]
    if pts:
        line = " ".join(f"{X(p):.1f},{Y(v):.1f}" for p, v in pts)
        bottom = PAD_T + ih
        out.append(f"<polygon class=\"area\" fill=\"#ececec\" points=\"{X(pts[0][0]):.1f},{bottom} {line} "
                   f"{X(pts[-1][0]):.1f},{bottom}\"/>")
        out.append(f"<polyline class=\"curve\" fill=\"none\" stroke=\"#2a7ab8\" stroke-width=\"1.6\" points=\"{line}\"/>")
    mid = Y(0.5)
    out.append(f"<line x1=\"{PAD_L}\" x2=\"{PAD_L + iw}\" y1=\"{mid:.1f}\" y2=\"{mid:.1f}\" stroke=\"#999\" "
               f"stroke-dasharray=\"3 3\"/>")
    for v in (0.0, 0.5, 1.0):
        out.append(f"<text x=\"{PAD_L - 4}\" y=\"{Y(v) + 4:.1f}\" text-anchor=\"end\">{v:g}</text>")
    ym = PAD_T + ih / 2
    out.append(f"<text class=\"axis-title y\" x=\"10\" y=\"{ym:.1f}\" text-anchor=\"middle\" "
               f"transform=\"rotate(-90 10 {ym:.1f})\">{html.escape(Y_TITLE)}</text>")
    out.append(f"<text class=\"axis-title x\" x=\"{PAD_L - 4}\" y=\"{GRAPH_H - 5}\" text-anchor=\"end\">"
               f"{html.escape(X_TITLE)}</text>")  # left of the move numbers, under the 0
    step = next(k for k in (1, 2, 5, 10, 20, 50, 100, 1000) if (x1 - x0) / 2 / k <= 10)  # at most ~10 labels
    for m in moves:
        if m["turn"] == "w" and m["number"] % step == 0:
            out.append(f"<text x=\"{X(m['ply'] - 1):.1f}\" y=\"{GRAPH_H - 5}\" text-anchor=\"middle\">"
                       f"{m['number']}</text>")
    out.append(f"<line class=\"cursor\" x1=\"-10\" x2=\"-10\" y1=\"{PAD_T}\" y2=\"{PAD_T + ih}\" stroke=\"#f5c518\" "
               "stroke-width=\"2\"/>")
    for m in moves:
        nag = m.get("nag")
        if nag in _MARK_COLOUR and m.get("after") is not None:
            out.append(f"<circle class=\"mark {NAG_CLASS[nag]}\" data-ply=\"{m['ply']}\" cx=\"{X(m['ply']):.1f}\" "
                       f"cy=\"{Y(m['after']):.1f}\" r=\"5\" fill=\"{_MARK_COLOUR[nag]}\" stroke=\"#fff\">"
                       f"<title>{html.escape(_move_title(m))}</title></circle>")
    out.append("</svg>")
    return "".join(out)


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222;background:#fafafa}
h1{font-size:1.3em}h2{font-size:1.1em;margin:.2em 0}
table#games{border-collapse:collapse;margin-bottom:1.5em}
#games th,#games td{border:1px solid #ccc;padding:2px 8px}#games th{background:#eee}
td.num{text-align:right}td.blunders{font-weight:bold}
section.game{border-top:2px solid #ccc;padding-top:.8em;margin-top:1.2em}
.meta,.sides{margin:.2em 0;color:#555}.result{color:#000;font-weight:bold}
svg.graph{display:block;margin:.5em 0;cursor:pointer;max-width:100%;height:auto}
svg.graph text{font-size:10px;fill:#555}svg.graph .mark{cursor:pointer}
.play{display:flex;gap:1.5em;align-items:flex-start;flex-wrap:wrap}
.board{display:grid;grid-template-columns:repeat(8,44px);grid-template-rows:repeat(8,44px);
 border:2px solid #555;flex:none}
.sq{position:relative;display:flex;align-items:center;justify-content:center;font-size:34px;
 font-family:"DejaVu Sans","Segoe UI Symbol","Noto Sans Symbols2","Arial Unicode MS",serif;line-height:1}
.sq.l{background:#f0d9b5}.sq.d{background:#b58863}.sq.hl.l{background:#f6ec8a}.sq.hl.d{background:#d9c35a}
.pc.w{color:#fff;text-shadow:0 0 1px #000,0 0 1px #000,0 0 2px #000}.pc.b{color:#111}
.coord{position:absolute;font:10px sans-serif;color:#333;opacity:.7}.coord.f{right:2px;bottom:1px}
.coord.r{left:2px;top:1px}
.side{flex:0 0 340px;width:340px}.info{min-height:4.5em;margin-bottom:.5em;overflow-wrap:anywhere}
.moves{display:grid;grid-template-columns:3em 1fr 1fr;max-height:300px;overflow-y:auto;
 border:1px solid #ddd;background:#fff}
.moves span{padding:1px 6px}.moves .num{color:#888;text-align:right}.moves .gap{grid-column:1/-1;color:#888}
.mv{cursor:pointer;border-radius:3px}.mv:hover{background:#e3eefa}.mv.sel{background:#2a7ab8;color:#fff}
.nag{font-weight:bold}.inaccuracy .nag{color:#c08a00}.mistake .nag{color:#e06000}.blunder .nag{color:#d00000}
.mv.sel .nag{color:#fff}
"""

# the board from a FEN, moves chosen by click (list or graph) or arrow keys
_JS = r"""
(function(){
"use strict";
var GLYPH={k:"\u265A",q:"\u265B",r:"\u265C",b:"\u265D",n:"\u265E",p:"\u265F"};
function drawBoard(el,fen,hl){
  el.textContent="";el.setAttribute("data-fen",fen||"");
  if(!fen)return;
  var rows=fen.split(" ")[0].split("/");
  for(var r=0;r<8;r++){
    var f=0;
    for(var i=0;i<rows[r].length;i++){
      var c=rows[r][i];
      if(c>="1"&&c<="8"){for(var k=0;k<+c;k++)addSq(el,r,f++,null,hl);}
      else addSq(el,r,f++,c,hl);
    }
  }
}
function addSq(el,r,f,c,hl){
  var sq=document.createElement("div"),idx=(7-r)*8+f;
  sq.className="sq "+((r+f)%2?"d":"l")+(hl&&hl.indexOf(idx)>=0?" hl":"");
  sq.setAttribute("data-square","abcdefgh"[f]+(8-r));
  if(c){var p=document.createElement("span");var w=(c===c.toUpperCase());
    p.className="pc "+(w?"w":"b");p.setAttribute("data-piece",c);
    p.textContent=GLYPH[c.toLowerCase()]+"\uFE0E";sq.appendChild(p);}
  if(r===7){var a=document.createElement("span");a.className="coord f";a.textContent="abcdefgh"[f];sq.appendChild(a);}
  if(f===0){var b=document.createElement("span");b.className="coord r";b.textContent=8-r;sq.appendChild(b);}
  el.appendChild(sq);
}
function fmt(x,d){return x===null||x===undefined?"\u2013":x.toFixed(d);}
var WORDS={"?!":"Inaccuracy","?":"Mistake","??":"Blunder"};
var current=null;
function Game(sec){
  this.sec=sec;this.data=JSON.parse(sec.querySelector("script.data").textContent);
  this.board=sec.querySelector(".board");this.info=sec.querySelector(".info");
  this.graph=sec.querySelector("svg.graph");this.index=-1;
  drawBoard(this.board,this.data.start,null);
  var self=this;
  sec.querySelectorAll(".mv,.mark").forEach(function(el){
    el.addEventListener("click",function(ev){ev.stopPropagation();self.show(+el.getAttribute("data-ply"));});
  });
  if(this.graph)this.graph.addEventListener("click",function(ev){self.graphClick(ev);});
}
Game.prototype.show=function(ply){
  var moves=this.data.moves,i=-1;
  for(var j=0;j<moves.length;j++)if(moves[j].ply===ply)i=j;
  if(i<0)return;
  this.index=i;current=this;var m=moves[i];
  drawBoard(this.board,m.fen||m.before,m.sq);
  this.sec.querySelectorAll(".mv.sel").forEach(function(e){e.classList.remove("sel");});
  var el=this.sec.querySelector('.mv[data-ply="'+ply+'"]');
  if(el){el.classList.add("sel");if(el.scrollIntoView)el.scrollIntoView({block:"nearest"});}
  var n=m.number+(m.turn==="w"?".":"\u2026");
  var t=n+" "+m.san+(m.nag||"");
  if(m.nag)t+=" \u2014 "+WORDS[m.nag];
  if(m.best)t+=", "+(m.best_is||"best")+" "+m.best;
  t+="\nloss "+fmt(m.loss,3)+", accuracy "+fmt(m.accuracy,0)+", White's expected score "+fmt(m.after,2);
  this.info.textContent=t;this.info.style.whiteSpace="pre-line";
  if(this.graph){var c=this.graph.querySelector(".cursor");
    var x=(+this.graph.getAttribute("data-left"))+(ply-(+this.graph.getAttribute("data-x0")))*(+this.graph.getAttribute("data-sx"));
    c.setAttribute("x1",x);c.setAttribute("x2",x);}
};
Game.prototype.graphClick=function(ev){
  var g=this.graph,r=g.getBoundingClientRect(),vb=g.viewBox.baseVal;
  var x=(ev.clientX-r.left)*vb.width/r.width;
  var p=Math.round((x-(+g.getAttribute("data-left")))/(+g.getAttribute("data-sx"))+(+g.getAttribute("data-x0")));
  var moves=this.data.moves,best=null;
  for(var j=0;j<moves.length;j++)if(best===null||Math.abs(moves[j].ply-p)<Math.abs(best.ply-p))best=moves[j];
  if(best)this.show(best.ply);
};
Game.prototype.step=function(d){
  var i=this.index+d;if(i>=0&&i<this.data.moves.length)this.show(this.data.moves[i].ply);
};
var games=[];
document.querySelectorAll("section.game").forEach(function(sec){games.push(new Game(sec));});
document.addEventListener("keydown",function(ev){
  if(!current)return;
  if(ev.key==="ArrowRight"){current.step(1);ev.preventDefault();}
  else if(ev.key==="ArrowLeft"){current.step(-1);ev.preventDefault();}
});
})();
"""

FOOT = f"<script>{_JS}</script>\n</body></html>\n"
