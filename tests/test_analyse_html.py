"""`lc0-rocm analyse --html FILE`: the page of a real run (maia-1900 on the CPU backend, three games)
agrees with the run's JSONL records and annotated PGN; missing values show as "–"; --resume keeps
the earlier games. Then headless Chromium (Debian's `chromium`) loads the page: the board shows the
game's start, a real mouse click on a move (DevTools protocol over --remote-debugging-pipe) shows the
position after it (checked against the next record's FEN with python-chess), a click on a graph
mark does the same, and a screenshot of the graph is read back and holds the ground, the area, the
curve and the judgement marks."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import chess
import chess.pgn
import pytest

from lc0_rocm.analyse import html_report
from lc0_rocm.analyse.records import NAG_CODES
from netpaths import SHARED_WEIGHTS_DIR, require_shared

GAMES_PGN = Path(__file__).parent / "data" / "games.pgn"
DASH = html_report.DASH


def analyse(*args, check=True) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "analyse", "--backend", "cpu", *map(str, args)],
                       capture_output=True, text=True, timeout=600)
    assert "Traceback" not in p.stderr
    if check:
        assert p.returncode == 0, p.stderr
    return p


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def first_games(n: int) -> str:
    games = []
    with open(GAMES_PGN, encoding="utf-8") as f:
        for _ in range(n):
            games.append(str(chess.pgn.read_game(f)))
    return "\n\n".join(games) + "\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    net = require_shared(SHARED_WEIGHTS_DIR / "maia-1900.pb.gz")
    d = tmp_path_factory.mktemp("html")
    (d / "g.pgn").write_text(first_games(3))
    analyse(d / "g.pgn", "-w", net, "--jsonl", d / "o.jsonl", "--pgn-out", d / "o.pgn", "--html", d / "o.html")
    return d, read_jsonl(d / "o.jsonl")


class Page(HTMLParser):
    """What the page shows: table cells by game and key, and per game section its moves (ply → text,
    judgement class) and graph marks (ply → class)."""

    def __init__(self, text: str):
        super().__init__()
        self.cells, self.moves, self.marks = {}, {}, {}
        self.game = self.row = None
        self.open = None  # (store, key, text parts) of the element whose text is being read
        self.depth = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "tr" and "data-game" in a:
            self.row = int(a["data-game"])
        if tag == "section" and "game" in cls:
            self.game = int(a["data-game"])
            self.moves[self.game], self.marks[self.game] = {}, {}
        if tag == "td" and "data-key" in a:
            self.open, self.depth = (self.cells, (self.row, a["data-key"]), []), 0
        elif tag == "span" and "mv" in cls:
            judged = [c for c in cls if c in html_report.NAG_CLASS.values()]
            self.open, self.depth = (self.moves[self.game], (int(a["data-ply"]), judged), []), 0
        elif tag == "circle" and "mark" in cls:
            self.marks[self.game][int(a["data-ply"])] = [c for c in cls if c != "mark"]
        if self.open is not None:
            self.depth += 1

    def handle_endtag(self, tag):
        if self.open is not None:
            self.depth -= 1
            if self.depth == 0:
                store, key, parts = self.open
                if store is self.cells:
                    store[key] = "".join(parts)
                else:
                    store[key[0]] = ("".join(parts), key[1])
                self.open = None

    def handle_data(self, data):
        if self.open is not None:
            self.open[2].append(data)


def pgn_nags(path) -> dict:
    """{(game, ply): NAG text} of an annotated PGN, and its games' headers."""
    glyph = {v: k for k, v in NAG_CODES.items()}
    nags, headers = {}, []
    with open(path, encoding="utf-8") as f:
        while (game := chess.pgn.read_game(f)) is not None:
            headers.append(dict(game.headers))
            for ply, node in enumerate(game.mainline(), 1):
                for code in node.nags:
                    nags[(len(headers), ply)] = glyph[code]
    return nags, headers


