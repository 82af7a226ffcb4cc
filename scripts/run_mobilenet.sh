#!/usr/bin/env bash
# The README's first job: export MobileNetV2 (torchvision, seeded random
# weights; nothing is downloaded), compile it with kiln-compile, run it on the
# default Vulkan device with kiln-run-module, check the result against
# PyTorch's float64 output and print the top-5 classes kiln computed.
#   scripts/run_mobilenet.sh [BUILD_DIR]   (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
work=$build/mobilenet
python=/usr/bin/python3
mkdir -p "$work"

if [ ! -f "$work/mobilenet_v2/model.onnx" ]; then
  "$python" "$here/scripts/export_models.py" "$work" mobilenet_v2
fi
"$build/tools/compile/kiln-compile" "$work/mobilenet_v2/model.onnx" \
  -o "$work/mobilenet_v2.kiln"

# The exported input image and PyTorch's output, as .npy for the tool; the
# threshold is the model tests' bound: 1e-4 of the output's largest magnitude.
threshold=$("$python" - "$work/mobilenet_v2" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
d = sys.argv[1]
for name in ("input_0", "output_0"):
    t = onnx.TensorProto()
    t.ParseFromString(open(f"{d}/{name}.pb", "rb").read())
    np.save(f"{d}/{name}.npy", numpy_helper.to_array(t).astype(np.float32))
print(1e-4 * float(np.abs(np.load(f"{d}/output_0.npy")).max()))
PY
)

"$build/tools/run-module/kiln-run-module" --device=vulkan \
  --module="$work/mobilenet_v2.kiln" --function=predict \
  --input=@"$work/mobilenet_v2/input_0.npy" \
  --output=@"$work/logits.npy" \
  --expected_output=@"$work/mobilenet_v2/output_0.npy" \
  --expected_f32_threshold="$threshold" --print_statistics

"$python" - "$work/logits.npy" <<'PY'
import sys, numpy as np
logits = np.load(sys.argv[1])[0]
top = np.argsort(-logits)[:5]
print("top-5 ImageNet classes (kiln's logits):",
      ", ".join(f"{int(i)} ({logits[i]:.3f})" for i in top))
PY
