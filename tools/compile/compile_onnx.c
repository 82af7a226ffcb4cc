// kiln-compile model.onnx -o model.kiln [--target-triple=T]...
// [--function-name=predict] [--input-shape=NAME:1x3x224x224]...
// [--print-memory-plan] [--dump-assembly=FILE] [--max-storage-range=BYTES]
// [--no-fallback]
// [--quantize=int8|q8_0|q4_0|q4_k] [--print-statistics]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontends.h"
#include "kiln/base/file.h"
#include "kiln/compiler/assembler.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/compiler/quant.h"
#include "progress.h"
#include "tool_cli.h"

static void kiln_compile_onnx_usage(FILE* stream) {
  fprintf(stream,
          "usage: kiln-compile model.onnx -o model.kiln [options]\n"
          "       kiln-compile program.kasm -o program.kiln\n"
          "ONNX options:\n"
          "  --target-triple=T        add an executable variant for T (full or\n"
          "                           partial triple; repeatable). Default:");
  for (size_t i = 0; i < kiln_onnx_compile_default_target_count; ++i) {
    fprintf(stream, " %s", kiln_onnx_compile_default_targets[i]);
  }
  fprintf(stream,
          "\n  --function-name=NAME     exported function (default predict)\n"
          "  --input-shape=NAME:DIMS  fix an input's dynamic dims, e.g. x:1x3x224x224\n"
          "  --print-memory-plan      print the transient-buffer plan\n"
          "  --dump-assembly=FILE     write the module's disassembly\n"
          "  --max-storage-range=B    plan bindings of at most B bytes (default: the\n"
          "                           targets' storage-buffer ranges; larger tensors\n"
          "                           are split)\n"
          "  --precision=f32|f16      tensor storage: f16 stores weights and\n"
          "                           activations in fp16 (math in fp32; inputs and\n"
          "                           outputs keep the model's dtype; needs 16-bit\n"
          "                           storage). Default: the model's (f16 for fp16\n"
          "                           models), see docs/precision.md\n"
          "  --cooperative-matrix     (default) f16 products and KxK convs on\n"
          "                           gemm_coopmat (tensor cores) when every target has\n"
          "                           cooperative matrix; others keep gemm_f16\n"
          "  --no-cooperative-matrix  keep every f16 product on the SIMT kernels\n"
          "  --conv-windows           on tensor cores, KxK convs read their windows\n"
          "                           in place instead of through a columns copy\n"
          "                           (less transient memory, about the same speed)\n"
          "  --no-fallback            refuse nodes without a GPU kernel instead of\n"
          "                           running them on the host between GPU segments\n"
          "                           (TopK, NonZero, NonMaxSuppression)\n"
          "  --quantize=L             weight-only quantization of MatMul / Gemm\n"
          "                           constant weights: int8, q8_0, q4_0, q4_k\n"
          "                           (docs/quantization.md); others stay fp32\n"
          "  --print-statistics       weight bytes, and which weights were quantized\n"
          "                           (or why not)\n"
          "  --help                   this text\n"
          "  --version                kiln-compile's version\n");
}

bool kiln_compile_is_onnx(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    size_t length = strlen(argv[i]);
    if (argv[i][0] != '-' && length > 5 && strcmp(argv[i] + length - 5, ".onnx") == 0) {
      return true;
    }
  }
  return false;
}

// The module streams into OUTPUT.partial (weights straight from the
// compiler's buffers, never the whole module in memory); the file is
// verified by loading it (mapped), disassembled for --dump-assembly, and only then
// renamed to OUTPUT.
static kiln_status_t kiln_compile_onnx_sink(void* user, kiln_const_byte_span_t piece) {
  FILE* file = (FILE*)user;
  if (fwrite(piece.data, 1, piece.size, file) != piece.size) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "writing the module failed");
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_compile_onnx_to_file(const char* input, const char* output,
                                               const char* assembly_path,
                                               kiln_onnx_compile_options_t* options,
                                               kiln_compile_progress_t* progress) {
  char partial[4096];
  if (snprintf(partial, sizeof(partial), "%s.partial", output) >= (int)sizeof(partial)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "output path is too long");
  }
  FILE* file = fopen(partial, "wb");
  if (!file) {
    return kiln_make_status(KILN_STATUS_PERMISSION_DENIED, "cannot write '%s'", partial);
  }
  options->module_sink = kiln_compile_onnx_sink;
  options->module_sink_user = file;
  kiln_byte_buffer_t unused;
  kiln_byte_buffer_init(&unused, kiln_allocator_system());
  kiln_status_t status = kiln_onnx_compile_file(input, options, kiln_allocator_system(), &unused);
  kiln_byte_buffer_deinit(&unused);
  if (fclose(file) != 0 && !status) {
    status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "writing '%s' failed", partial);
  }
  kiln_file_mapping_t mapping = {0};
  if (!status) status = kiln_file_map(partial, &mapping);
  if (!status) {
    kiln_const_byte_span_t bytes = kiln_make_const_byte_span(mapping.data, mapping.size);
    // Loaded from the file, not from `bytes`: a module loaded from memory is
    // copied, which would double the compile's peak memory.
    status = kiln_compile_verify_file(partial, input);
    if (!status && assembly_path) {
      FILE* assembly = fopen(assembly_path, "w");
      if (!assembly) {
        status = kiln_make_status(KILN_STATUS_PERMISSION_DENIED, "cannot write '%s'",
                                  assembly_path);
      } else {
        status = kiln_disassembler_write_bytes(bytes, output, true, assembly);
        if (fclose(assembly) != 0 && !status) {
          status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "writing '%s' failed",
                                    assembly_path);
        }
      }
    }
    kiln_compile_progress_finish(progress, mapping.size);
    kiln_file_unmap(&mapping);
  }
  if (!status && rename(partial, output) != 0) {
    status = kiln_make_status(KILN_STATUS_PERMISSION_DENIED, "cannot rename '%s' to '%s'",
                              partial, output);
  }
  if (status) remove(partial);
  return status;
}

