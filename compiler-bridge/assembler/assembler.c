// The text assembler (syntax in docs/assembly.md): parses text into module
// builder calls (kiln/compiler/module_builder.h). Line based: pass 1 reads
// module-level directives and declares every function (so calls may name a
// function defined later); pass 2 turns function bodies into builder ops.
#include "kiln/compiler/assembler.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/arena.h"
#include "kiln/base/file.h"
#include "kiln/base/reader.h"
#include "kiln/compiler/module_builder.h"
#include "kiln/format/signature.h"
#include "kiln/vm/isa.h"

#define KILN_ASM_MAX_TOKENS 512

typedef struct kiln_asm_token_t {
  kiln_string_view_t text;   // raw text (for strings: decoded value)
  bool is_string;
} kiln_asm_token_t;

typedef struct kiln_asm_line_t {
  kiln_asm_token_t tokens[KILN_ASM_MAX_TOKENS];
  int count;
  int number;  // 1-based
} kiln_asm_line_t;

typedef struct kiln_asm_name_t {
  kiln_string_view_t name;
  uint32_t ordinal;
  kiln_format_signature_t signature;  // functions and imports
} kiln_asm_name_t;

typedef struct kiln_asm_vec_t {
  void* data;
  uint32_t count, capacity;
} kiln_asm_vec_t;

// A label name, its builder label, and the first line that used it (for
// "unknown label" errors).
typedef struct kiln_asm_label_t {
  kiln_string_view_t name;
  uint32_t label;
  int first_use;
} kiln_asm_label_t;

typedef struct kiln_asm_t {
  kiln_arena_t arena;
  kiln_module_writer_t* writer;
  const char* source_name;
  kiln_string_view_t source;
  kiln_asm_vec_t functions, imports, rodata, exports;  // kiln_asm_name_t
  kiln_asm_line_t line;
  // Current function body.
  kiln_function_builder_t* body;
  kiln_asm_vec_t labels;   // kiln_asm_label_t
  kiln_asm_vec_t aliases;  // kiln_asm_name_t (name -> token text in signature.text)
  const kiln_asm_name_t* function;
  uint32_t function_ordinal;
  uint32_t register_count, ref_count;  // explicit regs/refs or KILN_FUNCTION_BUILDER_AUTO
  bool in_function, skip_block;
  kiln_executable_builder_t* exe;
  bool in_executable;
} kiln_asm_t;

static kiln_status_t kiln_asm_error(const kiln_asm_t* a, const char* format, ...)
    KILN_PRINTF_LIKE(2, 3);
static kiln_status_t kiln_asm_error(const kiln_asm_t* a, const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s:%d: %s",
                          a->source_name, a->line.number, message);
}

// Prefixes a builder error with the source line, keeping its code.
static kiln_status_t kiln_asm_wrap(const kiln_asm_t* a, kiln_status_t status) {
  if (!status) return status;
  kiln_status_t wrapped =
      kiln_make_status(kiln_status_code(status), "%s:%d: %s", a->source_name,
                       a->line.number, kiln_status_message(status));
  kiln_status_free(status);
  return wrapped;
}

static kiln_status_t kiln_asm_push(kiln_asm_t* a, kiln_asm_vec_t* vec,
                                   size_t size, void** out) {
  if (vec->count == vec->capacity) {
    uint32_t capacity = vec->capacity ? vec->capacity * 2 : 16;
    void* grown = NULL;
    KILN_RETURN_IF_ERROR(
        kiln_arena_allocate_array(&a->arena, capacity, size, &grown));
    if (vec->count) memcpy(grown, vec->data, (size_t)vec->count * size);
    vec->data = grown;
    vec->capacity = capacity;
  }
  *out = (uint8_t*)vec->data + (size_t)vec->count++ * size;
  memset(*out, 0, size);
  return kiln_ok_status();
}

static const kiln_asm_name_t* kiln_asm_find(const kiln_asm_vec_t* vec,
                                            kiln_string_view_t name) {
  const kiln_asm_name_t* entries = (const kiln_asm_name_t*)vec->data;
  for (uint32_t i = 0; i < vec->count; ++i) {
    if (kiln_string_view_equal(entries[i].name, name)) return &entries[i];
  }
  return NULL;
}

// ---- tokenizer ----

