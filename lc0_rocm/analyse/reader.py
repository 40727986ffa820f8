"""Inputs of `lc0-rocm analyse` → games, in units of work; which plies of a game are analysed.

Inputs are PGN files, EPD files or files of FENs (one position a line), `-` for stdin; the format
comes from the extension (.pgn, .epd, .fen) or, failing that, from the first line that is not empty.
Games are numbered from 1 across all inputs. The reader only finds where each game starts (a tag
line after movetext, outside a `{…}` comment); parsing happens later, in a worker (`parse_game`),
so that a bad game is reported there (game number, file, line) and skipped, and the rest goes on.

`Selection`: `--plies A-B` (1-based plies of the game; "A-", "-B" and "A" work), `--side`
(white, black or both) and `--every N` (every Nth of the plies left, from the first one).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

from ..errors import Lc0RocmError

FORMATS = ("auto", "pgn", "epd", "fen")
_EXT = {".pgn": "pgn", ".epd": "epd", ".fen": "fen"}


class InputError(Lc0RocmError):
    """An input file cannot be read or an option of the reader is wrong."""


@dataclass(frozen=True)
class Selection:
    first: int = 1
    last: Optional[int] = None
    side: str = "both"
    every: int = 1

    @staticmethod
    def parse(plies: Optional[str] = None, side: str = "both", every: int = 1) -> "Selection":
        first, last = 1, None
        if plies:
            m = re.fullmatch(r"\s*(\d*)\s*(-?)\s*(\d*)\s*", plies)
            if not m or not (m.group(1) or m.group(3)):
                raise InputError(f"--plies {plies!r}: expected A-B, A-, -B or A (plies from 1)")
            first = int(m.group(1)) if m.group(1) else 1
            last = int(m.group(3)) if m.group(3) else (None if m.group(2) else first)
            if first < 1 or (last is not None and last < first):
                raise InputError(f"--plies {plies!r}: plies count from 1 and the range must not be empty")
        from ..values import BadValue, parse_choice, parse_int

        try:
            side = parse_choice(side, ("both", "white", "black"))
        except BadValue:
            raise InputError(f"--side {side!r}: expected white, black or both") from None
        try:
            every = parse_int(every, 1)
        except BadValue:
            raise InputError(f"--every {every}: expected a positive number") from None
        return Selection(first, last, side, every)

    def plies(self, n_moves: int, white_first: bool) -> list[int]:
        """The selected plies (1-based) of a game of `n_moves` moves whose first move is White's
        when `white_first`."""
        last = n_moves if self.last is None else min(self.last, n_moves)
        out = []
        for p in range(self.first, last + 1):
            white = (p % 2 == 1) == white_first
            if self.side == "both" or (self.side == "white") == white:
                out.append(p)
        return out[:: self.every]


@dataclass
class RawGame:
    """One game (PGN) or position (EPD/FEN line) as text, with where it came from."""

    number: int
    source: str
    line: int  # its first line in `source`
    kind: str  # "pgn" or "fen" (FEN and EPD lines)
    text: str
    error: Optional[tuple] = None  # (line, message): the reader already knows the game is bad


@dataclass
class Unit:
    """Consecutive games, the unit of work that goes to a worker; `done_bytes` = input read so far."""

    games: list = field(default_factory=list)
    done_bytes: int = 0

    @property
    def first(self) -> int:
        return self.games[0].number

    @property
    def last(self) -> int:
        return self.games[-1].number


def input_size(inputs: Iterable[str]) -> Optional[int]:
    """Total bytes of the input files (None if stdin is one of them)."""
    total = 0
    for path in inputs:
        if path == "-":
            return None
        total += os.path.getsize(path)
    return total


_BINARY = {b"\x1f\x8b": "gzip data (a net? nets go after --weights)", b"PK\x03\x04": "a zip archive",
           b"\x89PNG": "a PNG image", b"\x7fELF": "a program"}


def check_inputs(inputs: Iterable[str]) -> None:
    """InputError for an input that is not a readable text file (before any net is loaded)."""
    for path in inputs:
        if path == "-":
            continue
        if not os.path.exists(path):
            raise InputError(f"no such input file: {path}")
        if os.path.isdir(path):
            raise InputError(f"input is a directory: {path}")
        if not os.access(path, os.R_OK):
            raise InputError(f"cannot read input file: {path}")
        with open(path, "rb") as f:
            head = f.read(4096)
        what = binary_kind(head)
        if what:
            raise InputError(f"{path} is not PGN, EPD or FEN text: {what}")


def binary_kind(head: bytes) -> Optional[str]:
    """What the first bytes of a file say it is when it is not text (None: text). A file is binary
    when it starts with a known signature, or when over a tenth of its first 4 KB are control bytes
    (NUL and the like, not tabs or line ends) or bytes that are not UTF-8; text damaged here and
    there still passes, and its games are read (a bad one is reported and skipped)."""
    for magic, what in _BINARY.items():
        if head.startswith(magic):
            return what
    if not head:
        return None
    text = head.decode("utf-8", errors="replace")
    bad = sum(1 for c in text if c == "\ufffd" or (ord(c) < 32 and c not in "\t\n\r\f"))
    return "binary data" if bad > len(text) / 10 else None


def _open(path: str):
    """The lines of an input as text: UTF-8 (a byte-order mark dropped), a line that is not UTF-8 read
    as Latin-1 (older database exports write names that way; python-chess given the file's encoding
    reads the same names), line ends \\r\\n and \\r read as \\n."""
    if path == "-":
        stdin = sys.stdin
        if not hasattr(stdin, "buffer"):
            return contextlib.nullcontext(iter(stdin))
        peek = getattr(stdin.buffer, "peek", None)
        what = binary_kind(peek(4096)[:4096]) if peek is not None else None
        if what:
            raise InputError(f"stdin is not PGN, EPD or FEN text: {what}")
        return contextlib.nullcontext(_text_lines(stdin.buffer))
    return _closing_lines(open(path, "rb"))


@contextlib.contextmanager
def _closing_lines(f):
    with f:
        yield _text_lines(f)


def _text_lines(f) -> Iterator[str]:
    first = True
    for raw in f:
        if first:
            raw = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
            first = False
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        text = text.replace("\r\n", "\n")
        if "\r" in text:  # old Mac line ends, as text mode's universal newlines read them
            yield from text.replace("\r", "\n").splitlines(True)
        else:
            yield text


def _sniff(first_line: str) -> str:
    s = first_line.strip()
    if s.startswith("[") or re.match(r"\d+\s*\.", s):
        return "pgn"
    return "fen"


def read_games(inputs: Iterable[str], fmt: str = "auto") -> Iterator[tuple[RawGame, int]]:
    """(game, bytes read so far) for every game of every input, numbered from 1."""
    number = 0
    done = 0
    for path in inputs:
        kind = fmt if fmt != "auto" else _EXT.get(os.path.splitext(path)[1].lower(), "auto")
        kind = "fen" if kind == "epd" else kind
        name = "<stdin>" if path == "-" else path
        with _open(path) as f:
            lines = _numbered(f)
            if kind == "auto":
                head = []
                for item in lines:
                    head.append(item)
                    if item[1].strip():
                        break
                kind = _sniff(head[-1][1]) if head else "fen"
                lines = _chain(head, lines)
            split = _split_pgn if kind == "pgn" else _split_fen
            for line_no, text, size, error in split(lines):
                number += 1
                done += size
                yield RawGame(number, name, line_no, "pgn" if kind == "pgn" else "fen", text, error), done


def read_units(inputs: Iterable[str], fmt: str = "auto", games_per_unit: int = 16, max_positions: int = 4096,
               after_game: int = 0, max_games: Optional[int] = None) -> Iterator[Unit]:
    """Games grouped into units of at most `games_per_unit` games (or about `max_positions` plies);
    games up to `after_game` (resume) are read and skipped; at most `max_games` games in all."""
    unit = Unit()
    plies = 0
    for game, done in read_games(inputs, fmt):
        if max_games is not None and game.number > max_games:
            break
        if game.number <= after_game:
            continue
        unit.games.append(game)
        unit.done_bytes = done
        plies += game.text.count(".") + 1 if game.kind == "pgn" else 1
        if len(unit.games) >= games_per_unit or 2 * plies >= max_positions:
            yield unit
            unit, plies = Unit(), 0
    if unit.games:
        yield unit


def _numbered(f) -> Iterator[tuple[int, str]]:
    for n, line in enumerate(f, 1):
        yield n, line


def _chain(head, rest):
    yield from head
    yield from rest


def _split_fen(lines) -> Iterator[tuple[int, str, int, None]]:
    for n, line in lines:
        s = line.strip()
        if s and not s.startswith("#"):
            yield n, s, len(line), None


_TAG_LINE = re.compile(r'\[[A-Za-z][A-Za-z0-9_+#=:-]*\s+"')  # how a tag pair starts: [Name "


def _split_pgn(lines) -> Iterator[tuple[int, str, int, Optional[tuple]]]:
    """(first line, text, characters, error) of each game, split where python-chess's `read_game`
    splits a file of well-formed games: a new game starts at a tag line (`[Name "`) that follows
    movetext (moves, or only a result), or that follows two blank lines in a game of tags only
    (python-chess lets one blank line pass among tags). Tags such as `[EventDate` or a second
    `[Event` in the same tag section belong to the game. Lines starting with `%` (escape) or `;`
    (comment) outside a `{` comment are skipped, as python-chess skips them.

    Where python-chess reads damaged text in a way that would lose games, the split keeps them: a
    blank line inside movetext does not end the game (python-chess would start a tag-less game with
    the rest of its moves), and inside a `{` comment a tag line ends the comment: it was never
    closed, and the game that opened it is given an error (line, message) instead of swallowing
    the games after it; so is a comment still open at the end of the input."""
    buf: list[str] = []
    start = size = 0
    seen_moves = False
    blanks = 0  # blank lines in a row since the last tag line (tags-only games)
    depth = 0  # open `{` comment in the movetext
    opened = 0  # the line of that `{`
    error = None
    for n, line in lines:
        s = line.lstrip()
        if not depth and (line.startswith("%") or line.startswith(";")):  # escape line, comment line
            size += len(line)
            if buf:
                buf.append(line)
            continue
        tag = _TAG_LINE.match(s) is not None
        if tag and depth:
            error = (opened, f"the {{ comment opened on line {opened} is never closed (a tag line follows on line {n})")
            depth = 0
        if tag and buf and (seen_moves or error or blanks >= 2):
            yield start, "".join(buf), size, error
            buf, size, seen_moves, error = [], 0, False, None
        if not buf:
            if not s.strip():
                size += len(line)
                continue
            start = n
        buf.append(line)
        size += len(line)
        if not s.strip():
            blanks += 1
        elif tag or (s.startswith("[") and not seen_moves):  # tags, or a damaged line among them
            blanks = 0
        else:
            seen_moves = True
            was = depth
            depth = _brace_depth(line, depth)
            if depth and not was:
                opened = n
    if buf and any(x.strip() for x in buf):
        if depth and error is None:
            error = (opened, f"the {{ comment opened on line {opened} is never closed")
        yield start, "".join(buf), size, error


def _brace_depth(line: str, depth: int) -> int:
    for ch in line:
        if ch == "{":
            depth = 1
        elif ch == "}":
            depth = 0
        elif ch == ";" and depth == 0:
            break
    return depth
