// Executables built variant by variant, entry by entry: the state the
// assembler's `executable` block and the ONNX emitter's kernels both fill.
// Everything lives in an arena that is reset per executable.
#include <string.h>

#include "kiln/base/arena.h"
#include "kiln/compiler/module_builder.h"
#include "kiln/format/executables.h"

// A growable array of fixed-size records in the arena.
typedef struct kiln_eb_vec_t {
  void* data;
  uint32_t count, capacity;
} kiln_eb_vec_t;

struct kiln_executable_builder_t {
  kiln_allocator_t allocator;
  kiln_arena_t arena;
  kiln_string_view_t name;
  bool active;
  kiln_eb_vec_t variants;  // kiln_format_variant_t
  kiln_eb_vec_t words;     // current variant: SPIR-V bytes (4 per "record")
  kiln_eb_vec_t entries;   // current variant: kiln_format_entry_point_t
  kiln_eb_vec_t bindings;  // current entry: kiln_format_binding_t
  kiln_eb_vec_t specs;     // current entry: kiln_format_specialization_t
};

static kiln_status_t kiln_eb_push(kiln_executable_builder_t* b, kiln_eb_vec_t* vec,
                                  size_t size, uint32_t count, void** out) {
  if (vec->count + (uint64_t)count > vec->capacity) {
    uint64_t capacity = vec->capacity ? vec->capacity : 16;
    while (capacity < vec->count + (uint64_t)count) capacity *= 2;
    if (capacity > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "executable '%.*s' is too large",
                              KILN_SV_ARG(b->name));
    }
    void* grown = NULL;
    KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(&b->arena, capacity, size, &grown));
    if (vec->count) memcpy(grown, vec->data, (size_t)vec->count * size);
    vec->data = grown;
    vec->capacity = (uint32_t)capacity;
  }
  *out = (uint8_t*)vec->data + (size_t)vec->count * size;
  memset(*out, 0, (size_t)count * size);
  vec->count += count;
  return kiln_ok_status();
}

static kiln_status_t kiln_eb_copy(kiln_executable_builder_t* b, kiln_string_view_t text,
                                  kiln_string_view_t* out) {
  char* copy = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_strndup(&b->arena, text.data, text.size, &copy));
  *out = kiln_make_string_view(copy, text.size);
  return kiln_ok_status();
}

kiln_status_t kiln_executable_builder_create(kiln_allocator_t allocator,
                                             kiln_executable_builder_t** out_builder) {
  *out_builder = NULL;
  kiln_executable_builder_t* b = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(allocator, sizeof(*b), (void**)&b));
  b->allocator = allocator;
  kiln_arena_init(&b->arena, allocator, 64 * 1024);
  *out_builder = b;
  return kiln_ok_status();
}

void kiln_executable_builder_destroy(kiln_executable_builder_t* b) {
  if (!b) return;
  kiln_arena_deinit(&b->arena);
  kiln_allocator_free(b->allocator, b);
}

kiln_status_t kiln_executable_builder_begin(kiln_executable_builder_t* b,
                                            kiln_string_view_t name) {
  kiln_arena_reset(&b->arena);
  memset(&b->variants, 0, sizeof(b->variants));
  memset(&b->words, 0, sizeof(b->words));
  memset(&b->entries, 0, sizeof(b->entries));
  memset(&b->bindings, 0, sizeof(b->bindings));
  memset(&b->specs, 0, sizeof(b->specs));
  b->active = true;
  return kiln_eb_copy(b, name, &b->name);
}

static void kiln_eb_close_entry(kiln_executable_builder_t* b) {
  if (b->entries.count == 0) return;
  kiln_format_entry_point_t* entry =
      &((kiln_format_entry_point_t*)b->entries.data)[b->entries.count - 1];
  entry->bindings = (const kiln_format_binding_t*)b->bindings.data;
  entry->binding_count = b->bindings.count;
  entry->specializations = (const kiln_format_specialization_t*)b->specs.data;
  entry->specialization_count = b->specs.count;
  memset(&b->bindings, 0, sizeof(b->bindings));
  memset(&b->specs, 0, sizeof(b->specs));
}

static void kiln_eb_close_variant(kiln_executable_builder_t* b) {
  kiln_eb_close_entry(b);
  if (b->variants.count == 0) return;
  kiln_format_variant_t* variant =
      &((kiln_format_variant_t*)b->variants.data)[b->variants.count - 1];
  variant->spirv = (const uint8_t*)b->words.data;
  variant->spirv_word_count = b->words.count;
  variant->entry_points = (const kiln_format_entry_point_t*)b->entries.data;
  variant->entry_point_count = b->entries.count;
  memset(&b->words, 0, sizeof(b->words));
  memset(&b->entries, 0, sizeof(b->entries));
}