static int kiln_asm_hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static kiln_status_t kiln_asm_tokenize(kiln_asm_t* a, kiln_string_view_t text) {
  kiln_asm_line_t* line = &a->line;
  line->count = 0;
  size_t i = 0;
  while (i < text.size) {
    char c = text.data[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == ',') {
      ++i;
      continue;
    }
    if (c == '#' || c == ';') break;
    if (line->count == KILN_ASM_MAX_TOKENS) {
      return kiln_asm_error(a, "more than %d tokens on one line",
                            KILN_ASM_MAX_TOKENS);
    }
    kiln_asm_token_t* token = &line->tokens[line->count++];
    if (c == '"') {
      // Decode into the arena; the worst case is the raw length.
      char* out = NULL;
      KILN_RETURN_IF_ERROR(kiln_arena_allocate(&a->arena, text.size - i + 1,
                                               (void**)&out));
      size_t length = 0;
      ++i;
      bool closed = false;
      while (i < text.size) {
        char s = text.data[i++];
        if (s == '"') {
          closed = true;
          break;
        }
        if (s == '\\') {
          if (i >= text.size) break;
          char e = text.data[i++];
          switch (e) {
            case 'n': out[length++] = '\n'; break;
            case 't': out[length++] = '\t'; break;
            case 'r': out[length++] = '\r'; break;
            case '0': out[length++] = '\0'; break;
            case '\\': out[length++] = '\\'; break;
            case '"': out[length++] = '"'; break;
            case 'x': {
              int hi = i < text.size ? kiln_asm_hex_digit(text.data[i]) : -1;
              int lo = i + 1 < text.size ? kiln_asm_hex_digit(text.data[i + 1]) : -1;
              if (hi < 0 || lo < 0) {
                return kiln_asm_error(a, "bad \\x escape in string");
              }
              out[length++] = (char)(hi * 16 + lo);
              i += 2;
              break;
            }
            default:
              return kiln_asm_error(a, "unknown escape '\\%c' in string", e);
          }
          continue;
        }
        out[length++] = s;
      }
      if (!closed) return kiln_asm_error(a, "unterminated string");
      token->text = kiln_make_string_view(out, length);
      token->is_string = true;
      continue;
    }
    size_t start = i;
    while (i < text.size) {
      char t = text.data[i];
      if (t == ' ' || t == '\t' || t == '\r' || t == ',' || t == '#' ||
          t == ';' || t == '"') {
        break;
      }
      ++i;
    }
    token->text = kiln_make_string_view(text.data + start, i - start);
    token->is_string = false;
  }
  return kiln_ok_status();
}

// Calls `fn` for every line; stops at the first error.
typedef kiln_status_t (*kiln_asm_line_fn_t)(kiln_asm_t* a);
static kiln_status_t kiln_asm_for_each_line(kiln_asm_t* a, kiln_asm_line_fn_t fn) {
  kiln_string_view_t rest = a->source;
  int number = 0;
  while (rest.size) {
    kiln_string_view_t text, tail;
    if (!kiln_string_view_split(rest, '\n', &text, &tail)) tail = kiln_make_string_view("", 0);
    rest = tail;
    a->line.number = ++number;
    KILN_RETURN_IF_ERROR(kiln_asm_tokenize(a, text));
    if (a->line.count == 0) continue;
    KILN_RETURN_IF_ERROR(fn(a));
  }
  return kiln_ok_status();
}

static bool kiln_asm_is(const kiln_asm_token_t* token, const char* word) {
  return !token->is_string && kiln_string_view_equal_cstring(token->text, word);
}

static kiln_status_t kiln_asm_token(kiln_asm_t* a, int index,
                                    const kiln_asm_token_t** out) {
  if (index >= a->line.count) {
    return kiln_asm_error(a, "missing operand %d", index);
  }
  *out = &a->line.tokens[index];
  return kiln_ok_status();
}