def test_page_agrees_with_the_records_and_the_pgn(run):
    d, recs = run
    text = (d / "o.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href|url)\s*[=(]\s*["']?[^#"'\s]""", text)  # self-contained: nothing to load
    page = Page(text)
    nags, headers = pgn_nags(d / "o.pgn")
    assert sorted(page.moves) == [1, 2, 3] and len(headers) == 3
    judged = 0
    for r in recs:
        san, cls = page.moves[r["game"]][r["ply"]]
        nag = r["nag"] or ""
        assert san == r["played_san"] + nag
        assert cls == ([html_report.NAG_CLASS[nag]] if nag else [])
        assert nags.get((r["game"], r["ply"]), "") == nag  # the PGN's NAG is the page's
        assert page.marks[r["game"]].get(r["ply"], []) == cls  # marked on the graph as in the list
        judged += bool(nag)
    assert judged >= 5  # a real net on real games: the page has judgements to show
    assert sum(len(m) for m in page.moves.values()) == len(recs)
    for n, h in enumerate(headers, 1):
        assert page.cells[(n, "white")] == h["White"] and page.cells[(n, "black")] == h["Black"]
        assert page.cells[(n, "result")] == h["Result"]
    # the summary's numbers: the summary module's when the run has one, else "–"
    from importlib.util import find_spec

    has_summary = find_spec("lc0_rocm.analyse.summary") is not None
    for n in (1, 2, 3):
        for side, turn in (("white", "w"), ("black", "b")):
            count = sum(r["nag"] == "??" for r in recs if r["game"] == n and r["turn"] == turn)
            assert page.cells[(n, f"{side}_blunders")] == (str(count) if has_summary else DASH)


def counted(records: list, headers: dict) -> dict:
    """A summary computed here from the records: judgements per side, the accuracy mean where given."""
    s = {"white": headers.get("White"), "black": headers.get("Black"), "result": headers.get("Result")}
    for side, turn in (("white", "w"), ("black", "b")):
        mine = [r for r in records if r["turn"] == turn]
        for kind, nag in (("inaccuracies", "?!"), ("mistakes", "?"), ("blunders", "??")):
            s[f"{side}_{kind}"] = sum(r["nag"] == nag for r in mine)
        acc = [r["accuracy"] for r in mine if r.get("accuracy") is not None]
        s[f"{side}_accuracy"] = sum(acc) / len(acc) if acc else None
    return s


def test_summary_values_and_missing_keys(run, tmp_path):
    d, recs = run
    with open(d / "g.pgn", encoding="utf-8") as f:
        headers = {n: dict(chess.pgn.read_headers(f)) for n in (1, 2, 3)}
    recs = [dict(r) for r in recs]
    for r in recs:
        if r["game"] == 1:
            r["accuracy"] = 100.0 - 100 * (r["loss"] or 0.0)
        else:
            r.pop("accuracy", None)  # games 2 and 3 stand for records without accuracy
    html_report.write_html(tmp_path / "s.html", html_report.games_from_records(recs, headers, counted))
    page = Page((tmp_path / "s.html").read_text(encoding="utf-8"))
    for n in (1, 2, 3):
        s = counted([r for r in recs if r["game"] == n], headers[n])
        for key in ("white_blunders", "black_mistakes", "white_inaccuracies"):
            assert page.cells[(n, key)] == str(s[key])
        acc = page.cells[(n, "white_accuracy")]
        assert acc == DASH if n > 1 else abs(float(acc) - s["white_accuracy"]) <= 0.05
    # no summary, no headers, bare records: every missing value is a dash, the moves are still there
    bare = [{k: r[k] for k in ("game", "ply", "fen", "turn", "played", "played_san")} for r in recs if r["game"] == 2]
    html_report.write_html(tmp_path / "b.html", html_report.games_from_records(bare, {}, None))
    page = Page((tmp_path / "b.html").read_text(encoding="utf-8"))
    assert {page.cells[(2, k)] for k in ("white", "black", "result", "white_accuracy", "black_blunders")} == {DASH}
    assert [page.moves[2][r["ply"]][0] for r in bare] == [r["played_san"] for r in bare]
    # a FEN/EPD line: one record without a played move; its board and value, no moves
    pos = {"game": 9, "ply": 1, "fen": "8/8/8/8/8/8/8/K1k5 w - - 0 1", "turn": "w", "played": None,
           "best": "a1a2", "white_score": 0.5}
    text = html_report.page(html_report.games_from_records([pos], {}, None))
    page = Page(text)
    assert page.moves[9] == {} and "White's expected score 0.50, best Ka2" in text


def test_resume_keeps_the_earlier_games(run, tmp_path):
    d, recs = run
    net = require_shared(SHARED_WEIGHTS_DIR / "maia-1900.pb.gz")
    shutil.copy(d / "g.pgn", tmp_path / "g.pgn")
    out = ("-w", net, "--jsonl", tmp_path / "o.jsonl", "--html", tmp_path / "o.html")
    analyse(tmp_path / "g.pgn", *out, "--max-games", "2")
    assert sorted(Page((tmp_path / "o.html").read_text(encoding="utf-8")).moves) == [1, 2]
    analyse(tmp_path / "g.pgn", *out, "--resume")
    page = Page((tmp_path / "o.html").read_text(encoding="utf-8"))
    assert sorted(page.moves) == [1, 2, 3]
    assert page.cells[(1, "white")] == "Paul Morphy"  # headers of a game from the interrupted run
    assert [(r["game"], r["ply"]) for r in read_jsonl(tmp_path / "o.jsonl")] == \
        [(g, p) for g in sorted(page.moves) for p in sorted(page.moves[g])]


def test_bad_html_options_are_one_line_errors(tmp_path):
    (tmp_path / "g.pgn").write_text(first_games(1))
    for args, words in ((("--html", tmp_path / "no" / "p.html"), "no such folder"),
                        (("--html", tmp_path / "p.html", "--resume"), "needs --jsonl"),
                        (("--html", tmp_path / "p.html", "--ray", "local"), "not available with --ray")):
        p = analyse(tmp_path / "g.pgn", *args, check=False)
        assert p.returncode == 1 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------------
# in a real browser


def chromium_path() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe:
        return exe
    msg = "chromium not installed (Debian's chromium package; .ci/run installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)


class DevTools:
    """Headless Chromium driven through the DevTools protocol over --remote-debugging-pipe: JSON
    messages ending in NUL, commands on the browser's fd 3, answers and events on its fd 4."""

    def __init__(self, exe: str, profile: Path):
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()

        def fds():  # in the child: the pipe ends to 3 and 4 (through copies: they may be 3 or 4 already)
            r, w = os.dup(cmd_r), os.dup(out_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--remote-debugging-pipe", "--window-size=1280,1000",
                 "--hide-scrollbars", "about:blank"]
        self.log = open(profile.parent / "chromium.log", "wb")
        self.proc = subprocess.Popen([exe, *flags], stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     close_fds=False, preexec_fn=fds)
        os.close(cmd_r)
        os.close(out_w)
        self.buf = b""
        self.last = 0
        self.errors: list = []
        target = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]
        self.page("Runtime.enable")

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.out_r], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self.out_r, 1 << 20)
            if not chunk:
                raise ConnectionError("chromium closed the pipe")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params) -> dict:
        self.last += 1
        msg = {"id": self.last, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._message(deadline)
            if m.get("method") == "Runtime.exceptionThrown":
                self.errors.append(m["params"]["exceptionDetails"])
            if m.get("id") == self.last:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]

    def page(self, method: str, **params) -> dict:
        return self.call(method, self.session, **params)

    def js(self, expr: str):
        r = self.page("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, url: str) -> None:
        self.page("Page.navigate", url=url)
        deadline = time.monotonic() + 30
        while self.js("document.readyState") != "complete" or self.js("location.href") != url:
            assert time.monotonic() < deadline, "the page did not load"
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real left click (press and release) in the middle of the element, scrolled into view."""
        box = self.js(f"(function(){{var e=document.querySelector({json.dumps(selector)});"
                      "e.scrollIntoView({block:'center'});var r=e.getBoundingClientRect();"
                      "return [r.left+r.width/2, r.top+r.height/2];})()")
        x, y = box
        self.page("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, selector: str) -> bytes:
        """PNG of the element (page coordinates: where it lies after scrolling it into view)."""
        r = self.js(f"(function(){{var e=document.querySelector({json.dumps(selector)});"
                    "e.scrollIntoView({block:'center'});var b=e.getBoundingClientRect();"
                    "return [b.left+scrollX, b.top+scrollY, b.width, b.height];})()")
        clip = dict(x=r[0], y=r[1], width=r[2], height=r[3], scale=1)
        return base64.b64decode(self.page("Page.captureScreenshot", format="png", clip=clip,
                                          captureBeyondViewport=True)["data"])

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (OSError, RuntimeError, TimeoutError, ConnectionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.cmd_w, self.out_r):
            os.close(fd)
        self.log.close()


@pytest.fixture(scope="module")
def browser(run, tmp_path_factory):
    exe = chromium_path()
    b = DevTools(exe, tmp_path_factory.mktemp("chromium") / "profile")
    try:
        b.open((run[0] / "o.html").as_uri())
        yield b
    finally:
        b.close()


def placement(b: DevTools, game: int) -> str:
    """The board of a game section as a FEN placement, read from the squares' pieces in the DOM."""
    return b.js(f"""(function(){{var rows=[],sq=document.querySelectorAll('#game-{game} .board .sq');
        for(var r=0;r<8;r++){{var s='',e=0;for(var f=0;f<8;f++){{var p=sq[r*8+f].querySelector('.pc');
        if(p){{if(e)s+=e;e=0;s+=p.getAttribute('data-piece');}}else e++;}}if(e)s+=e;rows.push(s);}}
        return rows.join('/');}})()""")


def test_browser_click_on_a_move_shows_the_board_after_it(run, browser):
    _, recs = run
    b = browser
    first = next(r for r in recs if r["game"] == 1)
    assert placement(b, 1) == chess.Board(first["fen"]).board_fen()  # the start before any click
    assert b.js("document.querySelectorAll('section.game').length") == 3
    blunder = next(r for r in recs if r["game"] == 1 and r["nag"] == "??")
    after = next(r for r in recs if r["game"] == 1 and r["ply"] == blunder["ply"] + 1)
    b.click(f'#game-1 .mv[data-ply="{blunder["ply"]}"]')
    assert placement(b, 1) == chess.Board(after["fen"]).board_fen() != chess.Board(blunder["fen"]).board_fen()
    move = chess.Board(blunder["fen"]).parse_uci(blunder["played"])
    lit = b.js("Array.from(document.querySelectorAll('#game-1 .sq.hl')).map(e=>e.dataset.square).sort()")
    assert lit == sorted(chess.square_name(s) for s in (move.from_square, move.to_square))
    assert "Blunder" in b.js("document.querySelector('#game-1 .info').textContent")
    assert b.js(f"document.querySelector('#game-1 .mv.sel').dataset.ply") == str(blunder["ply"])
    assert float(b.js("document.querySelector('#game-1 .cursor').getAttribute('x1')")) > 0
    # the right arrow steps to the next move
    for kind in ("keyDown", "keyUp"):
        b.page("Input.dispatchKeyEvent", type=kind, key="ArrowRight", code="ArrowRight", windowsVirtualKeyCode=39)
    after2 = next(r for r in recs if r["game"] == 1 and r["ply"] == blunder["ply"] + 2)
    assert placement(b, 1) == chess.Board(after2["fen"]).board_fen()
    # a judgement marked on game 2's graph, clicked, shows its position there and leaves game 1 alone
    mark = next(r for r in recs if r["game"] == 2 and r["nag"])
    b.click(f'#game-2 .mark[data-ply="{mark["ply"]}"]')
    nxt = next(r for r in recs if r["game"] == 2 and r["ply"] == mark["ply"] + 1)
    assert placement(b, 2) == chess.Board(nxt["fen"]).board_fen()
    assert placement(b, 1) == chess.Board(after2["fen"]).board_fen()
    assert b.errors == []


def test_browser_screenshot_shows_the_graph(run, browser, tmp_path):
    import matplotlib.image

    b = browser
    png = b.screenshot("#game-1 svg.graph")
    (tmp_path / "graph.png").write_bytes(png)
    img = matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3]
    h, w, _ = img.shape
    assert (w, h) == (html_report.GRAPH_W, html_report.GRAPH_H)

    def share(rgb, tol=0.06) -> float:
        return float((abs(img - [c / 255 for c in rgb]).max(axis=2) < tol).mean())

    assert share((0x3B, 0x3B, 0x3B)) > 0.05  # the ground (Black's side of the curve)
    assert share((0xEC, 0xEC, 0xEC)) > 0.05  # the area under White's expected score
    assert share((0x2A, 0x7A, 0xB8), 0.15) > 0.002  # the curve
    assert share((0xD0, 0x00, 0x00), 0.15) > 0.0005  # a blunder's mark (game 1 has blunders)


