"""Writes the PGN corpus of this folder: our own games (random legal moves, fixed seeds) in the shapes
real sources write: a database export (EventDate, EventType, PlyCount), a lichess export (`%eval`,
`%clk`, `1...` numbers), variations and NAGs, CRLF with a byte-order mark, Latin-1 names, set-up
positions, empty games, `%` escape lines and `;` comments, Chess960. `tests/test_analyse_corpus.py`
reads each file with python-chess and with `lc0-rocm analyse`. Run from the repository root:
`python3 tests/data/pgn_corpus/make_corpus.py` (the output is the same every time)."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import chess.pgn

HERE = Path(__file__).resolve().parent
ENCODING = {"latin1.pgn": "latin-1"}  # the rest: UTF-8 (crlf_bom.pgn with a byte-order mark)


def play(rng: random.Random, board: chess.Board, plies: int) -> chess.pgn.Game:
    game = chess.pgn.Game()
    game.headers.clear()
    if board.fen() != chess.STARTING_FEN:
        game.setup(board)
    node = game
    for _ in range(plies):
        if board.is_game_over():
            break
        move = rng.choice(sorted(board.legal_moves, key=lambda m: m.uci()))
        node = node.add_variation(move)
        board.push(move)
    outcome = board.outcome()
    game.headers["Result"] = outcome.result() if outcome else rng.choice(["1-0", "0-1", "1/2-1/2", "*"])
    return game


def text(game: chess.pgn.Game, **kw) -> str:
    return game.accept(chess.pgn.StringExporter(columns=80, **kw))


def tagged(game: chess.pgn.Game, tags: dict) -> chess.pgn.Game:
    result = game.headers["Result"]
    extra = {k: v for k, v in game.headers.items() if k != "Result"}
    game.headers.clear()
    for k, v in {**tags, "Result": result, **extra}.items():
        game.headers[k] = v
    return game


def database(rng) -> str:
    out = []
    for g in range(3):
        game = play(rng, chess.Board(), rng.randint(20, 50))
        tagged(game, {"Event": "Corpus Open", "Site": "Utrecht NED", "Date": f"2024.05.0{g + 1}",
                      "Round": f"{g + 1}.{g + 2}", "White": f"Player, White{g}", "Black": f"Player, Black{g}",
                      "ECO": "C60", "WhiteElo": str(2400 + g), "BlackElo": str(2300 + g)})
        game.headers["EventDate"] = "2024.05.01"
        game.headers["EventType"] = "swiss"
        game.headers["EventRounds"] = "9"
        game.headers["EventCountry"] = "NED"
        game.headers["PlyCount"] = str(len(list(game.mainline_moves())))
        game.headers["SourceDate"] = "2024.06.01"
        out.append(text(game))
    return "\n\n".join(out) + "\n\n"


def lichess(rng) -> str:
    out = []
    for g in range(3):
        game = play(rng, chess.Board(), rng.randint(16, 40))
        tagged(game, {"Event": "Rated Blitz game", "Site": f"https://lichess.org/corpus{g:03d}",
                      "Date": "2024.01.02", "White": f"white_{g}", "Black": f"black_{g}"})
        for k, v in (("UTCDate", "2024.01.02"), ("UTCTime", "10:11:12"), ("WhiteElo", "1500"), ("BlackElo", "1510"),
                     ("WhiteRatingDiff", "+6"), ("BlackRatingDiff", "-6"), ("Variant", "Standard"),
                     ("TimeControl", "180+2"), ("ECO", "A00"), ("Opening", "Corpus Opening: Main Line"),
                     ("Termination", "Normal")):
            game.headers[k] = v
        clock = [180.0, 180.0]
        for i, node in enumerate(game.mainline()):
            clock[i % 2] = max(0.0, clock[i % 2] - rng.uniform(0, 6) + 2)
            ev = f"#{rng.choice([-3, 2])}" if i == 7 else f"{rng.uniform(-2, 2):.2f}"
            s = int(clock[i % 2])
            node.comment = f"[%eval {ev}] [%clk {s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}]"
        out.append(text(game))
    return "\n\n".join(out) + "\n\n\n"


VARIATIONS = """[Event "Annotated"]
[Site "?"]
[Date "2023.??.??"]
[Round "-"]
[White "Annotator, A"]
[Black "Annotator, B"]
[Result "1-0"]
[Annotator "corpus"]

{An opening comment [with brackets] and a ; semicolon.} 1. e4! e5 2. Nf3!? (2. Bc4?! Nf6 (2... Bc5
3. Qh5 {threat} (3. Nf3) 3... Qe7) 3. d3) 2... Nc6 $14 {a comment over

a blank line} 3. Bb5 a6 $6 4. Ba4 (4. Bxc6 dxc6 5. O-O $5) 4... Nf6 5. O-O Be7 $10
6. Re1 b5 7. Bb3 d6 8. c3 O-O 9. h3 !! Nb8 ?? 10. d4 Nbd7 1-0