static kiln_status_t kiln_asm_u64(kiln_asm_t* a, const kiln_asm_token_t* token,
                                  uint64_t max, uint64_t* out) {
  int64_t signed_value = 0;
  kiln_status_t status = kiln_string_view_parse_i64(token->text, &signed_value);
  if (!status) {
    *out = (uint64_t)signed_value;
  } else {
    kiln_status_free(status);
    status = kiln_string_view_parse_u64(token->text, out);
    if (status) {
      kiln_status_free(status);
      return kiln_asm_error(a, "'%.*s' is not an integer",
                            KILN_SV_ARG(token->text));
    }
  }
  if (max != UINT64_MAX && *out > max && (int64_t)*out < -(int64_t)(max / 2) - 1) {
    return kiln_asm_error(a, "%.*s is out of range", KILN_SV_ARG(token->text));
  }
  if (max != UINT64_MAX && signed_value >= 0 && *out > max) {
    return kiln_asm_error(a, "%.*s is out of range", KILN_SV_ARG(token->text));
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_asm_u32_at(kiln_asm_t* a, int index, uint32_t* out) {
  const kiln_asm_token_t* token = NULL;
  KILN_RETURN_IF_ERROR(kiln_asm_token(a, index, &token));
  uint64_t value = 0;
  KILN_RETURN_IF_ERROR(kiln_asm_u64(a, token, UINT32_MAX, &value));
  if (value > UINT32_MAX) {
    return kiln_asm_error(a, "%.*s does not fit 32 bits", KILN_SV_ARG(token->text));
  }
  *out = (uint32_t)value;
  return kiln_ok_status();
}

// key value pairs after `first`: "features 3 subgroup 32".
static kiln_status_t kiln_asm_keyword_u32(kiln_asm_t* a, int first,
                                          const char* key, uint32_t* out) {
  for (int i = first; i + 1 < a->line.count; ++i) {
    if (kiln_asm_is(&a->line.tokens[i], key)) return kiln_asm_u32_at(a, i + 1, out);
  }
  return kiln_ok_status();
}

// ---- pass 1: module-level directives ----



// `spirv file "k.spv"`: reads a SPIR-V binary (glslc output) from a path
// relative to the source file's folder, so kernels compiled at build time
// need not be pasted in as words.
static kiln_status_t kiln_asm_spirv_file(kiln_asm_t* a,
                                         const kiln_asm_token_t* path_token) {
  if (!path_token->is_string) {
    return kiln_asm_error(a, "spirv file needs a quoted path");
  }
  char path[4096];
  kiln_string_view_t source = kiln_make_cstring_view(a->source_name);
  size_t slash = kiln_string_view_find_last_char(source, '/');
  bool absolute = path_token->text.size > 0 && path_token->text.data[0] == '/';
  int length;
  if (absolute || slash == SIZE_MAX) {
    length = snprintf(path, sizeof(path), "%.*s", KILN_SV_ARG(path_token->text));
  } else {
    length = snprintf(path, sizeof(path), "%.*s/%.*s", (int)slash, source.data,
                      KILN_SV_ARG(path_token->text));
  }
  if (length < 0 || (size_t)length >= sizeof(path)) {
    return kiln_asm_error(a, "spirv file path is too long");
  }
  kiln_file_contents_t contents;
  kiln_status_t status =
      kiln_file_read_all(path, kiln_allocator_system(), &contents);
  if (status) {
    char* text = kiln_status_to_string(status);
    kiln_status_t error = kiln_asm_error(a, "spirv file: %s", text);
    free(text);
    kiln_status_free(status);
    return error;
  }
  if (contents.size == 0 || contents.size % 4 != 0 ||
      kiln_load_le_u32(contents.data) != 0x07230203u) {
    kiln_file_contents_deinit(&contents);
    return kiln_asm_error(a, "'%s' is not a SPIR-V binary (size %% 4 != 0 or "
                          "bad magic)", path);
  }
  status = kiln_executable_builder_append_spirv(
      a->exe, kiln_make_const_byte_span(contents.data, contents.size));
  kiln_file_contents_deinit(&contents);
  return kiln_asm_wrap(a, status);
}

static kiln_status_t kiln_asm_executable_line(kiln_asm_t* a) {
  const kiln_asm_token_t* head = &a->line.tokens[0];
  if (kiln_asm_is(head, "variant")) {
    const kiln_asm_token_t* target;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &target));
    if (!target->is_string) return kiln_asm_error(a, "variant needs a quoted target");
    kiln_executable_variant_desc_t desc;
    memset(&desc, 0, sizeof(desc));
    desc.target = target->text;
    KILN_RETURN_IF_ERROR(kiln_asm_keyword_u32(a, 2, "features", &desc.required_features));
    KILN_RETURN_IF_ERROR(kiln_asm_keyword_u32(a, 2, "subgroup", &desc.min_subgroup_size));
    KILN_RETURN_IF_ERROR(kiln_asm_keyword_u32(a, 2, "shared", &desc.min_shared_memory_bytes));
    KILN_RETURN_IF_ERROR(
        kiln_asm_keyword_u32(a, 2, "invocations", &desc.min_workgroup_invocations));
    return kiln_asm_wrap(a, kiln_executable_builder_add_variant(a->exe, &desc));
  }
  if (kiln_asm_is(head, "spirv") && a->line.count == 3 &&
      kiln_asm_is(&a->line.tokens[1], "file")) {
    return kiln_asm_spirv_file(a, &a->line.tokens[2]);
  }
  if (kiln_asm_is(head, "spirv")) {
    uint8_t bytes[4 * KILN_ASM_MAX_TOKENS];
    size_t size = 0;
    for (int i = 1; i < a->line.count; ++i) {
      uint32_t word = 0;
      KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, i, &word));
      for (int b = 0; b < 4; ++b) bytes[size++] = (uint8_t)(word >> (8 * b));
    }
    return kiln_asm_wrap(a, kiln_executable_builder_append_spirv(
                                a->exe, kiln_make_const_byte_span(bytes, size)));
  }
  if (kiln_asm_is(head, "entry")) {
    const kiln_asm_token_t* name;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &name));
    uint32_t workgroup[3] = {0, 0, 0};
    uint32_t push = 0;
    for (int i = 2; i < a->line.count; ++i) {
      if (kiln_asm_is(&a->line.tokens[i], "workgroup")) {
        for (int d = 0; d < 3; ++d) {
          KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, i + 1 + d, &workgroup[d]));
        }
      }
    }
    KILN_RETURN_IF_ERROR(kiln_asm_keyword_u32(a, 2, "push", &push));
    return kiln_asm_wrap(a, kiln_executable_builder_add_entry(a->exe, name->text, workgroup, push));
  }
  if (kiln_asm_is(head, "binding")) {
    uint32_t set = 0, binding = 0, flags = 0;
    KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, 1, &set));
    KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, 2, &binding));
    // Flags: `readonly`, `texel` (a uniform texel buffer of vec4 f32; needs
    // `readonly`), in any order.
    for (int i = 3; i < a->line.count; ++i) {
      if (kiln_asm_is(&a->line.tokens[i], "readonly")) {
        flags |= KILN_FORMAT_BINDING_READ_ONLY;
      } else if (kiln_asm_is(&a->line.tokens[i], "texel")) {
        flags |= KILN_FORMAT_BINDING_TEXEL_VEC4F32;
      } else {
        return kiln_asm_error(a, "binding: unknown flag '%.*s' (known: readonly, texel)",
                              KILN_SV_ARG(a->line.tokens[i].text));
      }
    }
    return kiln_asm_wrap(a, kiln_executable_builder_add_binding(a->exe, set, binding, flags));
  }
  if (kiln_asm_is(head, "spec")) {
    uint32_t id = 0, value = 0;
    KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, 1, &id));
    KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, 2, &value));
    return kiln_asm_wrap(a, kiln_executable_builder_add_spec(a->exe, id, value));
  }
  return kiln_asm_error(a, "unknown executable directive '%.*s'",
                        KILN_SV_ARG(head->text));
}