static int kiln_compile_onnx_fail(kiln_status_t status) {
  char* text = kiln_status_to_string(status);
  fprintf(stderr, "kiln-compile: %s\n", text);
  free(text);
  kiln_status_free(status);
  return 1;
}

int kiln_compile_onnx_main(int argc, char** argv) {
  const char* input = NULL;
  const char* output = NULL;
  const char* assembly_path = NULL;
  const char* targets[KILN_ONNX_COMPILE_MAX_TARGETS];
  kiln_onnx_input_shape_t shapes[16];
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.targets = targets;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--help") == 0) {
      kiln_compile_onnx_usage(stdout);
      return 0;
    } else if (strcmp(arg, "--version") == 0) {
      kiln_tool_print_version("kiln-compile", stdout);
      return 0;
    } else if (strcmp(arg, "-o") == 0 && i + 1 < argc) {
      output = argv[++i];
    } else if (strncmp(arg, "--target-triple=", 16) == 0) {
      if (options.target_count == KILN_ONNX_COMPILE_MAX_TARGETS) {
        fprintf(stderr, "kiln-compile: at most %d target triples\n",
                KILN_ONNX_COMPILE_MAX_TARGETS);
        return 2;
      }
      targets[options.target_count++] = arg + 16;
    } else if (strncmp(arg, "--function-name=", 16) == 0 && arg[16]) {
      options.function_name = arg + 16;
    } else if (strncmp(arg, "--input-shape=", 14) == 0) {
      if (options.import.input_shape_count == sizeof(shapes) / sizeof(shapes[0])) {
        fprintf(stderr, "kiln-compile: too many --input-shape flags\n");
        return 2;
      }
      kiln_status_t status = kiln_onnx_parse_input_shape(
          arg + 14, &shapes[options.import.input_shape_count]);
      if (status) return kiln_compile_onnx_fail(status);
      options.import.input_shape_count++;
      options.import.input_shapes = shapes;
    } else if (strcmp(arg, "--print-memory-plan") == 0) {
      options.memory_plan_stream = stdout;
    } else if (strncmp(arg, "--max-storage-range=", 20) == 0) {
      char* end = NULL;
      unsigned long long bytes = strtoull(arg + 20, &end, 10);
      if (!arg[20] || *end || bytes < 4096) {
        fprintf(stderr, "kiln-compile: --max-storage-range needs a byte count >= 4096\n");
        return 2;
      }
      options.max_storage_buffer_range = bytes;
    } else if (strncmp(arg, "--precision=", 12) == 0 ||
               (strcmp(arg, "--precision") == 0 && i + 1 < argc)) {
      const char* value = arg[11] == '=' ? arg + 12 : argv[++i];
      kiln_status_t status = kiln_onnx_precision_parse(value, &options.precision);
      if (status) return kiln_compile_onnx_fail(status);
    } else if (strcmp(arg, "--no-fallback") == 0) {
      options.no_fallback = true;
    } else if (strcmp(arg, "--cooperative-matrix") == 0) {
      options.cooperative_matrix = true;
    } else if (strcmp(arg, "--no-cooperative-matrix") == 0) {
      options.cooperative_matrix = false;
    } else if (strcmp(arg, "--conv-windows") == 0) {
      options.conv_windows = true;
    } else if (strncmp(arg, "--quantize=", 11) == 0) {
      kiln_quant_layout_t layout;
      kiln_status_t status = kiln_quant_layout_parse(arg + 11, &layout);
      if (status) return kiln_compile_onnx_fail(status);
      options.quantize = (int)layout;
    } else if (strcmp(arg, "--print-statistics") == 0 ||
               strcmp(arg, "--print_statistics") == 0) {
      options.statistics_stream = stdout;
    } else if (strncmp(arg, "--dump-assembly=", 16) == 0) {
      assembly_path = arg + 16;
    } else if (arg[0] == '-' || input) {
      fprintf(stderr, "kiln-compile: unexpected argument '%s'\n", arg);
      kiln_compile_onnx_usage(stderr);
      return 2;
    } else {
      input = arg;
    }
  }
  if (!input || !output) {
    kiln_compile_onnx_usage(stderr);
    return 2;
  }
  kiln_compile_progress_t progress;
  kiln_compile_progress_init(&progress);
  options.progress = kiln_compile_progress_report;
  options.progress_user = &progress;
  kiln_status_t status =
      kiln_compile_onnx_to_file(input, output, assembly_path, &options, &progress);
  if (status) return kiln_compile_onnx_fail(status);
  return 0;
}
