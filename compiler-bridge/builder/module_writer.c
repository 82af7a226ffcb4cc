// The module writer (layout in docs/module-format.md). Entities are kept as
// owned copies until finish(), which interns their strings and writes every
// section into one buffer so file offsets are known as they are written.
#include "kiln/compiler/module_writer.h"

#include <string.h>
#include <zstd.h>

#include "kiln/base/arena.h"
#include "kiln/base/size_math.h"
#include "kiln/format/signature.h"

typedef struct kiln_mw_import_t {
  kiln_string_view_t name, signature;
  uint32_t flags;
} kiln_mw_import_t;

typedef struct kiln_mw_function_t {
  kiln_string_view_t name, signature;
  bool defined;
  uint16_t i32_register_count, ref_register_count;
  kiln_const_byte_span_t bytecode;
} kiln_mw_function_t;

typedef struct kiln_mw_export_t {
  kiln_string_view_t name;
  uint32_t function;
} kiln_mw_export_t;

typedef struct kiln_mw_rodata_t {
  kiln_string_view_t name;
  kiln_const_byte_span_t stored;  // data NULL when `pieces` hold it
  const kiln_const_byte_span_t* pieces;  // a gathered reference, or NULL
  uint32_t piece_count;
  uint64_t size;
  uint32_t alignment, flags;
} kiln_mw_rodata_t;

typedef struct kiln_mw_location_t {
  uint32_t function, bytecode_offset, line;
  kiln_string_view_t file;
} kiln_mw_location_t;

// A growable array of fixed-size records in the arena.
typedef struct kiln_mw_vector_t {
  void* data;
  uint32_t count, capacity;
} kiln_mw_vector_t;

// A SPIR-V blob already in `executables`, for sharing identical ones.
typedef struct kiln_mw_blob_t {
  uint64_t hash;
  size_t offset;  // of the first word in `executables`
  uint32_t word_count;
  uint32_t variant;  // index over all variants written so far
} kiln_mw_blob_t;

struct kiln_module_writer_t {
  kiln_allocator_t allocator;
  kiln_arena_t arena;
  uint64_t piece_count;  // of all gathered rodata (streaming leaves one hole each)
  kiln_string_view_t name;
  kiln_mw_vector_t strings;  // kiln_string_view_t
  kiln_mw_vector_t signatures;  // kiln_string_view_t (interned in finish)
  kiln_mw_vector_t imports, functions, exports, rodata, locations;
  uint32_t global_words, global_refs;
  uint32_t executable_count;
  kiln_byte_buffer_t executables;  // serialized bodies
  kiln_mw_vector_t blobs;          // kiln_mw_blob_t
  uint32_t variant_count;          // over all executables
  bool shares_spirv;               // needs KILN_FORMAT_VERSION_SHARED_SPIRV
};

static kiln_status_t kiln_mw_push(kiln_module_writer_t* writer,
                                  kiln_mw_vector_t* vector, size_t size,
                                  void** out_slot) {
  if (vector->count == vector->capacity) {
    uint32_t capacity = vector->capacity ? vector->capacity * 2 : 16;
    void* grown = NULL;
    KILN_RETURN_IF_ERROR(
        kiln_arena_allocate_array(&writer->arena, capacity, size, &grown));
    if (vector->count) memcpy(grown, vector->data, (size_t)vector->count * size);
    vector->data = grown;
    vector->capacity = capacity;
  }
  *out_slot = (uint8_t*)vector->data + (size_t)vector->count * size;
  vector->count++;
  return kiln_ok_status();
}

static kiln_status_t kiln_mw_copy(kiln_module_writer_t* writer,
                                  kiln_string_view_t text,
                                  kiln_string_view_t* out) {
  char* copy = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_arena_strndup(&writer->arena, text.data, text.size, &copy));
  *out = kiln_make_string_view(copy, text.size);
  return kiln_ok_status();
}

kiln_status_t kiln_module_writer_create(kiln_allocator_t allocator,
                                        kiln_module_writer_t** out_writer) {
  *out_writer = NULL;
  kiln_module_writer_t* writer = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*writer), (void**)&writer));
  writer->allocator = allocator;
  kiln_arena_init(&writer->arena, allocator, 64 * 1024);
  kiln_byte_buffer_init(&writer->executables, allocator);
  *out_writer = writer;
  return kiln_ok_status();
}

void kiln_module_writer_destroy(kiln_module_writer_t* writer) {
  if (!writer) return;
  kiln_byte_buffer_deinit(&writer->executables);
  kiln_arena_deinit(&writer->arena);
  kiln_allocator_free(writer->allocator, writer);
}

kiln_status_t kiln_module_writer_set_name(kiln_module_writer_t* writer,
                                          kiln_string_view_t name) {
  return kiln_mw_copy(writer, name, &writer->name);
}

static kiln_status_t kiln_mw_intern(kiln_module_writer_t* writer,
                                    kiln_mw_vector_t* table,
                                    kiln_string_view_t text,
                                    uint32_t* out_ordinal) {
  kiln_string_view_t* entries = (kiln_string_view_t*)table->data;
  for (uint32_t i = 0; i < table->count; ++i) {
    if (kiln_string_view_equal(entries[i], text)) {
      *out_ordinal = i;
      return kiln_ok_status();
    }
  }
  kiln_string_view_t* slot = NULL;
  KILN_RETURN_IF_ERROR(kiln_mw_push(writer, table, sizeof(*slot), (void**)&slot));
  *out_ordinal = table->count - 1;
  return kiln_mw_copy(writer, text, slot);
}