static kiln_status_t kiln_asm_pass1_line(kiln_asm_t* a) {
  const kiln_asm_token_t* head = &a->line.tokens[0];
  if (a->in_function) {
    if (kiln_asm_is(head, "end")) a->in_function = false;
    return kiln_ok_status();
  }
  if (a->in_executable) {
    if (kiln_asm_is(head, "end")) {
      a->in_executable = false;
      return kiln_asm_wrap(a, kiln_executable_builder_finish(a->exe, a->writer));
    }
    return kiln_asm_executable_line(a);
  }
  if (kiln_asm_is(head, "module")) {
    const kiln_asm_token_t* name;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &name));
    return kiln_module_writer_set_name(a->writer, name->text);
  }
  if (kiln_asm_is(head, "import")) {
    int at = 1;
    uint32_t flags = 0;
    if (a->line.count > 1 && kiln_asm_is(&a->line.tokens[1], "optional")) {
      flags = KILN_FORMAT_IMPORT_OPTIONAL;
      at = 2;
    }
    const kiln_asm_token_t *name, *signature;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, at, &name));
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, at + 1, &signature));
    if (kiln_asm_find(&a->imports, name->text)) {
      return kiln_asm_error(a, "import '%.*s' declared twice", KILN_SV_ARG(name->text));
    }
    kiln_asm_name_t* entry = NULL;
    KILN_RETURN_IF_ERROR(kiln_asm_push(a, &a->imports, sizeof(*entry), (void**)&entry));
    entry->name = name->text;
    kiln_status_t status = kiln_format_signature_parse(signature->text, &entry->signature);
    if (status) {
      kiln_status_free(status);
      return kiln_asm_error(a, "bad signature '%.*s'", KILN_SV_ARG(signature->text));
    }
    return kiln_module_writer_add_import(a->writer, name->text, signature->text,
                                         flags, &entry->ordinal);
  }
  if (kiln_asm_is(head, "globals")) {
    uint32_t words = 0, refs = 0;
    KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, 1, &words));
    KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, 2, &refs));
    return kiln_module_writer_set_globals(a->writer, words, refs);
  }
  if (kiln_asm_is(head, "rodata")) {
    // rodata NAME align N [auto|raw|zstd] (hex "..." | text "...")
    const kiln_asm_token_t *name, *kind, *data;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &name));
    uint32_t alignment = 16;
    int at = 2;
    if (a->line.count > at && kiln_asm_is(&a->line.tokens[at], "align")) {
      KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, at + 1, &alignment));
      at += 2;
    }
    kiln_module_writer_compression_t compression = KILN_MODULE_WRITER_COMPRESSION_AUTO;
    if (a->line.count > at && kiln_asm_is(&a->line.tokens[at], "raw")) {
      compression = KILN_MODULE_WRITER_COMPRESSION_NONE;
      ++at;
    } else if (a->line.count > at && kiln_asm_is(&a->line.tokens[at], "zstd")) {
      compression = KILN_MODULE_WRITER_COMPRESSION_ZSTD;
      ++at;
    } else if (a->line.count > at && kiln_asm_is(&a->line.tokens[at], "auto")) {
      ++at;
    }
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, at, &kind));
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, at + 1, &data));
    if (!data->is_string) return kiln_asm_error(a, "rodata data must be a quoted string");
    kiln_const_byte_span_t bytes = kiln_make_const_byte_span(data->text.data, data->text.size);
    if (kiln_asm_is(kind, "hex")) {
      uint8_t* decoded = NULL;
      KILN_RETURN_IF_ERROR(kiln_arena_allocate(&a->arena, data->text.size / 2 + 1,
                                               (void**)&decoded));
      size_t count = 0;
      int high = -1;
      for (size_t i = 0; i < data->text.size; ++i) {
        char c = data->text.data[i];
        if (c == ' ' || c == '\n' || c == '\t') continue;
        int digit = kiln_asm_hex_digit(c);
        if (digit < 0) return kiln_asm_error(a, "bad hex digit '%c' in rodata", c);
        if (high < 0) {
          high = digit;
        } else {
          decoded[count++] = (uint8_t)(high * 16 + digit);
          high = -1;
        }
      }
      if (high >= 0) return kiln_asm_error(a, "odd number of hex digits in rodata");
      bytes = kiln_make_const_byte_span(decoded, count);
    } else if (!kiln_asm_is(kind, "text")) {
      return kiln_asm_error(a, "rodata data kind must be 'hex' or 'text'");
    }
    if (kiln_asm_find(&a->rodata, name->text)) {
      return kiln_asm_error(a, "rodata '%.*s' defined twice", KILN_SV_ARG(name->text));
    }
    kiln_asm_name_t* entry = NULL;
    KILN_RETURN_IF_ERROR(kiln_asm_push(a, &a->rodata, sizeof(*entry), (void**)&entry));
    entry->name = name->text;
    return kiln_module_writer_add_rodata(a->writer, name->text, bytes, alignment,
                                         compression, &entry->ordinal);
  }
  if (kiln_asm_is(head, "func")) {
    const kiln_asm_token_t *name, *signature;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &name));
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 2, &signature));
    if (kiln_asm_find(&a->functions, name->text)) {
      return kiln_asm_error(a, "function '%.*s' defined twice", KILN_SV_ARG(name->text));
    }
    kiln_asm_name_t* entry = NULL;
    KILN_RETURN_IF_ERROR(kiln_asm_push(a, &a->functions, sizeof(*entry), (void**)&entry));
    entry->name = name->text;
    kiln_status_t status = kiln_format_signature_parse(signature->text, &entry->signature);
    if (status) {
      kiln_status_free(status);
      return kiln_asm_error(a, "bad signature '%.*s'", KILN_SV_ARG(signature->text));
    }
    a->in_function = true;
    return kiln_module_writer_declare_function(a->writer, name->text,
                                               signature->text, &entry->ordinal);
  }
  if (kiln_asm_is(head, "export")) {
    // export FUNC [as NAME]
    const kiln_asm_token_t* function;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &function));
    kiln_asm_name_t* entry = NULL;
    KILN_RETURN_IF_ERROR(kiln_asm_push(a, &a->exports, sizeof(*entry), (void**)&entry));
    entry->signature.text = function->text;  // the function it names
    entry->name = function->text;
    entry->ordinal = (uint32_t)a->line.number;
    if (a->line.count > 3 && kiln_asm_is(&a->line.tokens[2], "as")) {
      entry->name = a->line.tokens[3].text;
    }
    return kiln_ok_status();
  }
  if (kiln_asm_is(head, "executable")) {
    const kiln_asm_token_t* name;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &name));
    a->in_executable = true;
    return kiln_asm_wrap(a, kiln_executable_builder_begin(a->exe, name->text));
  }
  return kiln_asm_error(a, "unknown directive '%.*s'", KILN_SV_ARG(head->text));
}

