"""Comparison helpers of the GPU tests (llm.c-style: name the worst element and both values)."""

from __future__ import annotations


def rel_error(out, ref) -> float:
    """‖out − ref‖ / ‖ref‖ in float64 (NaN if out has any NaN)."""
    import numpy as np

    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-300))


def assert_close(out, ref, rtol: float, atol: float, what: str) -> None:
    """Every element within atol + rtol·|ref|; on failure name the worst index and both values."""
    import numpy as np

    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != {ref.shape}"
    assert not np.isnan(out).any(), f"{what}: {int(np.isnan(out).sum())} NaN (unwritten?) elements"
    err = np.abs(out - ref)
    excess = err - (atol + rtol * np.abs(ref))
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    assert excess[worst] <= 0, (f"{what}: worst at {worst}: got {out[worst]!r}, want {ref[worst]!r} "
                                f"(abs err {err[worst]:.3g}, max abs err {err.max():.3g})")
