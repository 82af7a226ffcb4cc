// Compiles Debian's volk (libvulkan-volk-dev ships the source) into the
// driver: the Vulkan loader is opened at run time, so kiln starts without it.
#include <volk.c>
