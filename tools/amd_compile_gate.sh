#!/usr/bin/env bash
# amd_compile_gate.sh — CI gate, no GPU needed:
#   1. every lc0_rocm/kernels/*.hip compiles with hipcc for AMD, wave64 (gfx90a) and wave32 (gfx1030),
#      with -Werror;
#   2. every kernel compiles with nvcc for sm_90 through the HIP-on-CUDA prelude (the headers libhiprtc.so
#      gives NVRTC), warnings as errors;
#   3. hip_on_cuda/hip_abi.h matches hip-python (gen_hip_abi.py --check) and the C sources compile (-Werror);
#   4. today's cards: every kernel in every variant the runtime compiles (attention.hip at every head depth)
#      compiles with clang-19 (-Werror, ROCm device libraries linked) to ISA for gfx942 (MI300, wave64),
#      gfx1100, gfx1151 (RDNA3 / RDNA3.5) and gfx1201 (RDNA4), wave32, with no VGPR/SGPR spill, no scratch,
#      LDS within the arch's limit, and docs/amd-resources.md up to date (tools/amd_resources.py --check).
# Prints "ok <what>" per step and "FAIL <what>" with the compiler output; exits 1 if anything failed.
# HIPCC / NVCC / CLANG override the compilers.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HIPCC="${HIPCC:-hipcc}"
NVCC="${NVCC:-nvcc}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
trap 'exit 143' TERM INT  # killed (tests/gate_background.py): still remove $TMP
fail=0

run() {  # run <label> <command...>
    local label="$1"; shift
    if "$@" >"$TMP/log" 2>&1; then
        echo "ok   $label"
    else
        echo "FAIL $label"; sed 's/^/     /' "$TMP/log" | head -60; fail=1
    fi
}

cd "$ROOT/lc0_rocm/kernels" || exit 1
# hipcc and nvcc of every file as 16 jobs, two at a time (the next starts as soon as one ends), each
# in a folder of its own; the reports are printed in order afterwards
for k in *.hip; do
    for c in amd nv; do
        while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
        ( TMP="$TMP/$c.$k"; mkdir -p "$TMP"
          if [ $c = amd ]; then
              run "hipcc gfx90a+gfx1030 $k" env HIP_PLATFORM=amd "$HIPCC" -Werror --offload-arch=gfx90a \
                  --offload-arch=gfx1030 -c "$k" -o "$TMP/out.o"
          else
              run "nvcc sm_90 (HIP prelude) $k" "$NVCC" -arch=sm_90 -I "$ROOT/hip_on_cuda/include" \
                  -include hip/hip_runtime.h -x cu -Werror all-warnings -c "$k" -o "$TMP/out.o"
          fi ) >"$TMP/$k.$c.report" 2>&1 &
    done
done
wait
for k in *.hip; do
    cat "$TMP/$k.amd.report" "$TMP/$k.nv.report"
    grep -q "^FAIL" "$TMP/$k.amd.report" "$TMP/$k.nv.report" && fail=1
done

cd "$ROOT" || exit 1
if python3 -c "import hip" 2>/dev/null; then
    run "hip_abi.h up to date with hip-python" python3 hip_on_cuda/gen_hip_abi.py --check
else
    echo "skip hip_abi.h check (hip-python not installed)"
fi
run "hip_on_cuda C sources (-Werror)" python3 hip_on_cuda/build.py --check-only --out "$TMP/hoc"
run "clang-19 gfx942 gfx1100 gfx1151 gfx1201: every kernel and head depth, no spills or scratch, LDS in limits, \
docs/amd-resources.md current (tools/amd_resources.py --check)" python3 tools/amd_resources.py --check

exit $fail
