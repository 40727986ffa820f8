"""`--plot DIR`: one PNG per game, White's expected score over the moves with the mistakes marked.

x: the move (ply / 2, so 10 = after Black's 10th move is near x 10.5); y: White's expected score
(W + D/2 from White's view, 0 to 1) at each analysed position and after the last analysed move;
inaccuracies, mistakes and blunders are marked where they were played (on the curve after the move),
coloured by kind and labelled with the move. Needs matplotlib (the `plot` extra); drawn with the
Agg canvas, no pyplot state, so threads and worker processes may plot at once.
"""

from __future__ import annotations

import os

_COLOURS = {"?!": "#e0a100", "?": "#e06000", "??": "#d00000"}
_NAMES = {"?!": "inaccuracy", "?": "mistake", "??": "blunder"}


def require_matplotlib() -> None:
    """Lc0RocmError (one line) when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        from ..errors import Lc0RocmError

        raise Lc0RocmError("--plot needs matplotlib: pip install 'lc0-rocm[plot]'") from None


def plot_path(plot_dir: str, number: int) -> str:
    return os.path.join(plot_dir, f"game-{number:05d}.png")


def _title(headers) -> str:
    h = dict(headers)
    white, black = h.get("White", "?"), h.get("Black", "?")
    text = f"{white} – {black}"
    if h.get("Result", "*") != "*":
        text += f"  {h['Result']}"
    extra = ", ".join(x for x in (h.get("Event"), h.get("Date")) if x and "?" not in x)
    return text + (f"\n{extra}" if extra else "")


def plot_game(task, records: list, plot_dir: str, dpi: int = 80) -> str:
    """Write the game's PNG; returns its path."""
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    xs, ys = [], []
    marks = []
    score_at = {r["ply"]: r["white_score"] for r in records}
    for r in records:
        xs.append((r["ply"] - 1) / 2)
        ys.append(r["white_score"])
        nag = r.get("nag")
        if nag in _COLOURS and r.get("played_score") is not None:
            s = r["played_score"]
            y = score_at.get(r["ply"] + 1, s if r["turn"] == "w" else 1 - s)  # on the curve when it goes on
            marks.append((r["ply"] / 2, y, nag, r.get("played_san") or r["played"]))
    last = records[-1]
    if last.get("_after") is not None:
        xs.append(last["ply"] / 2)
        ys.append((1 + last["_after"][0]) / 2)
    fig = Figure(figsize=(8, 3), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.axhline(0.5, color="#999999", linewidth=0.8)
    ax.fill_between(xs, 0.5, ys, color="#cccccc", step=None)
    ax.plot(xs, ys, color="#222222", linewidth=1.4)
    for kind in ("?!", "?", "??"):
        pts = [m for m in marks if m[2] == kind]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], color=_COLOURS[kind], s=30, zorder=3,
                       label=_NAMES[kind])
    for x, y, kind, san in marks:
        if kind == "??":
            ax.annotate(f"{int(x + 0.5)}{'.' if x % 1 else '…'}{san}", (x, y), textcoords="offset points",
                        xytext=(0, 6 if y < 0.5 else -12), ha="center", fontsize=7, color=_COLOURS[kind])
    ax.set_ylim(0, 1)
    ax.set_xlim(0, max(xs[-1], 1))
    ax.set_ylabel("White's expected score")
    ax.set_xlabel("move")
    ax.set_title(_title(task.headers), fontsize=9)
    if marks:
        ax.legend(loc="upper left", fontsize=7, frameon=False)
    fig.tight_layout()
    path = plot_path(plot_dir, task.number)
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=dpi)
    os.replace(tmp, path)
    return path
