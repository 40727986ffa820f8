"""The output files of `lc0-rocm analyse`: JSONL, CSV, annotated PGN; per-game flush; `--resume`.

Games arrive in input order (`formats.GameOutput`); each game's text is written whole and the files
are flushed after it, so a reader of the files (or an interrupted run) only ever sees whole games.
A sidecar `<first output>.resume.json` records, after a game when `SAVE_INTERVAL_S` has passed since
the last save (both modes: a search mode game takes longer, so each is saved; a kill in raw mode
redoes at most that long's games) and when the run stops early, the last game written and every file's size at that point; every file is flushed and synced
before the sidecar is written, so it only counts what all of them hold. `--resume` truncates each file
to its recorded size and continues after that game: no game is lost or written twice, whatever
stopped the run (Ctrl-C, SIGKILL, a crash, a full disk). A run that finishes removes the sidecar. The sidecar also records the inputs and settings; resuming
with other ones is refused. Without any file output, JSONL goes to stdout. `--summary FILE` gets one
row per analysed game (`summary.SUMMARY_KEYS`) as CSV, JSON Lines, or a JSON array (its closing
bracket is written after the sidecar's sizes, so a resumed run cuts it and appends). A write that fails (no
space left, a file-size limit) is one `OutputError` line naming the file and the last whole game;
the sidecar keeps the sizes at that game, so `--resume` continues from there.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Callable, Optional

from ..errors import Lc0RocmError
from .formats import csv_header
from .summary import SUMMARY_KEYS

KINDS = ("jsonl", "csv", "pgn", "summary")
SUMMARY_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl"}
SAVE_INTERVAL_S = 0.5  # seconds between sidecar saves (and the fsyncs before them): the one policy of both modes


class OutputError(Lc0RocmError):
    """An output cannot be written or a run cannot be resumed."""


def summary_format(path: str) -> str:
    """csv, json or jsonl from the `--summary` file's extension."""
    fmt = SUMMARY_FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise OutputError(f"--summary {path}: expected a .csv, .json or .jsonl file")
    return fmt


def summary_csv_header() -> str:
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(SUMMARY_KEYS)
    return buf.getvalue()


def sidecar_path(paths: dict) -> Optional[str]:
    for kind in KINDS:
        p = paths.get(kind)
        if p and p != "-":
            return p + ".resume.json"
    return None