kiln_status_t kiln_module_writer_add_string(kiln_module_writer_t* writer,
                                            kiln_string_view_t text,
                                            uint32_t* out_ordinal) {
  return kiln_mw_intern(writer, &writer->strings, text, out_ordinal);
}

static kiln_status_t kiln_mw_check_signature(kiln_string_view_t text) {
  kiln_format_signature_t parsed;
  return kiln_format_signature_parse(text, &parsed);
}

kiln_status_t kiln_module_writer_add_import(kiln_module_writer_t* writer,
                                            kiln_string_view_t name,
                                            kiln_string_view_t signature,
                                            uint32_t flags,
                                            uint32_t* out_ordinal) {
  KILN_RETURN_IF_ERROR(kiln_mw_check_signature(signature));
  if (flags & ~KILN_FORMAT_IMPORT_OPTIONAL) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "import '%.*s': unknown flags 0x%x",
                            KILN_SV_ARG(name), flags);
  }
  kiln_mw_import_t* import = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_mw_push(writer, &writer->imports, sizeof(*import), (void**)&import));
  import->flags = flags;
  *out_ordinal = writer->imports.count - 1;
  KILN_RETURN_IF_ERROR(kiln_mw_copy(writer, name, &import->name));
  return kiln_mw_copy(writer, signature, &import->signature);
}

kiln_status_t kiln_module_writer_function_signature(const kiln_module_writer_t* writer,
                                                    uint32_t ordinal,
                                                    kiln_format_signature_t* out) {
  if (ordinal >= writer->functions.count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "function ordinal %u was not declared", ordinal);
  }
  return kiln_format_signature_parse(
      ((const kiln_mw_function_t*)writer->functions.data)[ordinal].signature, out);
}

kiln_status_t kiln_module_writer_import_signature(const kiln_module_writer_t* writer,
                                                  uint32_t ordinal,
                                                  kiln_format_signature_t* out) {
  if (ordinal >= writer->imports.count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "import ordinal %u was not declared", ordinal);
  }
  return kiln_format_signature_parse(
      ((const kiln_mw_import_t*)writer->imports.data)[ordinal].signature, out);
}

kiln_status_t kiln_module_writer_declare_function(
    kiln_module_writer_t* writer, kiln_string_view_t name,
    kiln_string_view_t signature, uint32_t* out_ordinal) {
  KILN_RETURN_IF_ERROR(kiln_mw_check_signature(signature));
  kiln_mw_function_t* function = NULL;
  KILN_RETURN_IF_ERROR(kiln_mw_push(writer, &writer->functions,
                                    sizeof(*function), (void**)&function));
  memset(function, 0, sizeof(*function));
  *out_ordinal = writer->functions.count - 1;
  KILN_RETURN_IF_ERROR(kiln_mw_copy(writer, name, &function->name));
  return kiln_mw_copy(writer, signature, &function->signature);
}

kiln_status_t kiln_module_writer_define_function(
    kiln_module_writer_t* writer, uint32_t ordinal,
    uint16_t i32_register_count, uint16_t ref_register_count,
    kiln_const_byte_span_t bytecode) {
  if (ordinal >= writer->functions.count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "define_function: ordinal %u was not declared",
                            ordinal);
  }
  kiln_mw_function_t* function =
      &((kiln_mw_function_t*)writer->functions.data)[ordinal];
  if (function->defined) {
    return kiln_make_status(KILN_STATUS_ALREADY_EXISTS,
                            "function '%.*s' is defined twice",
                            KILN_SV_ARG(function->name));
  }
  void* copy = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate(&writer->arena, bytecode.size, &copy));
  if (bytecode.size) memcpy(copy, bytecode.data, bytecode.size);
  function->bytecode = kiln_make_const_byte_span(copy, bytecode.size);
  function->i32_register_count = i32_register_count;
  function->ref_register_count = ref_register_count;
  function->defined = true;
  return kiln_ok_status();
}

kiln_status_t kiln_module_writer_add_export(kiln_module_writer_t* writer,
                                            kiln_string_view_t name,
                                            uint32_t function) {
  if (function >= writer->functions.count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "export '%.*s': function %u was not declared",
                            KILN_SV_ARG(name), function);
  }
  kiln_mw_export_t* entry = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_mw_push(writer, &writer->exports, sizeof(*entry), (void**)&entry));
  entry->function = function;
  return kiln_mw_copy(writer, name, &entry->name);
}

kiln_status_t kiln_module_writer_set_globals(kiln_module_writer_t* writer,
                                            uint32_t word_count,
                                            uint32_t ref_count) {
  if (word_count > KILN_FORMAT_MAX_GLOBAL_WORDS ||
      ref_count > KILN_FORMAT_MAX_GLOBAL_REFS) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "globals: %u words and %u refs exceed the limits",
                            word_count, ref_count);
  }
  writer->global_words = word_count;
  writer->global_refs = ref_count;
  return kiln_ok_status();
}