static kiln_status_t kiln_eb_check(const kiln_executable_builder_t* b, bool need_variant,
                                   bool need_entry, const char* what) {
  if (!b->active) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION, "%s outside an executable", what);
  }
  if (need_variant && b->variants.count == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "'%s' before any 'variant' in executable", what);
  }
  if (need_entry && b->entries.count == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "'%s' before any 'entry' in variant", what);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_executable_builder_add_variant(
    kiln_executable_builder_t* b, const kiln_executable_variant_desc_t* desc) {
  KILN_RETURN_IF_ERROR(kiln_eb_check(b, false, false, "variant"));
  if (desc->required_features & ~KILN_FORMAT_FEATURE_ALL) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executable '%.*s' variant %u: unknown feature bits 0x%x",
                            KILN_SV_ARG(b->name), b->variants.count,
                            desc->required_features);
  }
  kiln_eb_close_variant(b);
  kiln_format_variant_t* variant = NULL;
  KILN_RETURN_IF_ERROR(kiln_eb_push(b, &b->variants, sizeof(*variant), 1, (void**)&variant));
  variant->required_features = desc->required_features;
  variant->min_subgroup_size = desc->min_subgroup_size;
  variant->min_shared_memory_bytes = desc->min_shared_memory_bytes;
  variant->min_workgroup_invocations = desc->min_workgroup_invocations;
  return kiln_eb_copy(b, desc->target, &variant->target);
}

kiln_status_t kiln_executable_builder_append_spirv(kiln_executable_builder_t* b,
                                                   kiln_const_byte_span_t bytes) {
  KILN_RETURN_IF_ERROR(kiln_eb_check(b, true, false, "spirv"));
  if (bytes.size % 4 != 0 || bytes.size / 4 > UINT32_MAX) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executable '%.*s': SPIR-V of %zu bytes is not whole words",
                            KILN_SV_ARG(b->name), bytes.size);
  }
  uint8_t* slot = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_eb_push(b, &b->words, 4, (uint32_t)(bytes.size / 4), (void**)&slot));
  if (bytes.size) memcpy(slot, bytes.data, bytes.size);
  return kiln_ok_status();
}

kiln_status_t kiln_executable_builder_add_entry(kiln_executable_builder_t* b,
                                                kiln_string_view_t name,
                                                const uint32_t workgroup_size[3],
                                                uint32_t push_constant_bytes) {
  KILN_RETURN_IF_ERROR(kiln_eb_check(b, true, false, "entry"));
  kiln_eb_close_entry(b);
  kiln_format_entry_point_t* entry = NULL;
  KILN_RETURN_IF_ERROR(kiln_eb_push(b, &b->entries, sizeof(*entry), 1, (void**)&entry));
  memcpy(entry->workgroup_size, workgroup_size, sizeof(entry->workgroup_size));
  entry->push_constant_bytes = push_constant_bytes;
  return kiln_eb_copy(b, name, &entry->name);
}

kiln_status_t kiln_executable_builder_add_binding(kiln_executable_builder_t* b, uint32_t set,
                                                  uint32_t binding, uint32_t flags) {
  KILN_RETURN_IF_ERROR(kiln_eb_check(b, true, true, "binding"));
  if (flags & ~KILN_FORMAT_BINDING_ALL) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "binding: unknown flags 0x%x", flags);
  }
  if ((flags & KILN_FORMAT_BINDING_TEXEL_VEC4F32) && !(flags & KILN_FORMAT_BINDING_READ_ONLY)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "binding: 'texel' needs 'readonly'");
  }
  kiln_format_binding_t* slot = NULL;
  KILN_RETURN_IF_ERROR(kiln_eb_push(b, &b->bindings, sizeof(*slot), 1, (void**)&slot));
  slot->set = set;
  slot->binding = binding;
  slot->flags = flags;
  return kiln_ok_status();
}

kiln_status_t kiln_executable_builder_add_spec(kiln_executable_builder_t* b, uint32_t id,
                                               uint32_t value) {
  KILN_RETURN_IF_ERROR(kiln_eb_check(b, true, true, "spec"));
  kiln_format_specialization_t* spec = NULL;
  KILN_RETURN_IF_ERROR(kiln_eb_push(b, &b->specs, sizeof(*spec), 1, (void**)&spec));
  spec->id = id;
  spec->value = value;
  return kiln_ok_status();
}

kiln_status_t kiln_executable_builder_finish(kiln_executable_builder_t* b,
                                             kiln_module_writer_t* writer) {
  KILN_RETURN_IF_ERROR(kiln_eb_check(b, false, false, "end"));
  kiln_eb_close_variant(b);
  b->active = false;
  kiln_format_executable_t executable;
  executable.name = b->name;
  executable.variants = (const kiln_format_variant_t*)b->variants.data;
  executable.variant_count = b->variants.count;
  return kiln_module_writer_add_executable(writer, &executable);
}
