#!/bin/sh
# Compiles a GLSL compute shader and renames its entry point, so several
# shaders can be linked into one SPIR-V module with several entry points.
# usage: rename_entry.sh GLSLC SPIRV_DIS SPIRV_AS INPUT ENTRY OUTPUT
set -eu
glslc=$1 dis=$2 as=$3 input=$4 entry=$5 output=$6
"$glslc" -O --target-env=vulkan1.1 "$input" -o "$output.orig"
"$dis" --raw-id "$output.orig" | sed "s/\"main\"/\"$entry\"/g" > "$output.spvasm"
"$as" --target-env vulkan1.1 "$output.spvasm" -o "$output"
rm -f "$output.orig" "$output.spvasm"
