// Writes the MLP sample's assembly: copies mlp.kasm.in and replaces the line
// "@WEIGHTS@" with rodata directives holding the weights (mlp_weights.h) as
// little-endian f32 hex. Usage: make_mlp_module mlp.kasm.in mlp.kasm
#include <stdio.h>
#include <string.h>

#include "mlp_weights.h"

static int kiln_write_weights(FILE* out) {
  static const char* names[4] = {"w1", "b1", "w2", "b2"};
  for (uint32_t t = 0; t < 4; ++t) {
    fprintf(out, "rodata %s align 64 raw hex \"", names[t]);
    for (uint32_t i = 0; i < kiln_mlp_sizes[t]; ++i) {
      float value = kiln_mlp_weight(t, i);
      uint8_t bytes[4];
      memcpy(bytes, &value, 4);
      fprintf(out, "%02x%02x%02x%02x", bytes[0], bytes[1], bytes[2], bytes[3]);
    }
    fprintf(out, "\"\n");
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s mlp.kasm.in mlp.kasm\n", argv[0]);
    return 2;
  }
  FILE* in = fopen(argv[1], "r");
  if (!in) {
    perror(argv[1]);
    return 1;
  }
  FILE* out = fopen(argv[2], "w");
  if (!out) {
    perror(argv[2]);
    fclose(in);
    return 1;
  }
  char line[4096];
  while (fgets(line, sizeof(line), in)) {
    if (strcmp(line, "@WEIGHTS@\n") == 0) {
      kiln_write_weights(out);
    } else {
      fputs(line, out);
    }
  }
  fclose(in);
  return fclose(out) == 0 ? 0 : 1;
}