// ---- pass 2: function bodies ----

// Resolves a register token with the wanted prefix ('i', 'I' or 'r').
static kiln_status_t kiln_asm_register(kiln_asm_t* a, const kiln_asm_token_t* token,
                                       char prefix, uint16_t* out) {
  kiln_string_view_t text = token->text;
  const kiln_asm_name_t* alias = kiln_asm_find(&a->aliases, text);
  if (alias) text = alias->signature.text;
  if (token->is_string || text.size < 2 || text.data[0] != prefix) {
    return kiln_asm_error(a, "expected a register '%c<n>', got '%.*s'", prefix,
                          KILN_SV_ARG(token->text));
  }
  uint64_t value = 0;
  kiln_status_t status = kiln_string_view_parse_u64(
      kiln_string_view_substring(text, 1, SIZE_MAX), &value);
  if (status || value > 0xFFFF) {
    kiln_status_free(status);
    return kiln_asm_error(a, "bad register '%.*s'", KILN_SV_ARG(token->text));
  }
  *out = (uint16_t)value;
  return kiln_ok_status();
}

static char kiln_asm_prefix_for_type(char type) {
  if (type == KILN_VALUE_TYPE_REF) return 'r';
  return kiln_value_type_is_64bit(type) ? 'I' : 'i';
}

// Registers typed by `types` from token *at up to "->" or the line end.
// A count other than `needed` is left for the builder to refuse.
static kiln_status_t kiln_asm_register_list(kiln_asm_t* a, int* at, const char* types,
                                            uint32_t needed, uint16_t* registers,
                                            size_t* out_count) {
  int start = *at;
  int end = start;
  while (end < a->line.count && !kiln_asm_is(&a->line.tokens[end], "->")) ++end;
  size_t count = (size_t)(end - start);
  if (count > KILN_FORMAT_MAX_SIGNATURE_VALUES) count = KILN_FORMAT_MAX_SIGNATURE_VALUES + 1;
  for (size_t i = 0; i < count && count == needed; ++i) {
    KILN_RETURN_IF_ERROR(kiln_asm_register(a, &a->line.tokens[start + (int)i],
                                           kiln_asm_prefix_for_type(types[i]), &registers[i]));
  }
  *out_count = count;
  *at = end;
  return kiln_ok_status();
}