def two_plies(raw: bool) -> list[dict]:
    """A game of two judged records (1. e4? d5), raw mode's (with a policy) or search mode's."""
    b = chess.Board()
    recs = []
    for ply, (played, best, nag) in enumerate((("e2e4", "d2d4", "?"), ("d7d5", "e7e5", None)), 1):
        r = {"game": 1, "ply": ply, "fen": b.fen(), "turn": "w" if b.turn else "b", "played": played,
             "played_san": b.san(chess.Move.from_uci(played)), "best": best, "q": 0.1, "white_score": 0.55,
             "best_score": 0.55, "played_score": 0.44, "loss": 0.11 if nag else 0.0, "nag": nag, "accuracy": 60.0}
        r.update({"policy": {best: 0.5, played: 0.3}} if raw else {"pv": [best], "nodes": 10})
        recs.append(r)
        b.push(chess.Move.from_uci(played))
    return recs


def test_raw_mode_names_the_policys_top_move_not_a_best_one():
    """Raw mode has values for the position and the one after the played move only, none for the
    other moves: its `best` is the policy's top move, and the page says so; search mode's is best."""
    for raw, word in ((True, "policy's top d4"), (False, "best d4")):
        text = html_report.page(html_report.games_from_records(two_plies(raw), {}, None))
        title = re.search(r'<span class="mv[^"]*" data-ply="1" title="([^"]*)"', text).group(1)
        assert word in title.replace("&#x27;", "'"), title
        data = json.loads(re.search(r'<script type="application/json" class="data">(.*?)</script>', text).group(1))
        assert data["moves"][0]["best_is"] == ("policy's top" if raw else "best")
        if raw:
            assert ", best " not in title
    # the annotated PGN says the same
    from lc0_rocm.analyse.formats import pgn_text
    from lc0_rocm.analyse.work import GameTask

    for raw, words in ((True, "Mistake. d4 was the policy's top move."), (False, "Mistake. d4 was best.")):
        recs = two_plies(raw)
        text = pgn_text(GameTask(1, "t", 1, "pgn", moves=[r["played"] for r in recs]), recs, "test")
        assert words in " ".join(text.split()), text


def test_graph_has_axis_titles_and_the_move_list_a_fixed_width():
    text = html_report.page(html_report.games_from_records(two_plies(True), {}, None))
    svg = re.search(r"<svg class=\"graph\".*?</svg>", text).group(0)
    titles = re.findall(r'<text class="axis-title (\w)"[^>]*>([^<]*)</text>', svg)
    assert dict(titles) == {"y": "White&#x27;s expected score", "x": "move"}
    side = re.search(r"\.side\{([^}]*)\}", text).group(1)  # the move list's column: its width never follows its text
    assert "flex:0 0 340px" in side and "width:340px" in side and "min-width" not in side


def test_browser_move_list_keeps_its_width_on_click(run, browser):
    _, recs = run
    b = browser
    width = "document.querySelector('#game-1 .moves').getBoundingClientRect().width"
    before = b.js(width)
    for r in [r for r in recs if r["game"] == 1][:12]:
        b.click(f'#game-1 .mv[data-ply="{r["ply"]}"]')
        assert b.js(width) == before, r["ply"]
