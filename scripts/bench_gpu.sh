#!/usr/bin/env bash
# kiln next to PyTorch in one run (issue 16's bench): see scripts/bench_gpu.py.
#   bash scripts/bench_gpu.sh [BUILD_DIR] [--calls N] [--models a,b] [--no-compile]
#                             [--precision f32|f16] [--iree DIR]
# (--precision f16: kiln-compile --precision=f16 beside PyTorch model.half()).
# On a machine with CUDA (the GPU machine: run `. .gpu/setup.sh` first, which
# sets kiln_build and the Vulkan loader) it uses the PyTorch found there and
# times eager, CUDA graph and torch.compile. Without CUDA it runs kiln on the
# default Vulkan device (lavapipe) beside Debian's PyTorch on the CPU and
# onnxruntime (pip, in a venv over Debian's packages) on one thread.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${kiln_build:-build}
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build=$1; shift; fi
if [ ! -x "$build/tools/compile/kiln-compile" ]; then
  echo "bench_gpu.sh: no kiln build in '$build' (build one with scripts/bootstrap.sh or meson)" >&2
  exit 2
fi
python=python3
if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  venv=${KILN_BENCH_VENV:-$HOME/.cache/kiln/bench-venv}
  if [ ! -x "$venv/bin/python" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$venv"
  fi
  "$venv/bin/python" -c 'import onnxruntime' 2>/dev/null ||
    "$venv/bin/pip" install -q onnxruntime >/dev/null 2>&1 ||
    echo "bench_gpu.sh: onnxruntime not installable; its column stays empty" >&2
  python=$venv/bin/python
fi
exec "$python" "$here/bench_gpu.py" "$build" "$@"