static kiln_status_t kiln_asm_call(kiln_asm_t* a, kiln_vm_opcode_t op, int at,
                                   const kiln_asm_name_t* callee) {
  const kiln_format_signature_t* s = &callee->signature;
  uint16_t args[KILN_FORMAT_MAX_SIGNATURE_VALUES + 1] = {0};
  uint16_t results[KILN_FORMAT_MAX_SIGNATURE_VALUES + 1] = {0};
  size_t arg_count = 0, result_count = 0;
  KILN_RETURN_IF_ERROR(kiln_asm_register_list(a, &at, s->types, s->arg_count, args, &arg_count));
  if (at < a->line.count) ++at;  // "->"
  KILN_RETURN_IF_ERROR(kiln_asm_register_list(a, &at, s->types + s->arg_count,
                                              s->result_count, results, &result_count));
  return kiln_asm_wrap(a, kiln_function_builder_call(a->body, op, callee->ordinal, args,
                                                     arg_count, results, result_count));
}

// The builder label for `name`, made on first mention.
static kiln_status_t kiln_asm_label(kiln_asm_t* a, kiln_string_view_t name, uint32_t* out) {
  kiln_asm_label_t* labels = (kiln_asm_label_t*)a->labels.data;
  for (uint32_t i = 0; i < a->labels.count; ++i) {
    if (kiln_string_view_equal(labels[i].name, name)) {
      *out = labels[i].label;
      return kiln_ok_status();
    }
  }
  kiln_asm_label_t* label = NULL;
  KILN_RETURN_IF_ERROR(kiln_asm_push(a, &a->labels, sizeof(*label), (void**)&label));
  label->name = name;
  label->first_use = a->line.number;
  KILN_RETURN_IF_ERROR(kiln_function_builder_new_label(a->body, &label->label));
  *out = label->label;
  return kiln_ok_status();
}

static kiln_status_t kiln_asm_float_bits(kiln_asm_t* a, const kiln_asm_token_t* token,
                                         bool is_double, uint64_t* out) {
  kiln_string_view_t text = token->text;
  if (kiln_string_view_starts_with(text, kiln_make_cstring_view("bits="))) {
    const kiln_asm_token_t raw = {kiln_string_view_substring(text, 5, SIZE_MAX), false};
    return kiln_asm_u64(a, &raw, is_double ? UINT64_MAX : UINT32_MAX, out);
  }
  char buffer[128];
  if (text.size >= sizeof(buffer) || token->is_string) {
    return kiln_asm_error(a, "bad float '%.*s'", KILN_SV_ARG(text));
  }
  memcpy(buffer, text.data, text.size);
  buffer[text.size] = 0;
  char* end = NULL;
  errno = 0;
  if (is_double) {
    double value = strtod(buffer, &end);
    memcpy(out, &value, 8);
  } else {
    float value = strtof(buffer, &end);
    uint32_t bits;
    memcpy(&bits, &value, 4);
    *out = bits;
  }
  if (end == buffer || *end != 0) {
    return kiln_asm_error(a, "bad float '%.*s'", KILN_SV_ARG(text));
  }
  return kiln_ok_status();
}

// br_table INDEX labels... default LABEL
static kiln_status_t kiln_asm_br_table(kiln_asm_t* a) {
  const kiln_asm_token_t* token = NULL;
  KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &token));
  uint16_t index = 0;
  KILN_RETURN_IF_ERROR(kiln_asm_register(a, token, 'i', &index));
  int default_at = 2;
  while (default_at < a->line.count && !kiln_asm_is(&a->line.tokens[default_at], "default")) {
    ++default_at;
  }
  if (default_at + 1 >= a->line.count) {
    return kiln_asm_error(a, "br_table needs 'default LABEL' at the end");
  }
  if (default_at + 2 < a->line.count) {
    return kiln_asm_error(a, "unexpected operand '%.*s'",
                          KILN_SV_ARG(a->line.tokens[default_at + 2].text));
  }
  uint32_t labels[KILN_ASM_MAX_TOKENS];
  size_t count = 0;
  for (int i = 2; i < default_at; ++i) {
    KILN_RETURN_IF_ERROR(kiln_asm_label(a, a->line.tokens[i].text, &labels[count++]));
  }
  uint32_t fallback = 0;
  KILN_RETURN_IF_ERROR(kiln_asm_label(a, a->line.tokens[default_at + 1].text, &fallback));
  return kiln_asm_wrap(a, kiln_function_builder_br_table(a->body, index, labels, count, fallback));
}

