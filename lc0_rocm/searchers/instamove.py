"""lc0's instamove algorithms behind the seam (`src/search/instamove/instamove.cc`): `policyhead` and
`valuehead` (lc0_rocm/instamove.py) keep nothing between `go`s and compile nothing; each `go` is
one batch, answered at once or held for `stop` / `ponderhit` (`go infinite`, `go ponder`)."""

from __future__ import annotations

from typing import Optional

from ..engine_options import INSTAMOVE_OPTIONS
from ..search.limits import GoParams
from .base import GoReply, SearchHost


class InstamoveSearcher:
    """`algorithm`: "policyhead" or "valuehead"."""

    options = INSTAMOVE_OPTIONS  # `uci` lists only what lc0 declares in these modes

    def __init__(self, host: SearchHost, algorithm: str):
        self.host = host
        self.algorithm = algorithm
        self.search = None
        self.go: Optional[GoParams] = None

    def prepare(self, minibatch: int) -> bool:
        """The backend's batch sizes only: one evaluation per `go`, nothing of the search to compile."""
        from ..search.warmup import prepare_backend

        prepare_backend(self.host.evaluator, minibatch)
        return False

    def backend_changed(self) -> None:
        pass

    def new_game(self) -> None:
        pass

    def start(self, position, go: GoParams, received: Optional[float], reply: GoReply) -> None:
        from ..instamove import InstamoveSearch

        host = self.host
        host.sync_evaluator()
        self.go = go
        holder: list = []

        def on_bestmove(best, ponder) -> None:
            if holder:
                host.note_search_error(holder[0].error)
            reply.bestmove(best, ponder)

        self.search = InstamoveSearch(self.algorithm, host.evaluator, position.history, go.infinite or go.ponder,
                                      host.r.instamove_info, on_bestmove)
        holder.append(self.search)
        self.search.start()

    def ponderhit(self) -> None:
        s = self.search
        if s is not None and s.running and self.go is not None and self.go.ponder:
            s.ponderhit()
