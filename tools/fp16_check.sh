#!/usr/bin/env bash
# fp16_check.sh — the fp16 check of classical towers in one device call (issue 32, "fp16 that passes"):
# the GPU tests of the convolution path, tests/gpu/test_kernels_conv.py and tests/gpu/test_conv_nets_gpu.py
# (whose test_validate_passes_on_classical_value_heads runs `lc0-rocm validate` in fp16 and fp32 on the
# committed se-classical-small and the make-net "classical" shapes the CPU twin measures,
# tests/test_fp16_twin.py, and prints each table), and the whole-net fp16 gate of se-classical-small and
# of maia-1500 / maia-1900 (skipped without ../shared/weights). On the lent NVIDIA machine:
#   source tools/device_setup.sh && bash tools/fp16_check.sh
# Exits non-zero if a test fails.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
python3 -m pytest -q -rs -p no:cacheprovider tests/gpu/test_kernels_conv.py tests/gpu/test_conv_nets_gpu.py \
    "tests/gpu/test_network_gpu.py::test_fp16_agrees_with_reference[se-classical-small.pb.gz]" \
    "tests/gpu/test_network_gpu.py::test_fp16_agrees_with_reference[maia-1500.pb.gz]" \
    "tests/gpu/test_network_gpu.py::test_fp16_agrees_with_reference[maia-1900.pb.gz]"