static kiln_status_t kiln_asm_instruction(kiln_asm_t* a) {
  const kiln_asm_token_t* head = &a->line.tokens[0];
  kiln_vm_opcode_t op = kiln_vm_op_lookup(head->text.data, (uint32_t)head->text.size);
  if (op == KILN_VM_OP_COUNT) {
    return kiln_asm_error(a, "unknown instruction '%.*s'", KILN_SV_ARG(head->text));
  }
  if (op == KILN_VM_OP_BR_TABLE) return kiln_asm_br_table(a);
  uint64_t operands[KILN_ASM_MAX_TOKENS];
  size_t count = 0;
  int at = 1;
  for (const char* kind = kiln_vm_op_infos[op].operands; *kind; ++kind) {
    const kiln_asm_token_t* token = NULL;
    if (*kind != 'R') KILN_RETURN_IF_ERROR(kiln_asm_token(a, at, &token));
    uint64_t value = 0;
    switch (*kind) {
      case 'i': case 'l': case 'r': {
        uint16_t reg = 0;
        KILN_RETURN_IF_ERROR(kiln_asm_register(a, token, *kind == 'l' ? 'I' : *kind, &reg));
        value = reg;
        break;
      }
      case 'k': case 'K':
        KILN_RETURN_IF_ERROR(kiln_asm_u64(a, token, *kind == 'k' ? UINT32_MAX : UINT64_MAX, &value));
        if (*kind == 'k') value = (uint32_t)value;
        break;
      case 'f': case 'F':
        KILN_RETURN_IF_ERROR(kiln_asm_float_bits(a, token, *kind == 'F', &value));
        break;
      case 'L': {
        uint32_t label = 0;
        KILN_RETURN_IF_ERROR(kiln_asm_label(a, token->text, &label));
        value = label;
        break;
      }
      case 'c': case 'm': {
        const kiln_asm_name_t* callee =
            kiln_asm_find(*kind == 'c' ? &a->functions : &a->imports, token->text);
        if (!callee) {
          return *kind == 'c' ? kiln_asm_error(a, "call to unknown function '%.*s'",
                                               KILN_SV_ARG(token->text))
                              : kiln_asm_error(a, "call to undeclared import '%.*s'",
                                               KILN_SV_ARG(token->text));
        }
        return kiln_asm_call(a, op, at + 1, callee);
      }
      case 'd': {
        const kiln_asm_name_t* rodata = kiln_asm_find(&a->rodata, token->text);
        if (!rodata) {
          return kiln_asm_error(a, "unknown rodata '%.*s'", KILN_SV_ARG(token->text));
        }
        value = rodata->ordinal;
        break;
      }
      case 's': {
        if (!token->is_string) return kiln_asm_error(a, "expected a quoted string");
        uint32_t ordinal = 0;
        KILN_RETURN_IF_ERROR(kiln_module_writer_add_string(a->writer, token->text, &ordinal));
        value = ordinal;
        break;
      }
      case 'g': case 'G': case 'h': {
        uint32_t slot = 0;
        KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, at, &slot));
        value = slot;
        break;
      }
      case 't':
        if (kiln_asm_is(token, "i32")) {
          value = KILN_VM_LIST_I32;
        } else if (kiln_asm_is(token, "i64")) {
          value = KILN_VM_LIST_I64;
        } else if (kiln_asm_is(token, "ref")) {
          value = KILN_VM_LIST_REF;
        } else {
          return kiln_asm_error(a, "list element type must be i32, i64 or ref");
        }
        break;
      case 'R': {
        const kiln_format_signature_t* signature = &a->function->signature;
        uint16_t registers[KILN_FORMAT_MAX_SIGNATURE_VALUES + 1] = {0};
        size_t result_count = 0;
        KILN_RETURN_IF_ERROR(kiln_asm_register_list(a, &at, signature->types + signature->arg_count,
                                                    signature->result_count, registers,
                                                    &result_count));
        for (size_t i = 0; i < result_count; ++i) operands[count++] = registers[i];
        continue;
      }
      default:
        return kiln_asm_error(a, "internal: operand kind '%c'", *kind);
    }
    operands[count++] = value;
    ++at;
  }
  if (at < a->line.count) {
    return kiln_asm_error(a, "unexpected operand '%.*s'", KILN_SV_ARG(a->line.tokens[at].text));
  }
  return kiln_asm_wrap(a, kiln_function_builder_op(a->body, op, operands, count));
}