// AUTO keeps zstd only when it saves 1/8. Compressing hundreds of MiB of
// float weights at level 9 to find out takes seconds and rarely pays, so
// large segments are sampled first: 8 slices of 128 KiB at level 3. On
// float weights level 9 gains almost nothing over that (ResNet-50: 92.5% at
// levels 1, 3 and 9), so a sample that saves under 10% skips the full try.
#define KILN_MW_SAMPLE_MIN_BYTES (4u << 20)
#define KILN_MW_SAMPLE_SLICE (128u << 10)
#define KILN_MW_SAMPLE_SLICES 8u

// Copies [offset, offset+size) of the concatenated pieces into `out`.
static void kiln_mw_gather(const kiln_const_byte_span_t* pieces, size_t count,
                           size_t offset, size_t size, uint8_t* out) {
  for (size_t i = 0; i < count && size; ++i) {
    if (offset >= pieces[i].size) {
      offset -= pieces[i].size;
      continue;
    }
    size_t take = pieces[i].size - offset < size ? pieces[i].size - offset : size;
    memcpy(out, pieces[i].data + offset, take);
    out += take;
    size -= take;
    offset = 0;
  }
}

static kiln_status_t kiln_mw_sample_compressible(kiln_module_writer_t* writer,
                                                 const kiln_const_byte_span_t* pieces,
                                                 size_t count, size_t total,
                                                 bool* out_worth_trying) {
  *out_worth_trying = true;
  if (total < KILN_MW_SAMPLE_MIN_BYTES) return kiln_ok_status();
  size_t bound = ZSTD_compressBound(KILN_MW_SAMPLE_SLICE);
  uint8_t* scratch = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(writer->allocator, bound + KILN_MW_SAMPLE_SLICE,
                                             (void**)&scratch));
  uint8_t* slice = scratch + bound;
  size_t stride = (total - KILN_MW_SAMPLE_SLICE) / (KILN_MW_SAMPLE_SLICES - 1);
  uint64_t compressed = 0;
  kiln_status_t status = kiln_ok_status();
  for (uint32_t i = 0; i < KILN_MW_SAMPLE_SLICES && !status; ++i) {
    kiln_mw_gather(pieces, count, (size_t)i * stride, KILN_MW_SAMPLE_SLICE, slice);
    size_t written = ZSTD_compress(scratch, bound, slice, KILN_MW_SAMPLE_SLICE, 3);
    if (ZSTD_isError(written)) {
      status = kiln_make_status(KILN_STATUS_INTERNAL, "zstd failed: %s",
                                ZSTD_getErrorName(written));
    }
    compressed += written;
  }
  kiln_allocator_free(writer->allocator, scratch);
  uint64_t sampled = (uint64_t)KILN_MW_SAMPLE_SLICE * KILN_MW_SAMPLE_SLICES;
  if (!status) *out_worth_trying = compressed * 10 <= sampled * 9;
  return status;
}

// The size ZSTD_compress(data, level) would have, counted through a small
// output block: deciding against compression then costs no module-sized
// scratch (the same frame: one pledged-size stream, ended in one call).
static kiln_status_t kiln_mw_zstd_size(kiln_module_writer_t* writer,
                                       const kiln_const_byte_span_t* pieces, size_t count,
                                       size_t total, int level, size_t* out_size) {
  *out_size = 0;
  size_t block_size = ZSTD_CStreamOutSize();
  void* block = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(writer->allocator, block_size, &block));
  ZSTD_CCtx* context = ZSTD_createCCtx();
  size_t result = context ? ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)
                          : (size_t)-1;
  if (context && !ZSTD_isError(result)) {
    result = ZSTD_CCtx_setPledgedSrcSize(context, total);
  }
  // Buffered streaming compresses whole blocks whatever the input pieces.
  size_t written = 0;
  for (size_t i = 0; i < count && context && !ZSTD_isError(result); ++i) {
    ZSTD_inBuffer input = {pieces[i].data, pieces[i].size, 0};
    ZSTD_EndDirective mode = i + 1 == count ? ZSTD_e_end : ZSTD_e_continue;
    while (!ZSTD_isError(result)) {
      ZSTD_outBuffer output = {block, block_size, 0};
      result = ZSTD_compressStream2(context, &output, &input, mode);
      written += output.pos;
      if (mode == ZSTD_e_end ? result == 0 : input.pos == input.size) break;
    }
  }
  kiln_status_t status = kiln_ok_status();
  if (!context) {
    status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "zstd: no compression context");
  } else if (ZSTD_isError(result)) {
    status = kiln_make_status(KILN_STATUS_INTERNAL, "zstd failed: %s", ZSTD_getErrorName(result));
  }
  ZSTD_freeCCtx(context);
  kiln_allocator_free(writer->allocator, block);
  if (!status) *out_size = written;
  return status;
}

