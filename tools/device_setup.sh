# device_setup.sh — what a run on the lent NVIDIA machine sources first (bash tools/device_setup.sh is not
# enough: it must be *sourced* so the exports reach the commands after it):
#
#   source tools/device_setup.sh && python3 -m pytest tests/gpu -q
#
# 1. installs the carried wheels (.whl/: hip-python 10.0.0.0.1.2 + rocm-bindings-*, chess) into /tmp/site;
# 2. finds NVRTC and cuBLASLt (CUDA toolkit lib64, else the nvidia-* wheels of the machine's Python);
# 3. builds the HIP-on-CUDA libraries into /tmp/hoc (hip_on_cuda/build.py);
# 4. exports LD_LIBRARY_PATH (our libamdhip64/libhiprtc/libhipblaslt first) and PYTHONPATH (/tmp/site and
#    the repository, so lc0_rocm imports without installing).
# Prints one line per step; returns non-zero (without exiting the caller's shell) on the first failure.

_lc0_setup() {
    local repo site hoc dir f nvrtc_dir="" cublas_dir=""
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    site=/tmp/site
    hoc=/tmp/hoc
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
        "$repo"/.whl/*.whl || { echo "device_setup: wheel install failed"; return 1; }
    echo "device_setup: wheels installed in $site"
    for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu; do
        [ -z "$nvrtc_dir" ] && ls "$dir"/libnvrtc.so.1[23] >/dev/null 2>&1 && nvrtc_dir="$dir"
        [ -z "$cublas_dir" ] && ls "$dir"/libcublasLt.so.1[23] >/dev/null 2>&1 && cublas_dir="$dir"
    done
    if [ -z "$nvrtc_dir" ] || [ -z "$cublas_dir" ]; then
        local pysite
        pysite="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
        for f in $(ls "$pysite"/nvidia/*/lib/libnvrtc.so.1[23] "$pysite"/nvidia/*/lib/libcublasLt.so.1[23] 2>/dev/null); do
            case "$f" in
                */libnvrtc.so.*) [ -z "$nvrtc_dir" ] && nvrtc_dir="$(dirname "$f")" ;;
                */libcublasLt.so.*) [ -z "$cublas_dir" ] && cublas_dir="$(dirname "$f")" ;;
            esac
        done
    fi
    [ -n "$nvrtc_dir" ] || { echo "device_setup: libnvrtc.so.13/.12 not found"; return 1; }
    [ -n "$cublas_dir" ] || { echo "device_setup: libcublasLt.so.13/.12 not found"; return 1; }
    echo "device_setup: NVRTC in $nvrtc_dir, cuBLASLt in $cublas_dir"
    python3 "$repo/hip_on_cuda/build.py" --out "$hoc" >/tmp/hoc-build.log 2>&1 || {
        cat /tmp/hoc-build.log; echo "device_setup: hip_on_cuda build failed"; return 1; }
    echo "device_setup: hip_on_cuda built in $hoc"
    export LD_LIBRARY_PATH="$hoc:$nvrtc_dir:$cublas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PYTHONPATH="$site:$repo${PYTHONPATH:+:$PYTHONPATH}"
    export PYTHONUNBUFFERED=1
    echo "device_setup: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}
_lc0_setup
