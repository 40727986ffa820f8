"""The public Python API: load a net, open a backend, evaluate positions.

    import chess, lc0_rocm
    with lc0_rocm.open_backend() as ev:                 # bundled net, backend "auto"
        e = ev.evaluate(chess.Board())                  # one position -> one Evaluation
        print(e.best_move, e.wdl, e.q)
        many = ev.evaluate(["8/8/8/4k3/8/8/4P3/4K3 w - - 0 1", (None, ["e2e4", "e7e5"])])  # -> list

This is the one place where "backend options → head options → load the net → create the backend" is
written; the commands (`eval`, `validate`, `backendbench`), the tools and the UCI engine call
`open_backend`. The backend names and the auto policy are `backends.factory`'s.

Positions are python-chess `chess.Board`s (their move stack is the history the net sees), FEN strings
("startpos" = the start position; an empty or blank string is an error, not the start position) or
`(fen, moves)` pairs (fen None = the start position, moves a list of UCI strings or `chess.Move`s). A Board, a string or such a pair is one position and gives one
`Evaluation`; a list (or any other iterable) of them gives a list, evaluated in batches of the
backend's `max_batch` (backends/base.py's batch contract). An Evaluation is exactly what
`lc0-rocm eval --json` prints (`to_json()`): the policy is the softmax at temperature 1 (exact exp)
of the raw logits over the legal moves, sorted high to low; WDL, Q and moves-left are from the side to move's view.

Bad input raises the package's one-line errors (`lc0_rocm.errors`): PositionError for a bad FEN,
move or position type (bytes, a blank FEN, a pair whose moves are one string), NetFormatError for a
missing or unreadable net, ArgumentError for a net argument that is neither a NetDescription, a path
nor None, BackendError for an unknown backend, bad options or no GPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Union, cast, overload

import chess

from .backends.base import Backend
from .backends.factory import (DEFAULT_BACKEND, check_backend_name, create_backend, head_options,
                               parse_backend_options)
from .encoding.outputs import NetOutputs
from .errors import ArgumentError, BackendError, NetFormatError, PositionError
from .net.description import NetDescription

if TYPE_CHECKING:
    from .encoding.history import History

__all__ = ["Evaluation", "Evaluator", "PositionInput", "load_net", "open_backend"]

NetPath = Union[str, "os.PathLike[str]"]
# one position: a Board (its move stack is the history), a FEN or "startpos", or (fen or None, moves)
PositionInput = Union[chess.Board, str, tuple[Optional[str], Sequence[Union[str, chess.Move]]]]


def load_net(path: Optional[NetPath] = None, check_outputs: bool = True, **head_options: str) -> NetDescription:
    """The NetDescription of a weights file (None = the bundled default net).

    `head_options`: `policy_head` ("vanilla", "optimistic", ...) and `value_head` ("winner", "q", "st")
    for multi-head nets. A missing, unreadable or unusable file is a NetFormatError; `check_outputs`
    also evaluates the start position once with the numpy reference and rejects non-finite outputs."""
    from .default_net import default_net_path
    from .net import loader

    _check_net_argument(path, "load_net", allow_description=False)
    path = default_net_path() if path is None else path
    try:
        net = loader.load_net(path, **head_options)
    except OSError as e:
        raise NetFormatError(f"{e.strerror or type(e).__name__}: {e.filename or path}") from None
    if check_outputs:
        from .backends.cpu import CpuBackend

        _check_start_position(CpuBackend(net), net)
    return net


def open_backend(net_or_path: Union[NetDescription, NetPath, None] = None, backend: str = DEFAULT_BACKEND,
                 options: str = "", notify: Optional[Callable[[str], None]] = None,
                 max_batch: Optional[int] = None, check: Optional[bool] = None,
                 check_batch: Optional[Callable[[Backend], int]] = None) -> "Evaluator":
    """An `Evaluator` for a net (a NetDescription, a weights path, or None = the bundled net) on the named
    backend (`backends.factory.BACKEND_NAMES`; "auto" = the GPU when usable, else cpu with one notice).

    `options` is lc0's backend-options string ("policy_head=optimistic,gpus=0,1"); its heads choose
    what a path is loaded with (a NetDescription must already have been loaded with them, e.g. by
    `load_for_backend`). `notify(message)` receives auto's fallback notice (default: one line on
    stderr). `max_batch` overrides a GPU backend's device batch (`backends.factory.create_backend`).
    `check`: evaluate the start position on the backend and reject non-finite outputs (default: for a
    path, not for a NetDescription); `check_batch(backend)`: the batch to check it in (default 1)."""
    _check_net_argument(net_or_path, "open_backend")
    check_backend_name(backend)  # before loading a large net
    opts = parse_backend_options(options)
    if isinstance(net_or_path, NetDescription):
        net = net_or_path
    else:
        net = load_for_backend(net_or_path, options)
    if check is None:
        check = not isinstance(net_or_path, NetDescription)
    be = create_backend(backend, net, options, notify, max_batch)
    if not check:
        return Evaluator(be.net, be, opts)
    ev = Evaluator(be.net, be, opts)  # the backend's view of the net (random, trivial: lc0's formats)
    try:
        _check_start_position(ev.backend, ev.net, check_batch(be) if check_batch is not None else 1)
    except BaseException:
        ev.close()
        raise
    return ev


def load_for_backend(path: Optional[NetPath] = None, options: str = "") -> NetDescription:
    """The net of a weights path (None = the bundled net) as `open_backend` loads it for `options`
    (their heads), its outputs not yet checked: `open_backend(net, ..., check=True)` checks them on
    the backend (a GPU does it in milliseconds where the numpy reference takes seconds for a BT4-class
    net). Lets a caller start other work between loading a net and starting its backend."""
    _check_net_argument(path, "load_for_backend", allow_description=False)
    return load_net(path, check_outputs=False, **head_options(parse_backend_options(options)))


def _check_net_argument(value: Any, function: str, allow_description: bool = True) -> None:
    """ArgumentError unless `value` is None, a str or os.PathLike path (or a NetDescription)."""
    if value is None or isinstance(value, (str, os.PathLike)) or (allow_description and isinstance(value, NetDescription)):
        return
    what = "a NetDescription, a weights path or None" if allow_description else "a weights path or None"
    raise ArgumentError(f"{function}: expected {what}, got {type(value).__name__} {value!r:.40}")


def _check_start_position(backend: Backend, net: NetDescription, copies: int = 1) -> None:
    """The last proof that a net is usable (weights that decode may still overflow): a NetFormatError naming the first output of the
    start position's evaluation that holds NaN or inf (weights that overflow). `copies`: the batch it is
    evaluated in (a caller that runs batches of one size on a GPU checks at that size, so that the GPU
    tunes its GEMMs and captures its graphs for that size only)."""
    import chess
    import numpy as np

    from .encoding.packed import PackedPlanes
    from .encoding.planes import encode_position

    name = os.path.basename(str(net.metadata.get("path", "weights")))
    try:
        with np.errstate(all="ignore"):  # an overflowing net is reported below, not as numpy warnings
            planes = encode_position(chess.Board(), net.input_format)
            if copies > 1:
                planes = PackedPlanes.concat([planes] * copies)
            out = backend.evaluate(planes)
    except (ValueError, ArithmeticError) as e:
        raise NetFormatError(f"{name}: evaluating the start position failed ({e})") from None
    for key in ("policy", "wdl", "q", "d", "mlh"):
        v = getattr(out, key, None)
        if v is not None and not np.all(np.isfinite(v)):
            raise NetFormatError(f"{name}: outputs are not finite on the start position ({key} holds NaN/inf "
                                 f"on the {backend.name} backend; the weights overflow)")


@dataclass(frozen=True)
class Evaluation:
    """The network's view of one position (side to move's point of view)."""

    fen: str
    policy: dict[chess.Move, float]  # legal moves only, sorted high to low (ties by UCI string)
    wdl: Optional[tuple[float, float, float]]  # (win, draw, loss) or None for a tanh-value net
    q: float  # W - L, or the tanh value
    moves_left: Optional[float]  # plies left, or None without a moves-left head
    logits: Optional[dict[chess.Move, float]] = field(default=None, repr=False)  # raw logits with logits=True

    @property
    def best_move(self) -> Optional[chess.Move]:
        """The move with the highest policy, or None when there is no legal move."""
        return next(iter(self.policy), None)

    def to_json(self) -> dict[str, Any]:
        """The `lc0-rocm eval --json` contract: {"policy": {uci: p}, "wdl": [w, d, l] | None, "q": q,
        "mlh": m | None}."""
        return {
            "policy": {move.uci(): p for move, p in self.policy.items()},
            "wdl": list(self.wdl) if self.wdl is not None else None,
            "q": self.q,
            "mlh": self.moves_left,
        }


class Evaluator:
    """A net on an open backend. A context manager: the backend is closed on exit (or by `close()`).

    Attributes: `net` (NetDescription), `backend` (the `backends.base.Backend`), `backend_name` (the
    backend in use, e.g. "cpu" after auto fell back), `options` (the parsed backend options)."""

    def __init__(self, net: NetDescription, backend: Backend, options: Optional[Mapping[str, str]] = None):
        self.net = net
        self.backend = backend
        self.options: dict[str, str] = dict(options or {})
        self._closed = False

    @property
    def backend_name(self) -> str:
        return self.backend.name

    # a str is also an Iterable[str]: the first overload (one position) wins, as at run time
    @overload
    def evaluate(self, positions: PositionInput, logits: bool = False) -> Evaluation: ...  # type: ignore[overload-overlap]

    @overload
    def evaluate(self, positions: Iterable[PositionInput], logits: bool = False) -> list[Evaluation]: ...

    def evaluate(self, positions: Union[PositionInput, Iterable[PositionInput]],
                 logits: bool = False) -> Union[Evaluation, list[Evaluation]]:
        """One Evaluation for one position, a list of Evaluations for a list/iterable of positions.

        Many positions are evaluated in batches of `backend.max_batch`. With logits=True every
        Evaluation also carries the raw policy logits of the legal moves."""
        from .encoding.planes import encode_positions

        if self._closed:
            raise BackendError("this evaluator is closed")
        single = _is_single(positions) or not _is_iterable(positions)
        items: list[Any] = [positions] if single else list(cast("Iterable[Any]", positions))
        histories = [_history(p, None if single else i) for i, p in enumerate(items)]
        results: list[Evaluation] = []
        if histories:  # in pieces of one backend pass: the outputs of one pass at a time are held
            planes = encode_positions(histories, self.net.input_format)
            for piece in planes.chunks(max(1, int(self.backend.max_batch))):
                out = self.backend.evaluate(piece)
                done = len(results)
                results += [_evaluation(histories[done + j], out, j, int(piece.transforms[j]), logits)
                            for j in range(len(piece))]
        return results[0] if single else results

    def close(self) -> None:
        """Release the backend (idempotent)."""
        if not self._closed:
            self._closed = True
            self.backend.close()

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        path = self.net.metadata.get("path", "?")
        return f"Evaluator({path}, backend {self.backend_name}{', closed' if self._closed else ''})"


# ------------------------------------------------------------------------------------------------
# positions


def _is_pair(p: Any) -> bool:
    """(fen or None, [moves]): a 2-sequence whose second item is a sequence of UCI strings / Moves."""
    if not isinstance(p, (tuple, list)) or len(p) != 2:
        return False
    fen, moves = p
    return ((fen is None or isinstance(fen, str)) and isinstance(moves, (tuple, list))
            and all(isinstance(m, (str, chess.Move)) for m in moves))


def _is_iterable(x: Any) -> bool:
    try:
        iter(x)
    except TypeError:
        return False
    return True


def _is_single(positions: Any) -> bool:
    if isinstance(positions, (chess.Board, str, bytes, bytearray)):
        return True
    return isinstance(positions, tuple) and (_is_pair(positions) or _is_pair_with_move_string(positions))


def _is_pair_with_move_string(p: Any) -> bool:
    """(None, "e2e4 ..."): a (fen, moves) pair whose moves are one string, not a list of moves."""
    return (isinstance(p, tuple) and len(p) == 2 and p[0] is None and isinstance(p[1], str))


def _fen_text(fen: str) -> str:
    """A FEN string as given; PositionError for an empty or blank one (a blank CSV cell is not the
    start position: "startpos" is)."""
    if not fen.strip():
        raise PositionError("empty FEN string (give a FEN, or 'startpos' for the start position)")
    return fen


def _history(p: Any, index: Optional[int]) -> History:
    """The History of one position; a PositionError naming the position (in a batch) when it is bad."""
    from .encoding.position import parse_position

    try:
        if isinstance(p, chess.Board):
            return _board_history(p)
        if isinstance(p, str):
            return parse_position(_fen_text(p), [])
        if isinstance(p, (bytes, bytearray)):
            raise PositionError(f"expected a FEN string, got {type(p).__name__} (decode it first: "
                                f"{bytes(p[:20])!r}{'...' if len(p) > 20 else ''})")
        if _is_pair_with_move_string(p):
            raise PositionError(f"the moves of a (fen, moves) pair must be a list of UCI moves, got the string "
                                f"{p[1]!r:.40} (write [{p[1].split()[0]!r}, ...] if it is moves)"
                                if p[1].split() else "the moves of a (fen, moves) pair must be a list, got ''")
        if _is_pair(p):
            fen, moves = p
            fen = _fen_text(fen) if isinstance(fen, str) else fen
            return parse_position(fen, [m.uci() if isinstance(m, chess.Move) else m for m in moves])
        raise PositionError(f"expected a chess.Board, a FEN string or a (fen, moves) pair, got {type(p).__name__}")
    except PositionError as e:
        if index is None:
            raise
        raise PositionError(f"position {index + 1}: {e}") from None


def _board_history(board: chess.Board) -> History:
    """History of a python-chess board, checked as strictly as a FEN + moves: a valid root position and
    legal moves (python-chess's `push` does not check legality)."""
    from .encoding.history import History
    from .encoding.position import check_counters, parse_board

    root = board.root()
    if not root.is_valid():
        parse_board(root.fen())  # raises the descriptive one-line error
        raise PositionError(f"illegal position '{root.fen()}'")
    check_counters(root, len(board.move_stack))
    for n, move in enumerate(board.move_stack, 1):
        if not root.is_legal(move):
            raise PositionError(f"illegal move '{move.uci()}' (move {n}) in position '{root.fen()}'")
        root.push(move)
    return History.from_board(board)


def _evaluation(history: History, out: NetOutputs, j: int, transform: int, with_logits: bool) -> Evaluation:
    import numpy as np

    from .encoding.legal_policy import softmax_logits
    from .encoding.policy_map import legal_move_indices

    board = history.board
    # encoding.legal_policy.legal_policy at temperature 1 with exact exp, keeping the legal moves' logits
    moves, idx = legal_move_indices(board, transform)
    selected = np.asarray(out.policy[j], dtype=np.float32)[idx]
    probs = softmax_logits(selected, 1.0, use_fast_exp=False)
    ranked = sorted(zip(moves, probs.tolist(), selected.tolist()), key=lambda t: (-t[1], t[0].uci()))
    policy = {move: p for move, p, _ in ranked}
    raw = {move: x for move, _, x in ranked} if with_logits else None
    return Evaluation(
        fen=board.fen(),
        policy=policy,
        wdl=(float(out.wdl[j, 0]), float(out.wdl[j, 1]), float(out.wdl[j, 2])) if out.wdl is not None else None,
        q=float(out.q[j]),
        moves_left=float(out.mlh[j]) if out.mlh is not None else None,
        logits=raw,
    )
