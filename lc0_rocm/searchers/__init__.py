"""The engine's search algorithms, picked by name from one registry (lc0's `SearchManager` and its
`REGISTER_SEARCH`, `src/search/register.h`): "mcts" (the engine's own, searchers/mcts.py) and
lc0's instamove modes "policyhead" / "valuehead" (searchers/instamove.py), each a `Searcher`
(searchers/base.py). A searcher's module is imported when it is made, so that `uci` answers before
anything heavy loads."""

from __future__ import annotations

from typing import Callable

DEFAULT = "mcts"


def _mcts(host):
    from .mcts import MctsSearcher

    return MctsSearcher(host)


def _instamove(algorithm: str) -> Callable:
    def make(host):
        from .instamove import InstamoveSearcher

        return InstamoveSearcher(host, algorithm)

    return make


SEARCHERS: dict[str, Callable] = {DEFAULT: _mcts, "policyhead": _instamove("policyhead"),
                                  "valuehead": _instamove("valuehead")}


def make_searcher(algorithm: str, host):
    """The searcher named `algorithm` over the engine `host` (searchers.base.SearchHost); KeyError for
    an unknown name."""
    return SEARCHERS[algorithm](host)
