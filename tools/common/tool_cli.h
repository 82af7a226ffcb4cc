// --help and --version, the two flags every kiln tool answers the same way:
// on stdout, exit status 0.
#ifndef KILN_TOOLS_COMMON_TOOL_CLI_H_
#define KILN_TOOLS_COMMON_TOOL_CLI_H_

#include <stdio.h>

// Prints "NAME VERSION" (kiln_version()).
void kiln_tool_print_version(const char* name, FILE* out);

// When argv holds --help or --version: prints `usage` (a whole text) or
// the version and returns 1 (the caller exits 0); else returns 0.
int kiln_tool_help_or_version(int argc, char** argv, const char* name, const char* usage);

#endif  // KILN_TOOLS_COMMON_TOOL_CLI_H_