class Outputs:
    """The sink of a run: `write(unit, [GameOutput])`, `close()`; `after_game` is where a resumed run
    starts (0: from the beginning)."""

    def __init__(self, paths: dict, mode: str, signature: dict, resume: bool = False,
                 note: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
                 on_game: Optional[Callable] = None):
        self.paths = {k: v for k, v in paths.items() if v}
        if not self.paths:
            self.paths = {"jsonl": "-"}
        self.mode = mode
        self.signature = signature
        self.note = note
        self.on_game = on_game
        self.sidecar = sidecar_path(self.paths)
        self.summary_format = summary_format(self.paths["summary"]) if "summary" in self.paths else None
        self.after_game = 0
        self.last_game = 0
        self.files: dict = {}
        self.sizes: dict = {}  # bytes handed to each file
        self.whole: dict = {}  # each file's size after the last whole game (what the sidecar records)
        self._saved = 0.0
        if resume and self.sidecar is None:
            raise OutputError("--resume needs a file output (--jsonl, --csv or --pgn-out)")
        state = self._load_state() if resume else None
        self.resumed = state is not None
        try:
            for kind, path in self.paths.items():
                if path == "-":
                    self.files[kind] = sys.stdout.buffer
                    self.sizes[kind] = 0
                    continue
                if state is not None:
                    size = int(state["sizes"].get(kind, 0))
                    with open(path, "ab") as f:
                        if f.tell() < size:
                            raise OutputError(f"cannot resume: {path} is shorter than {self.sidecar} says")
                        f.truncate(size)
                    f = open(path, "ab")
                else:
                    f = open(path, "wb")
                    size = 0
                self.files[kind] = f
                self.sizes[kind] = size
                if kind == "csv" and size == 0:
                    self._write(kind, csv_header(mode))
                if kind == "summary" and size == 0:
                    self._write(kind, {"csv": summary_csv_header(), "json": "["}.get(self.summary_format, ""))
        except OSError as e:
            self.close(final=False)
            raise OutputError(f"cannot write {e.filename or path}: {e.strerror or e}") from None
        self.whole = dict(self.sizes)
        if state is not None:
            self.after_game = self.last_game = int(state["game"])
        self._save()

    def _load_state(self) -> Optional[dict]:
        if not os.path.exists(self.sidecar):
            existing = [p for p in self.paths.values() if p != "-" and os.path.exists(p) and os.path.getsize(p)]
            if existing:
                raise OutputError(f"cannot resume: {existing[0]} exists but {self.sidecar} does not "
                                  "(the run that wrote it finished, or it was written by another command or "
                                  "with other outputs)")
            return None
        try:
            with open(self.sidecar, encoding="utf-8") as f:
                state = json.load(f)
            int(state["game"])
            dict(state["sizes"])
        except (OSError, ValueError, KeyError, TypeError):
            raise OutputError(f"cannot resume: {self.sidecar} is unreadable") from None
        old = state.get("signature", {})
        for key, value in self.signature.items():
            if key in old and old[key] != value:
                raise OutputError(f"cannot resume: {key} differs from the interrupted run's "
                                  f"({old[key]!r} then, {value!r} now)")
        if set(state["sizes"]) != {k for k, p in self.paths.items() if p != "-"}:
            raise OutputError(f"cannot resume: the outputs differ from the interrupted run's ({', '.join(sorted(state['sizes']))})")
        return state

    def _write(self, kind: str, text: str) -> None:
        data = text.encode("utf-8")
        try:
            self.files[kind].write(data)
        except OSError as e:
            raise self._failed(kind, e) from None
        self.sizes[kind] += len(data)

    def _failed(self, kind: str, e: OSError) -> OutputError:
        held = f"whole games up to game {self.last_game}" if self.last_game else "no game yet"
        return OutputError(f"cannot write {self.paths[kind]}: {e.strerror or e}; the outputs hold {held} "
                           "(make room and run again with --resume)")

    def _flush(self) -> None:
        for kind, f in self.files.items():
            try:
                f.flush()
            except OSError as e:
                raise self._failed(kind, e) from None

    def write(self, unit, outputs: list) -> None:
        for go in outputs:
            if go.error is not None:
                self.note(f"lc0-rocm: game {go.number} ({go.source} line {go.line}): {go.error}; skipped")
            else:
                for kind in self.files:
                    text = getattr(go, kind) if kind != "summary" else self._summary_text(go.summary)
                    if text:
                        self._write(kind, text)
                self._flush()
            self.whole = dict(self.sizes)
            self.last_game = go.number
            if self.on_game is not None:
                self.on_game(go)
        if time.monotonic() - self._saved >= SAVE_INTERVAL_S:
            self._save()

    def _summary_text(self, summary: Optional[dict]) -> str:
        if summary is None:
            return ""
        if self.summary_format == "csv":
            import csv
            import io

            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerow(["" if summary[k] is None else summary[k] for k in SUMMARY_KEYS])
            return buf.getvalue()
        text = json.dumps(summary)
        if self.summary_format == "json":
            return ("\n" if self.sizes["summary"] <= 1 else ",\n") + text
        return text + "\n"

    def _save(self) -> None:
        """Write the sidecar: the last whole game and the files' sizes there. Every file is flushed
        and synced first, so the sidecar never counts bytes a file may not hold after a kill or a
        crash of the machine (a CSV header written at the start included)."""
        self._saved = time.monotonic()
        if self.sidecar is None:
            return
        self._flush()
        for kind, f in self.files.items():
            if self.paths[kind] != "-":
                try:
                    os.fsync(f.fileno())
                except OSError as e:
                    raise self._failed(kind, e) from None
        state = {"game": self.last_game, "sizes": {k: v for k, v in self.whole.items() if self.paths[k] != "-"},
                 "signature": self.signature}
        tmp = self.sidecar + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.sidecar)
        except OSError as e:
            raise OutputError(f"cannot write {self.sidecar}: {e.strerror or e}") from None

    def _remove_sidecar(self) -> None:
        """A finished run leaves no sidecar (nothing is left to resume)."""
        for path in (self.sidecar, f"{self.sidecar}.tmp"):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                self.note(f"lc0-rocm: cannot remove {path}: {e.strerror or e}")

    def discard(self) -> None:
        """Close the outputs of a run that never started (its backend failed to open): the files it
        created, and its sidecar, are removed; a resumed run's are kept as the interrupted run left them."""
        self.close()
        if self.resumed or self.last_game:
            return
        for kind, path in self.paths.items():
            if path != "-":
                try:
                    os.remove(path)
                except OSError:
                    pass
        if self.sidecar is not None:
            self._remove_sidecar()

    def close(self, final: bool = True, complete: bool = False) -> None:
        if final and self.files and complete:
            try:
                self._flush()
            except OutputError:  # the end did not reach the files: keep the sidecar of the last save
                complete = False
        if final and self.files and not complete:
            try:
                self._save()
            except OutputError:
                pass
        if self.summary_format == "json" and "summary" in self.files:
            try:
                self.files["summary"].write(b"\n]\n")  # after the recorded size: a resumed run cuts it
            except (OSError, ValueError):
                pass
        for kind, f in self.files.items():
            try:
                if self.paths.get(kind) == "-":
                    f.flush()
                else:
                    f.close()
            except (OSError, ValueError):
                pass
        if final and complete and self.files and self.sidecar is not None:
            self._remove_sidecar()
        self.files = {}