"""


def variations(rng) -> str:
    game = play(rng, chess.Board(), 30)
    tagged(game, {"Event": "Generated variations", "Site": "?", "Date": "????.??.??", "Round": "?",
                  "White": "?", "Black": "?"})
    nodes = list(game.mainline())
    for k, node in enumerate(nodes[2:-2:5]):
        parent = node.parent
        alts = [m for m in parent.board().legal_moves if m != node.move]
        if alts:
            side = parent.add_variation(rng.choice(sorted(alts, key=lambda m: m.uci())), comment=f"side line {k}")
            inner = [m for m in side.board().legal_moves]
            if inner:
                side.add_variation(inner[0]).nags.add(chess.pgn.NAG_DUBIOUS_MOVE)
        node.nags.add([1, 2, 3, 4, 5, 6, 14, 15][k % 8])
    return VARIATIONS + text(game) + "\n\n"


def crlf_bom(rng) -> str:
    games = []
    for g in range(2):
        game = play(rng, chess.Board(), 24)
        tagged(game, {"Event": "CRLF export", "Site": "?", "Date": "2022.02.02", "Round": str(g + 1),
                      "White": "Crlf, One", "Black": "Crlf, Two"})
        games.append(text(game))
    return "\ufeff" + "\r\n\r\n".join(x.replace("\n", "\r\n") for x in games) + "\r\n\r\n"


def latin1(rng) -> str:
    games = []
    for g, (w, b) in enumerate((("Müller, Jürgen", "Åkesson, Bjørn"), ("Nuñez, José", "Françoise, Hélène"))):
        game = play(rng, chess.Board(), 22)
        tagged(game, {"Event": "Championnat de l'Île", "Site": "Genève", "Date": "1999.09.09",
                      "Round": str(g + 1), "White": w, "Black": b})
        games.append(text(game))
    return "\n\n".join(games) + "\n\n"


def setup(rng) -> str:
    out = []
    for g, fen in enumerate(("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
                             "8/5k2/8/3K4/8/8/4P3/8 b - - 0 57",
                             "r4rk1/pp3ppp/2n5/3q4/3P4/8/PP3PPP/R2Q1RK1 b - - 1 23")):
        game = play(rng, chess.Board(fen), 14)
        tagged(game, {"Event": "Set-up", "Site": "?", "Date": "????.??.??", "Round": str(g + 1),
                      "White": "Study", "Black": "Composer"})
        out.append(text(game))
    return "\n\n".join(out) + "\n\n"


EMPTY = """[Event "Empty, result only"]
[Site "?"]
[Date "????.??.??"]
[Round "1"]
[White "A"]
[Black "B"]
[Result "*"]

*

[Event "Forfeit"]
[Site "?"]
[Date "2020.01.01"]
[Round "2"]
[White "C"]
[Black "D"]
[Result "1-0"]

1-0

[Event "Tags only"]
[White "E"]
[Black "F"]


[Event "A comment and a result"]
[White "G"]
[Black "H"]
[Result "1/2-1/2"]

{No moves were played.} 1/2-1/2

[Event "After the empty ones"]
[White "I"]
[Black "J"]
[Result "0-1"]

1. f3 e5 2. g4 Qh4# 0-1

"""

ESCAPES = """% an escape line before the first game
; a comment line before the first game
[Event "Escapes 1"]
; a comment line among the tags
[Site "?"]
% an escape line among the tags
[White "K"]
[Black "L"]
[Result "1-0"]

1. e4 e5 2. Nf3 ; the rest of this line is a comment { not a brace comment
2... Nc6 3. Bb5 a6
% an escape line in the movetext
4. Ba4 Nf6 { a brace comment ; with a semicolon } 5. O-O 1-0

; between games
% between games
[Event "Escapes 2"]
[White "M"]
[Black "N"]
[Result "*"]

1. d4 d5 2. c4 *

"""


def chess960(rng) -> str:
    out = []
    for g, fen in enumerate(("bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w KQkq - 0 1",
                             "rkrnnqbb/pppppppp/8/8/8/8/PPPPPPPP/RKRNNQBB w KQkq - 0 1")):
        board = chess.Board(fen, chess960=True)
        game = play(rng, board, 40)
        tagged(game, {"Event": "Chess960 game", "Site": "?", "Date": "2021.06.06", "Round": str(g + 1),
                      "White": "Fischer", "Black": "Random"})
        game.headers["Variant"] = "Chess960"
        out.append(text(game))
    return "\n\n".join(out) + "\n\n"


FILES = {"database.pgn": database, "lichess.pgn": lichess, "variations.pgn": variations, "crlf_bom.pgn": crlf_bom,
         "latin1.pgn": latin1, "setup.pgn": setup, "empty.pgn": lambda rng: EMPTY, "escapes.pgn": lambda rng: ESCAPES,
         "chess960.pgn": chess960}


def main() -> None:
    for k, (name, make) in enumerate(FILES.items()):
        (HERE / name).write_bytes(make(random.Random(1000 + k)).encode(ENCODING.get(name, "utf-8")))


if __name__ == "__main__":
    main()
