// kiln-dump-module M.kiln: prints the header, sections, imports/exports,
// rodata sizes, executables and disassembled functions. The output is
// assembly: `kiln-compile` turns it back into the same module.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/compiler/assembler.h"
#include "kiln/format/module_reader.h"
#include "tool_cli.h"

static const char kDumpUsage[] =
    "usage: kiln-dump-module MODULE.kiln\n"
    "Prints the module as assembly (header, sections, imports and exports, "
    "rodata sizes,\nexecutables, disassembled functions); kiln-compile turns "
    "it back into the module.\n";

int main(int argc, char** argv) {
  if (kiln_tool_help_or_version(argc, argv, "kiln-dump-module", kDumpUsage)) return 0;
  if (argc != 2 || argv[1][0] == '-') {
    fputs(kDumpUsage, stderr);
    return 2;
  }
  kiln_file_mapping_t mapping;
  kiln_status_t status = kiln_file_map(argv[1], &mapping);
  if (!status) {
    kiln_format_module_t module;
    status = kiln_format_module_read(
        kiln_make_const_byte_span(mapping.data, mapping.size), argv[1], NULL,
        kiln_allocator_system(), &module);
    if (!status) {
      printf("# %s: %zu bytes\n", argv[1], mapping.size);
      status = kiln_disassembler_write(&module, true, stdout);
      kiln_format_module_deinit(&module);
    }
    kiln_file_unmap(&mapping);
  }
  if (status) {
    fflush(stdout);
    char* text = kiln_status_to_string(status);
    fprintf(stderr, "kiln-dump-module: %s\n", text);
    free(text);
    kiln_status_free(status);
    return 1;
  }
  return 0;
}
