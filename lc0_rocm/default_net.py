"""Where the default network lives: the project's `weights/` folder, or for a non-editable install
`<prefix>/share/lc0-rocm/weights` where pip puts it (LC0_ROCM_WEIGHTS overrides)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_NET_NAME = "bt-small-smolgen-pedense.pb.gz"


def weights_dir() -> Path:
    repo = Path(__file__).resolve().parent.parent / "weights"
    if (repo / DEFAULT_NET_NAME).exists():
        return repo
    return Path(sys.prefix) / "share" / "lc0-rocm" / "weights"


def default_net_path() -> Path:
    env = os.environ.get("LC0_ROCM_WEIGHTS")
    if env:
        return Path(env)
    return weights_dir() / DEFAULT_NET_NAME