// Compresses `data` into a scratch block and keeps an exact-size copy in the
// arena when it is worth it (or ZSTD was asked for); *out_kept says which.
// For AUTO a level-1 pass decides first (about 10x faster than level 9 and
// within a point or two of it), so level 9 runs only on data it will keep.
static kiln_status_t kiln_mw_try_zstd(kiln_module_writer_t* writer, kiln_mw_rodata_t* rodata,
                                      kiln_const_byte_span_t data,
                                      kiln_module_writer_compression_t compression,
                                      bool* out_kept) {
  *out_kept = false;
  size_t limit = data.size - data.size / 8;
  size_t written = 0;
  if (compression == KILN_MODULE_WRITER_COMPRESSION_AUTO && data.size >= KILN_MW_SAMPLE_MIN_BYTES) {
    KILN_RETURN_IF_ERROR(kiln_mw_zstd_size(writer, &data, 1, data.size, 1, &written));
    if (written > limit) return kiln_ok_status();
  }
  size_t bound = ZSTD_compressBound(data.size);
  void* scratch = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(writer->allocator, bound ? bound : 1, &scratch));
  if (!ZSTD_isError(written)) written = ZSTD_compress(scratch, bound, data.data, data.size, 9);
  kiln_status_t status = kiln_ok_status();
  if (ZSTD_isError(written)) {
    status = kiln_make_status(KILN_STATUS_INTERNAL, "rodata '%.*s': zstd failed: %s",
                              KILN_SV_ARG(rodata->name), ZSTD_getErrorName(written));
  } else if (compression == KILN_MODULE_WRITER_COMPRESSION_ZSTD ||
             written <= limit) {
    void* kept = NULL;
    status = kiln_arena_allocate(&writer->arena, written ? written : 1, &kept);
    if (!status) {
      memcpy(kept, scratch, written);
      rodata->stored = kiln_make_const_byte_span(kept, written);
      rodata->flags = KILN_FORMAT_RODATA_ZSTD;
      *out_kept = true;
    }
  }
  kiln_allocator_free(writer->allocator, scratch);
  return status;
}

static kiln_status_t kiln_mw_add_rodata(kiln_module_writer_t* writer, kiln_string_view_t name,
                                        kiln_const_byte_span_t data, uint32_t alignment,
                                        kiln_module_writer_compression_t compression,
                                        bool copy, uint32_t* out_ordinal) {
  if (!kiln_is_power_of_two(alignment) ||
      alignment > KILN_FORMAT_RODATA_MAX_ALIGNMENT) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "rodata '%.*s': alignment %u must be a power of "
                            "two up to %u",
                            KILN_SV_ARG(name), alignment,
                            KILN_FORMAT_RODATA_MAX_ALIGNMENT);
  }
  kiln_mw_rodata_t* rodata = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_mw_push(writer, &writer->rodata, sizeof(*rodata), (void**)&rodata));
  memset(rodata, 0, sizeof(*rodata));
  *out_ordinal = writer->rodata.count - 1;
  rodata->alignment = alignment;
  rodata->size = data.size;
  KILN_RETURN_IF_ERROR(kiln_mw_copy(writer, name, &rodata->name));
  bool try_zstd = compression == KILN_MODULE_WRITER_COMPRESSION_ZSTD ||
                  (compression == KILN_MODULE_WRITER_COMPRESSION_AUTO &&
                   data.size >= 256);
  if (try_zstd && compression == KILN_MODULE_WRITER_COMPRESSION_AUTO) {
    KILN_RETURN_IF_ERROR(kiln_mw_sample_compressible(writer, &data, 1, data.size, &try_zstd));
  }
  if (try_zstd) {
    bool kept = false;
    KILN_RETURN_IF_ERROR(kiln_mw_try_zstd(writer, rodata, data, compression, &kept));
    if (kept) return kiln_ok_status();
  }
  if (!copy) {
    rodata->stored = data;
    return kiln_ok_status();
  }
  void* stored = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate(&writer->arena, data.size, &stored));
  if (data.size) memcpy(stored, data.data, data.size);
  rodata->stored = kiln_make_const_byte_span(stored, data.size);
  return kiln_ok_status();
}

kiln_status_t kiln_module_writer_add_rodata(
    kiln_module_writer_t* writer, kiln_string_view_t name,
    kiln_const_byte_span_t data, uint32_t alignment,
    kiln_module_writer_compression_t compression, uint32_t* out_ordinal) {
  return kiln_mw_add_rodata(writer, name, data, alignment, compression, true, out_ordinal);
}

kiln_status_t kiln_module_writer_add_rodata_reference(
    kiln_module_writer_t* writer, kiln_string_view_t name,
    kiln_const_byte_span_t data, uint32_t alignment,
    kiln_module_writer_compression_t compression, uint32_t* out_ordinal) {
  return kiln_mw_add_rodata(writer, name, data, alignment, compression, false, out_ordinal);
}

