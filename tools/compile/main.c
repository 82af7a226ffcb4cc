// kiln-compile INPUT -o OUTPUT.kiln: compiles assembly or ONNX (which has
// its own flags, compile_onnx.c) into a module, then loads it with the VM so
// a module that would not verify is never written.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontends.h"
#include "kiln/base/file.h"
#include "kiln/vm/vm.h"
#include "tool_cli.h"

static const char kCompileUsage[] =
    "usage: kiln-compile INPUT.kasm|INPUT.onnx -o OUTPUT.kiln "
    "(--help with an .onnx input lists the ONNX options)\n";

static int kiln_compile_usage(void) {
  fputs(kCompileUsage, stderr);
  return 2;
}

kiln_status_t kiln_compile_verify(kiln_const_byte_span_t bytes,
                                         const char* what) {
  kiln_vm_instance_t* instance = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_instance_create(kiln_allocator_system(), &instance));
  kiln_vm_module_t* module = NULL;
  kiln_status_t status =
      kiln_vm_module_load_from_memory(instance, bytes, what, NULL, &module);
  kiln_vm_module_release(module);
  kiln_vm_instance_destroy(instance);
  return status;
}

kiln_status_t kiln_compile_verify_file(const char* path, const char* what) {
  kiln_vm_instance_t* instance = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_instance_create(kiln_allocator_system(), &instance));
  kiln_vm_module_t* module = NULL;
  kiln_status_t status = kiln_vm_module_load_from_file(instance, path, NULL, &module);
  kiln_vm_module_release(module);
  kiln_vm_instance_destroy(instance);
  return kiln_status_annotate(status, "%s", what);
}

int main(int argc, char** argv) {
#ifdef KILN_COMPILE_HAVE_ONNX
  if (kiln_compile_is_onnx(argc, argv)) return kiln_compile_onnx_main(argc, argv);
#endif
  if (kiln_tool_help_or_version(argc, argv, "kiln-compile", kCompileUsage)) return 0;
  const char* input = NULL;
  const char* output = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      output = argv[++i];
    } else if (argv[i][0] == '-') {
      return kiln_compile_usage();
    } else if (!input) {
      input = argv[i];
    } else {
      return kiln_compile_usage();
    }
  }
  if (!input || !output) return kiln_compile_usage();
  kiln_byte_buffer_t out;
  kiln_byte_buffer_init(&out, kiln_allocator_system());
  kiln_status_t status = kiln_compile_dispatch(input, kiln_allocator_system(), &out);
  if (!status) status = kiln_compile_verify(kiln_byte_buffer_span(&out), input);
  if (!status) status = kiln_file_write_all(output, kiln_byte_buffer_span(&out));
  kiln_byte_buffer_deinit(&out);
  if (status) {
    char* text = kiln_status_to_string(status);
    fprintf(stderr, "kiln-compile: %s\n", text);
    free(text);
    kiln_status_free(status);
    return 1;
  }
  return 0;
}
