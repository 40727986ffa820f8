"""Compiled code calling a compiled function with constants compiles it once per argument type
(lc0_rocm/jit.py `_one_body_per_type`), where numba alone compiles one body per constant: the first
start compiled 280 bodies of 163 functions with it, 186 without (docs/perf.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MODULE = '''
import numba
import numpy as np
from lc0_rocm.jit import jit

def add_scaled(a, k, flag):
    return a[0] * k + (1.0 if flag else 0.0)

ours = jit(add_scaled)
plain = numba.njit(add_scaled)

@jit
def call_ours(a):
    return ours(a, 2, True) + ours(a, 3, False) + ours(a, np.int64(4), a[0] > 0)

@numba.njit
def call_plain(a):
    return plain(a, 2, True) + plain(a, 3, False) + plain(a, np.int64(4), a[0] > 0)

a = np.full(1, 1.5)
print(call_ours(a), call_plain(a), len(ours.signatures), len(plain.signatures))
'''


def test_a_callee_compiles_once_per_argument_type_not_per_constant(tmp_path):
    (tmp_path / "bodies.py").write_text(MODULE)
    env = dict(os.environ, LC0_ROCM_CACHE=str(tmp_path / "cache"), PYTHONPATH=f"{tmp_path}{os.pathsep}{REPO}")
    env.pop("NUMBA_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-c", "import bodies"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    ours, plain, ours_bodies, plain_bodies = r.stdout.split()
    # 1.5*2+1 + 1.5*3 + 1.5*4+1 = 15.5, from both: a constant means what it meant
    assert float(ours) == float(plain) == 15.5
    assert int(plain_bodies) == 3  # numba alone: Literal[int](2)/True, Literal[int](3)/False, int64/bool
    assert int(ours_bodies) == 1  # ours: (float64[:], int64, bool) for all three calls
