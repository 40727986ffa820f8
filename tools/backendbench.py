#!/usr/bin/env python3
"""Thin script for `lc0-rocm backendbench` (same flags), runnable from a checkout without installing.

    python3 tools/backendbench.py --backend cpu --max-batch-size 64 --batch-step 8 --clippy
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lc0_rocm.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["backendbench", *sys.argv[1:]]))
