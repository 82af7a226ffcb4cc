#!/usr/bin/env bash
# Installs the Debian packages kiln needs to build, test and run (as root, or
# through sudo). Installs only what is missing, so a second run is quick.
set -euo pipefail

packages=(
  build-essential meson ninja-build pkg-config clang libclang-rt-14-dev
  libvulkan-dev libvulkan1 libvulkan-volk-dev mesa-vulkan-drivers
  vulkan-validationlayers spirv-tools glslc libspirv-cross-c-shared-dev
  libzstd-dev googletest libgtest-dev
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata
  python3 python3-numpy python3-torch python3-torchvision python3-onnx
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
echo "kiln: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
