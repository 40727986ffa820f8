"""Where the default network lives: package data `lc0_rocm/weights/` in an installed wheel (the
repository's top-level `weights/` folder, mapped to `lc0_rocm.weights` by pyproject.toml), else the
repository's `weights/` beside the package (editable install, running from the repo).
LC0_ROCM_WEIGHTS overrides."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

DEFAULT_NET_NAME = "bt-small-smolgen-pedense.pb.gz"


def weights_dir() -> Path:
    packaged = resources.files(__package__) / "weights"
    if packaged.joinpath(DEFAULT_NET_NAME).is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "weights"


def default_net_path() -> Path:
    env = os.environ.get("LC0_ROCM_WEIGHTS")
    if env:
        return Path(env)
    return weights_dir() / DEFAULT_NET_NAME
