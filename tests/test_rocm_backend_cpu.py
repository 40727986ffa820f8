"""The rocm backend module's host-side logic, checked without a GPU: precision choice by arch, option
parsing, and a clean one-line BackendError where no GPU is usable."""

from __future__ import annotations

import pytest

from lc0_rocm.backends import rocm
from lc0_rocm.backends.options import bool_option, choice_option, int_option
from lc0_rocm.errors import BackendError
from lc0_rocm.net.loader import load_net

from netpaths import WEIGHTS_DIR


@pytest.mark.parametrize("arch,fast", [
    ("gfx90a", True), ("gfx942", True), ("gfx1030", True), ("gfx1100", True), ("gfx906", True),
    ("gfx803", False), ("gfx701", False),
    ("sm_90", True), ("sm_90a", True), ("sm_70", True), ("sm_62", True), ("sm_61", False), ("sm_53", True),
    ("sm_52", False), ("weird", False),
])
def test_fp16_choice_follows_lc0s_rule(arch, fast):
    assert rocm.fp16_is_fast(arch) is fast


def test_options_are_validated():
    assert int_option({"max_batch": "64"}, "max_batch", 1024) == 64
    assert int_option({}, "max_batch", 1024) == 1024
    for bad in ("0", "-3", "many"):
        with pytest.raises(BackendError, match="max_batch"):
            int_option({"max_batch": bad}, "max_batch", 1024)
    assert int_option({"gpu": "0"}, "gpu", 1, minimum=0) == 0
    assert bool_option({"mlh": "False"}, "mlh", True) is False
    with pytest.raises(BackendError, match="true or false"):
        bool_option({"mlh": "maybe"}, "mlh", True)
    assert choice_option({"attention": "T128"}, "attention", rocm.MHA_VARIANTS, "auto") == "t128"
    for gone in ("tiled", "warp"):  # removed experiments are refused by name, not ignored
        with pytest.raises(BackendError, match="attention="):
            choice_option({"attention": gone}, "attention", rocm.MHA_VARIANTS, "auto")


def test_no_gpu_is_a_one_line_backend_error():
    if rocm.gpu_available():
        pytest.skip("a GPU is usable here")
    net = load_net(WEIGHTS_DIR / "se-classical-small.pb.gz")
    with pytest.raises(BackendError) as e:
        rocm.RocmBackend(net, "fp32")
    assert str(e.value).startswith("cannot start the GPU backend") and "\n" not in str(e.value)
    with pytest.raises(BackendError, match="unknown precision"):
        rocm.RocmBackend(net, "fp8")
