"""What one `lc0-rocm analyse` run is asked to do, typed and checked: `AnalyseRequest`.

`commands/analyse.py` builds it once from the command line (`build_request`, the one place that
reads argparse's namespace) and the run (`driver`, `ray_runner`) takes it; nothing in this package
sees the namespace. Its parts: the inputs, the outputs, the net and backend, the scale of the run;
beside them the positions' selection, the judgement thresholds and the mode (raw, or search with
`nodes`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from .reader import Selection
from .records import Thresholds


@dataclass(frozen=True)
class Inputs:
    paths: tuple  # files, "-" for stdin (at most once)
    format: str = "auto"  # auto, pgn, epd or fen


@dataclass(frozen=True)
class OutputFiles:
    jsonl: Optional[str] = None  # "-" for stdout
    csv: Optional[str] = None
    pgn: Optional[str] = None  # --pgn-out
    summary: Optional[str] = None
    plot: Optional[str] = None  # a folder
    html: Optional[str] = None
    resume: bool = False
    progress: Optional[bool] = None  # None: when stderr is a terminal

    def paths(self) -> dict:
        """The record files by kind, as `writers.Outputs` takes them."""
        return {"jsonl": self.jsonl, "csv": self.csv, "pgn": self.pgn, "summary": self.summary}

    def wanted(self) -> frozenset:
        """The kinds of record file asked for; JSONL (on stdout) when none is."""
        return frozenset(k for k, v in self.paths().items() if v) or frozenset({"jsonl"})


@dataclass(frozen=True)
class BackendChoice:
    weights: Optional[str] = None  # None: the bundled net
    name: str = ""
    options: str = ""  # lc0-style backend options
    batch_size: int = 0  # 0: the backend's max batch


@dataclass(frozen=True)
class Scale:
    workers: int = -1  # -1: the default for the backend
    ray: Optional[str] = None  # the Ray address, or None for a local run
    ray_actors: int = 0  # 0: one per GPU of the cluster, or 2 on CPUs


@dataclass(frozen=True)
class AnalyseRequest:
    inputs: Inputs
    outputs: OutputFiles
    backend: BackendChoice
    scale: Scale
    selection: Selection
    thresholds: Thresholds
    nodes: Optional[int] = None  # None: raw network, else a search of `nodes` per position
    top: int = 5  # raw mode: policy moves per record (0: all)
    max_games: Optional[int] = None
    signature: Optional[dict] = None  # what a resumed run must share with the interrupted one

    @property
    def mode(self) -> str:
        return "search" if self.nodes else "raw"

    def annotator(self) -> str:
        """The annotated PGN's Annotator header: the net and how it ran."""
        net = os.path.basename(self.backend.weights) if self.backend.weights else "default net"
        how = f"search {self.nodes} nodes" if self.nodes else "raw network"
        return f"lc0-rocm analyse ({net}, {how})"