kiln_status_t kiln_module_writer_add_rodata_pieces(
    kiln_module_writer_t* writer, kiln_string_view_t name,
    const kiln_const_byte_span_t* pieces, size_t piece_count, uint32_t alignment,
    kiln_module_writer_compression_t compression, uint32_t* out_ordinal) {
  size_t total = 0;
  for (size_t i = 0; i < piece_count; ++i) {
    if (!kiln_size_add(total, pieces[i].size, &total)) {
      return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                              "rodata '%.*s': size overflows", KILN_SV_ARG(name));
    }
  }
  // The same decisions as for one span: sample, then a level-1 count.
  bool try_zstd = compression == KILN_MODULE_WRITER_COMPRESSION_ZSTD ||
                  (compression == KILN_MODULE_WRITER_COMPRESSION_AUTO && total >= 256);
  if (try_zstd && compression == KILN_MODULE_WRITER_COMPRESSION_AUTO &&
      total >= KILN_MW_SAMPLE_MIN_BYTES) {
    KILN_RETURN_IF_ERROR(
        kiln_mw_sample_compressible(writer, pieces, piece_count, total, &try_zstd));
    size_t written = 0;
    if (try_zstd) {
      KILN_RETURN_IF_ERROR(kiln_mw_zstd_size(writer, pieces, piece_count, total, 1, &written));
      try_zstd = written <= total - total / 8;
    }
  }
  if (try_zstd) {
    // Compressing wants one block: gather a temporary one and take the
    // one-span path (it keeps its own copy).
    uint8_t* joined = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(writer->allocator, total ? total : 1,
                                               (void**)&joined));
    kiln_mw_gather(pieces, piece_count, 0, total, joined);
    kiln_status_t status = kiln_mw_add_rodata(
        writer, name, kiln_make_const_byte_span(joined, total), alignment,
        try_zstd ? compression : KILN_MODULE_WRITER_COMPRESSION_NONE, true, out_ordinal);
    kiln_allocator_free(writer->allocator, joined);
    return status;
  }
  KILN_RETURN_IF_ERROR(kiln_mw_add_rodata(writer, name, kiln_make_const_byte_span(NULL, total),
                                          alignment, KILN_MODULE_WRITER_COMPRESSION_NONE,
                                          false, out_ordinal));
  kiln_mw_rodata_t* rodata = (kiln_mw_rodata_t*)writer->rodata.data + *out_ordinal;
  kiln_const_byte_span_t* kept = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(&writer->arena, piece_count, sizeof(*kept),
                                                 (void**)&kept));
  memcpy(kept, pieces, piece_count * sizeof(*kept));
  rodata->pieces = kept;
  rodata->piece_count = (uint32_t)piece_count;
  writer->piece_count += piece_count;
  return kiln_ok_status();
}

static kiln_status_t kiln_mw_put_string(kiln_byte_buffer_t* out,
                                        kiln_string_view_t text) {
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, (uint32_t)text.size));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append(out, text.data, text.size));
  return kiln_byte_buffer_align(out, 4);
}

static uint64_t kiln_mw_hash(const uint8_t* data, size_t size) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ull;
  return hash;
}

// Writes a variant's SPIR-V: the words, or a reference to an identical blob
// an earlier variant stored (kernels repeat across targets and executables).
static kiln_status_t kiln_mw_put_spirv(kiln_module_writer_t* writer,
                                       const kiln_format_variant_t* variant) {
  kiln_byte_buffer_t* out = &writer->executables;
  size_t size = (size_t)variant->spirv_word_count * 4;
  if (variant->spirv_word_count >= KILN_FORMAT_SPIRV_SHARED) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "SPIR-V of %u words is too large",
                            variant->spirv_word_count);
  }
  uint64_t hash = kiln_mw_hash(variant->spirv, size);
  const kiln_mw_blob_t* blobs = (const kiln_mw_blob_t*)writer->blobs.data;
  for (uint32_t i = 0; i < writer->blobs.count && size; ++i) {
    if (blobs[i].hash == hash && blobs[i].word_count == variant->spirv_word_count &&
        memcmp(out->data + blobs[i].offset, variant->spirv, size) == 0) {
      writer->shares_spirv = true;
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, KILN_FORMAT_SPIRV_SHARED));
      return kiln_byte_buffer_append_u32(out, blobs[i].variant);
    }
  }
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, variant->spirv_word_count));
  kiln_mw_blob_t* blob = NULL;
  KILN_RETURN_IF_ERROR(kiln_mw_push(writer, &writer->blobs, sizeof(*blob), (void**)&blob));
  *blob = (kiln_mw_blob_t){hash, out->size, variant->spirv_word_count, writer->variant_count};
  return kiln_byte_buffer_append(out, variant->spirv, size);
}

