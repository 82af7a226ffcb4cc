#!/usr/bin/env bash
# Installs kiln into a scratch prefix, builds samples/embed/embed_host.c
# against it with pkg-config (as a host project would) and runs it on the
# default device. Args: BUILD_DIR SOURCE_DIR SANITIZE EMBED_MODULE
set -euo pipefail
build_dir=$1 source_dir=$2 sanitize=$3 module=$4
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

meson install -C "$build_dir" --destdir "$scratch/root" --no-rebuild --quiet >/dev/null
pc=$(find "$scratch/root" -name kiln.pc | head -n 1)
if [ -z "$pc" ]; then echo "FAIL: meson install wrote no kiln.pc"; exit 1; fi
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=()
if [ "$sanitize" != none ]; then flags+=("-fsanitize=$sanitize"); fi
# The .pc file names the final prefix; point it at the scratch copy.
prefix=$scratch/root$(pkg-config --variable=prefix kiln)
pkg() { pkg-config --define-variable=prefix="$prefix" "$@" kiln; }
cc -std=gnu11 -Wall -Werror "${flags[@]}" "$source_dir/samples/embed/embed_host.c" \
   $(pkg --cflags --libs) -o "$scratch/embed_host"
libdir=$(pkg --variable=libdir)
LD_LIBRARY_PATH="$libdir" "$scratch/embed_host" "$module" "${KILN_TEST_DEVICE:-vulkan}"
