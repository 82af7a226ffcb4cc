// libFuzzer target for the tools' untrusted inputs: arbitrary bytes as a
// .npy file (first and following arrays) and as --input text.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "tensor_text.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t offset = 0;
  for (int i = 0; i < 4; ++i) {  // a file may hold several arrays
    kiln_host_tensor_t tensor;
    kiln_status_t status =
        kiln_npy_parse(kiln_make_const_byte_span(data, size), "fuzz.npy",
                       &offset, kiln_allocator_system(), &tensor);
    if (status) {
      kiln_status_free(status);
      break;
    }
    kiln_host_tensor_deinit(&tensor);
  }
  // The same bytes as an --input value (text up to the first NUL; no '@'
  // or '+' so nothing is read from disk).
  if (size > 0 && size < 4096 && data[0] != '@' && data[0] != '+') {
    char* text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    if (!strchr(text, '@')) {
      kiln_input_parser_t parser;
      kiln_input_parser_init(&parser, kiln_allocator_system());
      parser.max_tensor_bytes = 1 << 20;
      kiln_input_value_t value;
      kiln_status_t status = kiln_input_parser_parse(&parser, text, &value);
      if (!status) kiln_input_value_deinit(&value);
      kiln_status_free(status);
      kiln_input_parser_deinit(&parser);
    }
    free(text);
  }
  return 0;
}