kiln_status_t kiln_module_writer_add_executable(
    kiln_module_writer_t* writer, const kiln_format_executable_t* executable) {
  kiln_byte_buffer_t* out = &writer->executables;
  KILN_RETURN_IF_ERROR(kiln_mw_put_string(out, executable->name));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, executable->variant_count));
  for (uint32_t v = 0; v < executable->variant_count; ++v) {
    const kiln_format_variant_t* variant = &executable->variants[v];
    if (variant->required_features & ~KILN_FORMAT_FEATURE_ALL) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%.*s' variant %u: unknown feature "
                              "bits 0x%x",
                              KILN_SV_ARG(executable->name), v,
                              variant->required_features);
    }
    KILN_RETURN_IF_ERROR(kiln_mw_put_string(out, variant->target));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, variant->required_features));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, variant->min_subgroup_size));
    KILN_RETURN_IF_ERROR(
        kiln_byte_buffer_append_u32(out, variant->min_shared_memory_bytes));
    KILN_RETURN_IF_ERROR(
        kiln_byte_buffer_append_u32(out, variant->min_workgroup_invocations));
    KILN_RETURN_IF_ERROR(kiln_mw_put_spirv(writer, variant));
    writer->variant_count++;
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, variant->entry_point_count));
    for (uint32_t p = 0; p < variant->entry_point_count; ++p) {
      const kiln_format_entry_point_t* entry = &variant->entry_points[p];
      KILN_RETURN_IF_ERROR(kiln_mw_put_string(out, entry->name));
      for (int i = 0; i < 3; ++i) {
        KILN_RETURN_IF_ERROR(
            kiln_byte_buffer_append_u32(out, entry->workgroup_size[i]));
      }
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, entry->push_constant_bytes));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, entry->binding_count));
      for (uint32_t b = 0; b < entry->binding_count; ++b) {
        KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, entry->bindings[b].set));
        KILN_RETURN_IF_ERROR(
            kiln_byte_buffer_append_u32(out, entry->bindings[b].binding));
        KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, entry->bindings[b].flags));
      }
      KILN_RETURN_IF_ERROR(
          kiln_byte_buffer_append_u32(out, entry->specialization_count));
      for (uint32_t s = 0; s < entry->specialization_count; ++s) {
        KILN_RETURN_IF_ERROR(
            kiln_byte_buffer_append_u32(out, entry->specializations[s].id));
        KILN_RETURN_IF_ERROR(
            kiln_byte_buffer_append_u32(out, entry->specializations[s].value));
      }
    }
  }
  writer->executable_count++;
  return kiln_ok_status();
}

kiln_status_t kiln_module_writer_add_location(kiln_module_writer_t* writer,
                                              uint32_t function,
                                              uint32_t bytecode_offset,
                                              kiln_string_view_t file,
                                              uint32_t line) {
  kiln_mw_location_t* location = NULL;
  KILN_RETURN_IF_ERROR(kiln_mw_push(writer, &writer->locations,
                                    sizeof(*location), (void**)&location));
  location->function = function;
  location->bytecode_offset = bytecode_offset;
  location->line = line;
  return kiln_mw_copy(writer, file, &location->file);
}

// ---- finish ----

// A rodata payload left out of `out` when streaming: it belongs at buffer
// position `at` (before the byte there).
typedef struct kiln_mw_hole_t {
  size_t at;
  kiln_const_byte_span_t bytes;
} kiln_mw_hole_t;

typedef struct kiln_mw_layout_t {
  kiln_byte_buffer_t* out;
  size_t base;  // where this module starts in `out`
  size_t table;  // offset of the section table
  uint32_t section_count;
  kiln_mw_hole_t* holes;  // non-NULL: streaming, payloads stay where they are
  uint32_t hole_count;
  uint64_t hole_bytes;  // module bytes not in `out`
} kiln_mw_layout_t;

// The module position of the next byte (payloads left out included).
static uint64_t kiln_mw_position(const kiln_mw_layout_t* layout) {
  return (uint64_t)layout->out->size + layout->hole_bytes;
}

static kiln_status_t kiln_mw_align(kiln_mw_layout_t* layout, uint64_t alignment) {
  uint64_t relative = kiln_mw_position(layout) - layout->base;
  uint64_t padding = (alignment - relative % alignment) % alignment;
  return kiln_byte_buffer_append_zeros(layout->out, (size_t)padding);
}

static kiln_status_t kiln_mw_begin_section(kiln_mw_layout_t* layout,
                                           uint32_t id, uint64_t* out_start) {
  KILN_RETURN_IF_ERROR(kiln_mw_align(layout, 8));
  *out_start = kiln_mw_position(layout);
  size_t entry = layout->table + (size_t)layout->section_count * 24;
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_patch_u32(layout->out, entry, id));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_patch_u64(layout->out, entry + 8,
                                                  *out_start - layout->base));
  return kiln_ok_status();
}

static kiln_status_t kiln_mw_end_section(kiln_mw_layout_t* layout,
                                         uint64_t start) {
  size_t entry = layout->table + (size_t)layout->section_count * 24;
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_patch_u64(layout->out, entry + 16,
                                                  kiln_mw_position(layout) - start));
  layout->section_count++;
  return kiln_ok_status();
}

// A rodata payload: copied into `out`, or left as a hole when streaming.
static kiln_status_t kiln_mw_payload(kiln_mw_layout_t* layout, kiln_const_byte_span_t bytes) {
  if (!layout->holes) return kiln_byte_buffer_append(layout->out, bytes.data, bytes.size);
  layout->holes[layout->hole_count].at = layout->out->size;
  layout->holes[layout->hole_count].bytes = bytes;
  layout->hole_count++;
  layout->hole_bytes += bytes.size;
  return kiln_ok_status();
}

static kiln_status_t kiln_mw_string_ordinal(kiln_module_writer_t* writer,
                                            kiln_string_view_t text,
                                            uint32_t* out) {
  return kiln_mw_intern(writer, &writer->strings, text, out);
}

static kiln_status_t kiln_mw_signature_ordinal(kiln_module_writer_t* writer,
                                               kiln_string_view_t text,
                                               uint32_t* out) {
  return kiln_mw_intern(writer, &writer->signatures, text, out);
}

