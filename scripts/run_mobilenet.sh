#!/usr/bin/env bash
# The README's first job: export MobileNetV2 (torchvision, seeded random
# weights with batch-norm statistics calibrated on random images, so the
# logits depend on the input; nothing is downloaded), compile it with
# kiln-compile, run it on the default Vulkan device with kiln-run-module,
# check the result against PyTorch's float64 output, check that the check
# can tell inputs apart (an all-zeros input must move the logits by far more
# than the threshold), and print the top-5 classes kiln computed.
#   scripts/run_mobilenet.sh [BUILD_DIR]   (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
work=$build/mobilenet
python=/usr/bin/python3
mkdir -p "$work"

# Re-exported when the exporter changed since (the weights are part of it).
if [ ! -f "$work/mobilenet_v2/model.onnx" ] ||
   [ "$here/scripts/export_models.py" -nt "$work/mobilenet_v2/model.onnx" ]; then
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
np.save(f"{d}/zeros.npy", np.zeros_like(np.load(f"{d}/input_0.npy")))
print(1e-4 * float(np.abs(np.load(f"{d}/output_0.npy")).max()))
PY
)

"$build/tools/run-module/kiln-run-module" --device=vulkan \
  --module="$work/mobilenet_v2.kiln" --function=predict \
  --input=@"$work/mobilenet_v2/input_0.npy" \
  --output=@"$work/logits.npy" \
  --expected_output=@"$work/mobilenet_v2/output_0.npy" \
  --expected_f32_threshold="$threshold" --print_statistics --call_count=5

# The same module on an all-zeros input: its logits must differ from the
# image's by much more than the threshold, or the check above could not
# catch a wrong input.
"$build/tools/run-module/kiln-run-module" --device=vulkan \
  --module="$work/mobilenet_v2.kiln" --function=predict \
  --input=@"$work/mobilenet_v2/zeros.npy" --output=@"$work/logits_zeros.npy" \
  --output_max_element_count=1 >/dev/null
"$python" - "$work/logits.npy" "$work/logits_zeros.npy" "$threshold" <<'PY'
import sys, numpy as np
image, zeros, threshold = np.load(sys.argv[1]), np.load(sys.argv[2]), float(sys.argv[3])
moved = float(np.abs(image - zeros).max())
print(f"input check: an all-zeros input moves the logits by {moved:.3g} "
      f"({moved / threshold:.0f}x the threshold {threshold:.3g})")
if moved < 100 * threshold:
    sys.exit("the logits hardly depend on the input: this check cannot catch an input bug")
PY

"$python" - "$work/logits.npy" <<'PY'
import sys, numpy as np
logits = np.load(sys.argv[1])[0]
top = np.argsort(-logits)[:5]
print("top-5 ImageNet classes (kiln's logits):",
      ", ".join(f"{int(i)} ({logits[i]:.3f})" for i in top))
PY
