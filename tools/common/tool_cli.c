#include "tool_cli.h"

#include <string.h>

#include "kiln/base/version.h"

void kiln_tool_print_version(const char* name, FILE* out) {
  fprintf(out, "%s %s\n", name, kiln_version());
}

int kiln_tool_help_or_version(int argc, char** argv, const char* name, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--version") == 0) {
      kiln_tool_print_version(name, stdout);
      return 1;
    }
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage, stdout);
      return 1;
    }
  }
  return 0;
}
