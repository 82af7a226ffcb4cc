// The extension decides the front end; adding one (ONNX) is one branch.
#include "frontends.h"

#include "kiln/base/file.h"
#include "kiln/compiler/assembler.h"

static kiln_status_t kiln_compile_assembly(const char* path,
                                           kiln_allocator_t allocator,
                                           kiln_byte_buffer_t* out) {
  kiln_file_contents_t contents;
  KILN_RETURN_IF_ERROR(kiln_file_read_all(path, allocator, &contents));
  kiln_status_t status = kiln_assembler_assemble(
      kiln_make_string_view((const char*)contents.data, contents.size), path,
      allocator, out);
  kiln_file_contents_deinit(&contents);
  return status;
}

kiln_status_t kiln_compile_dispatch(const char* input_path,
                                    kiln_allocator_t allocator,
                                    kiln_byte_buffer_t* out) {
  kiln_string_view_t path = kiln_make_cstring_view(input_path);
  if (kiln_string_view_ends_with(path, kiln_make_cstring_view(".kasm"))) {
    return kiln_compile_assembly(input_path, allocator, out);
  }
  if (kiln_string_view_ends_with(path, kiln_make_cstring_view(".onnx"))) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "'%s': this kiln-compile was built without ONNX support", input_path);
  }
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "'%s': unknown input kind (expected .kasm or .onnx)",
                          input_path);
}
