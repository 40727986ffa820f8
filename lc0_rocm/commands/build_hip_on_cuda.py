"""`lc0-rocm build-hip-on-cuda`: build the HIP-on-CUDA test libraries and print the LD_LIBRARY_PATH line.

The three libraries (libamdhip64.so, libhiprtc.so, libhipblaslt.so) let hip-python run lc0-rocm on an
NVIDIA GPU for testing. Their C sources live in the repository's hip_on_cuda/ folder (not in the wheel),
so this command works from a source checkout.
"""

from __future__ import annotations

import argparse
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parents[2] / "hip_on_cuda"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="output folder (default: hip_on_cuda/build in the checkout)")
    parser.add_argument("--cuda", default=None, help="CUDA toolkit root (default: $CUDA_HOME or /usr/local/cuda)")


def run(args) -> int:
    import importlib.util

    from ..errors import BackendError

    script = SOURCE_DIR / "build.py"
    if not script.exists():
        raise BackendError(f"hip_on_cuda sources not found at {SOURCE_DIR}: run this from a source checkout")
    spec = importlib.util.spec_from_file_location("hip_on_cuda_build", script)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    out = Path(args.out).resolve() if args.out else SOURCE_DIR / "build"
    try:
        built = build.build(out, build.find_cuda(args.cuda))
    except build.BuildError as e:
        raise BackendError(f"build-hip-on-cuda: {str(e).splitlines()[0]}") from None
    for path in built:
        print(f"built {path}")
    print(f"export LD_LIBRARY_PATH={out}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}")
    return 0