// Names the first label used but never defined, at the line that used it.
static kiln_status_t kiln_asm_check_labels(kiln_asm_t* a) {
  const kiln_asm_label_t* labels = (const kiln_asm_label_t*)a->labels.data;
  for (uint32_t i = 0; i < a->labels.count; ++i) {
    if (!kiln_function_builder_label_bound(a->body, labels[i].label)) {
      a->line.number = labels[i].first_use;
      return kiln_asm_error(a, "unknown label '%.*s'", KILN_SV_ARG(labels[i].name));
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_asm_pass2_line(kiln_asm_t* a) {
  const kiln_asm_token_t* head = &a->line.tokens[0];
  if (a->skip_block) {
    if (kiln_asm_is(head, "end")) a->skip_block = false;
    return kiln_ok_status();
  }
  if (!a->function) {
    if (kiln_asm_is(head, "executable")) {
      a->skip_block = true;
      return kiln_ok_status();
    }
    if (!kiln_asm_is(head, "func")) return kiln_ok_status();
    a->function = kiln_asm_find(&a->functions, a->line.tokens[1].text);
    a->function_ordinal = a->function->ordinal;
    memset(&a->labels, 0, sizeof(a->labels));
    memset(&a->aliases, 0, sizeof(a->aliases));
    a->register_count = KILN_FUNCTION_BUILDER_AUTO;
    a->ref_count = KILN_FUNCTION_BUILDER_AUTO;
    KILN_RETURN_IF_ERROR(kiln_asm_keyword_u32(a, 3, "regs", &a->register_count));
    KILN_RETURN_IF_ERROR(kiln_asm_keyword_u32(a, 3, "refs", &a->ref_count));
    return kiln_asm_wrap(a, kiln_function_builder_begin(a->body, a->function_ordinal));
  }
  if (kiln_asm_is(head, "end")) {
    KILN_RETURN_IF_ERROR(kiln_asm_check_labels(a));
    KILN_RETURN_IF_ERROR(kiln_asm_wrap(
        a, kiln_function_builder_end(a->body, a->register_count, a->ref_count)));
    a->function = NULL;
    return kiln_ok_status();
  }
  if (head->text.size > 1 && head->text.data[head->text.size - 1] == ':' &&
      a->line.count == 1) {
    kiln_string_view_t name = kiln_string_view_substring(head->text, 0, head->text.size - 1);
    uint32_t label = 0;
    KILN_RETURN_IF_ERROR(kiln_asm_label(a, name, &label));
    if (kiln_function_builder_label_bound(a->body, label)) {
      return kiln_asm_error(a, "label '%.*s' defined twice", KILN_SV_ARG(name));
    }
    return kiln_asm_wrap(a, kiln_function_builder_bind_label(a->body, label));
  }
  if (kiln_asm_is(head, "alias")) {
    const kiln_asm_token_t *name, *reg;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &name));
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 2, &reg));
    kiln_asm_name_t* alias = NULL;
    KILN_RETURN_IF_ERROR(kiln_asm_push(a, &a->aliases, sizeof(*alias), (void**)&alias));
    alias->name = name->text;
    alias->signature.text = reg->text;
    return kiln_ok_status();
  }
  if (kiln_asm_is(head, "loc")) {
    const kiln_asm_token_t* file;
    uint32_t line = 0;
    KILN_RETURN_IF_ERROR(kiln_asm_token(a, 1, &file));
    KILN_RETURN_IF_ERROR(kiln_asm_u32_at(a, 2, &line));
    return kiln_module_writer_add_location(a->writer, a->function_ordinal,
                                           kiln_function_builder_offset(a->body), file->text,
                                           line);
  }
  return kiln_asm_instruction(a);
}

static kiln_status_t kiln_asm_run(kiln_asm_t* a, kiln_byte_buffer_t* out) {
  a->in_function = false;
  a->in_executable = false;
  KILN_RETURN_IF_ERROR(kiln_asm_for_each_line(a, kiln_asm_pass1_line));
  if (a->in_function || a->in_executable) {
    return kiln_asm_error(a, "missing 'end' at the end of the file");
  }
  const kiln_asm_name_t* exports = (const kiln_asm_name_t*)a->exports.data;
  for (uint32_t i = 0; i < a->exports.count; ++i) {
    const kiln_asm_name_t* function = kiln_asm_find(&a->functions, exports[i].signature.text);
    if (!function) {
      a->line.number = (int)exports[i].ordinal;
      return kiln_asm_error(a, "export of unknown function '%.*s'",
                            KILN_SV_ARG(exports[i].signature.text));
    }
    KILN_RETURN_IF_ERROR(
        kiln_module_writer_add_export(a->writer, exports[i].name, function->ordinal));
  }
  a->skip_block = false;
  a->function = NULL;
  KILN_RETURN_IF_ERROR(kiln_asm_for_each_line(a, kiln_asm_pass2_line));
  return kiln_module_writer_finish(a->writer, out);
}

kiln_status_t kiln_assembler_assemble(kiln_string_view_t source,
                                      const char* source_name,
                                      kiln_allocator_t allocator,
                                      kiln_byte_buffer_t* out) {
  kiln_asm_t a;
  memset(&a, 0, sizeof(a));
  a.source = source;
  a.source_name = source_name ? source_name : "<input>";
  kiln_arena_init(&a.arena, allocator, 64 * 1024);
  kiln_status_t status = kiln_module_writer_create(allocator, &a.writer);
  if (!status) status = kiln_function_builder_create(a.writer, allocator, &a.body);
  if (!status) status = kiln_executable_builder_create(allocator, &a.exe);
  if (!status) status = kiln_asm_run(&a, out);
  kiln_executable_builder_destroy(a.exe);
  kiln_function_builder_destroy(a.body);
  kiln_module_writer_destroy(a.writer);
  kiln_arena_deinit(&a.arena);
  return status;
}
