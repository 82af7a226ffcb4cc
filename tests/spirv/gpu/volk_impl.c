// Compiles Debian's volk loader (/usr/include/volk.c) for the GPU tests.
#include <volk.c>