// With `holes`, rodata payloads are not copied into `out` but recorded
// there (*out_hole_count of them).
static kiln_status_t kiln_mw_finish(kiln_module_writer_t* writer, kiln_byte_buffer_t* out,
                                    kiln_mw_hole_t* holes, uint32_t* out_hole_count) {
  kiln_mw_import_t* imports = (kiln_mw_import_t*)writer->imports.data;
  kiln_mw_function_t* functions = (kiln_mw_function_t*)writer->functions.data;
  kiln_mw_export_t* exports = (kiln_mw_export_t*)writer->exports.data;
  kiln_mw_rodata_t* rodata = (kiln_mw_rodata_t*)writer->rodata.data;
  kiln_mw_location_t* locations = (kiln_mw_location_t*)writer->locations.data;
  for (uint32_t i = 0; i < writer->functions.count; ++i) {
    if (!functions[i].defined) {
      return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                              "function '%.*s' (ordinal %u) was declared but "
                              "never defined",
                              KILN_SV_ARG(functions[i].name), i);
    }
  }
  // Intern in a fixed order: signatures, then names.
  uint32_t unused;
  for (uint32_t i = 0; i < writer->imports.count; ++i) {
    KILN_RETURN_IF_ERROR(
        kiln_mw_signature_ordinal(writer, imports[i].signature, &unused));
  }
  for (uint32_t i = 0; i < writer->functions.count; ++i) {
    KILN_RETURN_IF_ERROR(
        kiln_mw_signature_ordinal(writer, functions[i].signature, &unused));
  }
  uint32_t name_string = KILN_FORMAT_NO_STRING;
  if (writer->name.size) {
    KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, writer->name, &name_string));
  }
  kiln_string_view_t* signature_texts = (kiln_string_view_t*)writer->signatures.data;
  uint32_t* signature_strings = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      &writer->arena, writer->signatures.count + 1u, sizeof(uint32_t),
      (void**)&signature_strings));
  for (uint32_t i = 0; i < writer->signatures.count; ++i) {
    KILN_RETURN_IF_ERROR(
        kiln_mw_string_ordinal(writer, signature_texts[i], &signature_strings[i]));
  }
  bool has_debug = writer->locations.count > 0;
  for (uint32_t i = 0; i < writer->functions.count; ++i) {
    if (functions[i].name.size) has_debug = true;
  }
  // Every remaining string gets its ordinal now, before any section is
  // written, so the strings section can come first.
  for (uint32_t i = 0; i < writer->imports.count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, imports[i].name, &unused));
  }
  for (uint32_t i = 0; i < writer->exports.count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, exports[i].name, &unused));
  }
  if (has_debug) {
    for (uint32_t i = 0; i < writer->functions.count; ++i) {
      if (functions[i].name.size) {
        KILN_RETURN_IF_ERROR(
            kiln_mw_string_ordinal(writer, functions[i].name, &unused));
      }
    }
  }
  for (uint32_t i = 0; i < writer->rodata.count; ++i) {
    if (rodata[i].name.size) {
      KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, rodata[i].name, &unused));
    }
  }
  for (uint32_t i = 0; i < writer->locations.count; ++i) {
    KILN_RETURN_IF_ERROR(
        kiln_mw_string_ordinal(writer, locations[i].file, &unused));
  }

  uint32_t section_count = 6 + (writer->global_words || writer->global_refs) +
                           (writer->rodata.count > 0) +
                           (writer->executable_count > 0) + has_debug;
  kiln_mw_layout_t layout = {out, out->size, 0, 0, holes, 0, 0};
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, KILN_FORMAT_MAGIC));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(
      out, writer->shares_spirv ? KILN_FORMAT_VERSION_SHARED_SPIRV : KILN_FORMAT_VERSION_BASE));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, 0));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, name_string));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, section_count));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, 0));
  layout.table = out->size;
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_zeros(out, (size_t)section_count * 24));
  uint64_t start;

  kiln_string_view_t* strings = (kiln_string_view_t*)writer->strings.data;
  KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_STRINGS, &start));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->strings.count));
  for (uint32_t i = 0; i < writer->strings.count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, (uint32_t)strings[i].size));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append(out, strings[i].data, strings[i].size));
  }
  KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));

  KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_SIGNATURES, &start));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->signatures.count));
  for (uint32_t i = 0; i < writer->signatures.count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, signature_strings[i]));
  }
  KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));

  KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_IMPORTS, &start));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->imports.count));
  for (uint32_t i = 0; i < writer->imports.count; ++i) {
    uint32_t name, signature;
    KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, imports[i].name, &name));
    KILN_RETURN_IF_ERROR(kiln_mw_signature_ordinal(writer, imports[i].signature, &signature));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, name));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, signature));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, imports[i].flags));
  }
  KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));

  KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_EXPORTS, &start));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->exports.count));
  for (uint32_t i = 0; i < writer->exports.count; ++i) {
    uint32_t name;
    KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, exports[i].name, &name));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, name));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, exports[i].function));
  }
  KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));

  KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_FUNCTIONS, &start));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->functions.count));
  uint64_t bytecode_offset = 0;
  for (uint32_t i = 0; i < writer->functions.count; ++i) {
    uint32_t signature;
    KILN_RETURN_IF_ERROR(kiln_mw_signature_ordinal(writer, functions[i].signature, &signature));
    if (bytecode_offset + functions[i].bytecode.size > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "bytecode exceeds 4 GiB at function %u", i);
    }
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, signature));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, (uint32_t)bytecode_offset));
    KILN_RETURN_IF_ERROR(
        kiln_byte_buffer_append_u32(out, (uint32_t)functions[i].bytecode.size));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u16(out, functions[i].i32_register_count));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u16(out, functions[i].ref_register_count));
    bytecode_offset += functions[i].bytecode.size;
  }
  KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));

  KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_BYTECODE, &start));
  for (uint32_t i = 0; i < writer->functions.count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append(out, functions[i].bytecode.data,
                                                 functions[i].bytecode.size));
  }
  KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));

  if (writer->global_words || writer->global_refs) {
    KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_GLOBALS, &start));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->global_words));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->global_refs));
    KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));
  }

  if (writer->rodata.count) {
    KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_RODATA, &start));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->rodata.count));
    size_t table = out->size;
    for (uint32_t i = 0; i < writer->rodata.count; ++i) {
      uint32_t name = KILN_FORMAT_NO_STRING;
      if (rodata[i].name.size) {
        KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, rodata[i].name, &name));
      }
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, name));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, rodata[i].alignment));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, rodata[i].flags));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, 0));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_zeros(out, 8));  // offset
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u64(out, rodata[i].stored.size));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u64(out, rodata[i].size));
    }
    for (uint32_t i = 0; i < writer->rodata.count; ++i) {
      // Alignment counts from the module's first byte.
      KILN_RETURN_IF_ERROR(kiln_mw_align(&layout, rodata[i].alignment));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_patch_u64(out, table + (size_t)i * 40 + 16,
                                                      kiln_mw_position(&layout) - layout.base));
      if (!rodata[i].pieces) {
        KILN_RETURN_IF_ERROR(kiln_mw_payload(&layout, rodata[i].stored));
      }
      for (uint32_t p = 0; p < rodata[i].piece_count; ++p) {
        KILN_RETURN_IF_ERROR(kiln_mw_payload(&layout, rodata[i].pieces[p]));
      }
    }
    KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));
  }

  if (writer->executable_count) {
    KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_EXECUTABLES, &start));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->executable_count));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append(out, writer->executables.data,
                                                 writer->executables.size));
    KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));
  }

  if (has_debug) {
    KILN_RETURN_IF_ERROR(kiln_mw_begin_section(&layout, KILN_FORMAT_SECTION_DEBUG, &start));
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->functions.count));
    for (uint32_t i = 0; i < writer->functions.count; ++i) {
      uint32_t name = KILN_FORMAT_NO_STRING;
      if (functions[i].name.size) {
        KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, functions[i].name, &name));
      }
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, name));
    }
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, writer->locations.count));
    for (uint32_t i = 0; i < writer->locations.count; ++i) {
      uint32_t file;
      KILN_RETURN_IF_ERROR(kiln_mw_string_ordinal(writer, locations[i].file, &file));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, locations[i].function));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, locations[i].bytecode_offset));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, file));
      KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(out, locations[i].line));
    }
    KILN_RETURN_IF_ERROR(kiln_mw_end_section(&layout, start));
  }
  *out_hole_count = layout.hole_count;
  if (layout.section_count != section_count) {
    return kiln_make_status(KILN_STATUS_INTERNAL,
                            "module writer: wrote %u sections, planned %u",
                            layout.section_count, section_count);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_module_writer_finish(kiln_module_writer_t* writer,
                                        kiln_byte_buffer_t* out) {
  size_t start = out->size;
  if (start % 8 != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "module writer: output must start 8-byte aligned "
                            "(it holds %zu bytes)",
                            start);
  }
  uint32_t hole_count = 0;
  kiln_status_t status = kiln_mw_finish(writer, out, NULL, &hole_count);
  if (status) out->size = start;
  return status;
}

