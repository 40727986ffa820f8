"""Where the default network lives: the project's `weights/` folder (LC0_ROCM_WEIGHTS overrides)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_NET_NAME = "bt-small-smolgen-pedense.pb.gz"


def weights_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "weights"


def default_net_path() -> Path:
    env = os.environ.get("LC0_ROCM_WEIGHTS")
    if env:
        return Path(env)
    return weights_dir() / DEFAULT_NET_NAME
