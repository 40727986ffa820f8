"""The parts of an `lc0-rocm analyse` run that the local run (`driver`) and the Ray run (`ray_runner`)
share (both take their settings from `request.AnalyseRequest`): opening the outputs, the last line and
Ctrl-C's handling.
"""

from __future__ import annotations

import sys

from .reader import InputError
from .writers import Outputs


def open_outputs(paths: dict, mode: str, signature: dict, resume: bool, progress) -> Outputs:
    """The run's `Outputs`, counting games on the progress line (both modes save the resume sidecar by
    the writer's one policy, `writers.SAVE_INTERVAL_S`)."""
    outputs = Outputs(paths, mode, signature, resume, note=progress.note,
                      on_game=lambda go: progress.update(go.positions, 1, skipped=int(go.error is not None)))
    if outputs.after_game:
        progress.note(f"lc0-rocm: resuming after game {outputs.after_game}")
    return outputs


def check_read(progress, outputs, inputs) -> None:
    """InputError when the inputs held no game or position at all (an empty or non-chess file)."""
    if progress.games == 0 and not outputs.after_game:
        names = ", ".join("stdin" if i == "-" else i for i in inputs)
        raise InputError(f"no game or position found in {names}")


def summary(progress, seconds: float, how: str) -> None:
    """The run's last line on stderr: positions, games (skipped ones), time and `how` it ran."""
    skipped = f" ({progress.skipped} skipped)" if progress.skipped else ""
    print(f"lc0-rocm analyse: {progress.positions} positions, {progress.games} games{skipped} in {seconds:.1f} s "
          f"{how}", file=sys.stderr)


def write_all(body, outputs, progress, max_games=None) -> int:
    """Run `body` (which feeds `outputs`) and close the outputs: complete (the resume sidecar removed)
    when it ends, unless it stopped at `--max-games` (the rest can be resumed); left holding whole
    games with exit code 130 on Ctrl-C."""
    try:
        body()
    except KeyboardInterrupt:
        outputs.close()
        progress.close()
        print(f"lc0-rocm: interrupted after game {outputs.last_game}; the outputs hold whole games "
              "(run again with --resume to continue)", file=sys.stderr)
        return 130
    except BaseException:
        outputs.close()
        raise
    outputs.close(complete=not (max_games and outputs.last_game >= max_games))
    progress.close()
    return 0

