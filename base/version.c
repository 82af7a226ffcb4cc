#include "kiln/base/version.h"

// KILN_VERSION_STRING comes from base/meson.build (the project's version).
const char* kiln_version(void) { return KILN_VERSION_STRING; }