kiln_status_t kiln_module_writer_finish_streamed(kiln_module_writer_t* writer,
                                                 kiln_module_writer_sink_fn_t sink,
                                                 void* user, uint64_t* out_size) {
  *out_size = 0;
  kiln_mw_hole_t* holes = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      &writer->arena, (size_t)writer->rodata.count + writer->piece_count + 1u, sizeof(*holes),
      (void**)&holes));
  // Everything but the rodata payloads (tables, bytecode, executables).
  kiln_byte_buffer_t metadata;
  kiln_byte_buffer_init(&metadata, writer->allocator);
  uint32_t hole_count = 0;
  kiln_status_t status = kiln_mw_finish(writer, &metadata, holes, &hole_count);
  size_t done = 0;
  uint64_t total = 0;
  // Metadata up to each hole, the hole's payload; then the metadata's tail.
  for (uint32_t i = 0; i <= hole_count && !status; ++i) {
    size_t until = i < hole_count ? holes[i].at : metadata.size;
    if (until > done) {
      status = sink(user, kiln_make_const_byte_span(metadata.data + done, until - done));
    }
    total += until - done;
    done = until;
    if (i < hole_count && !status && holes[i].bytes.size) status = sink(user, holes[i].bytes);
    if (i < hole_count) total += holes[i].bytes.size;
  }
  kiln_byte_buffer_deinit(&metadata);
  if (!status) *out_size = total;
  return status;
}
