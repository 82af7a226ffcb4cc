// Reads the executables section (layout in docs/module-format.md). Two
// passes: the first counts every table so one block can hold them all, the
// second fills it. Both walk the same bounded reader, so the second cannot
// read anything the first did not check.
#include "kiln/format/executables.h"

#include <string.h>

#include "kiln/base/reader.h"
#include "kiln/base/size_math.h"

typedef struct kiln_executables_counts_t {
  size_t executables, variants, entry_points, bindings, specializations;
} kiln_executables_counts_t;

typedef struct kiln_executables_fill_t {
  kiln_format_executable_t* executables;
  kiln_format_variant_t* variants;
  kiln_format_entry_point_t* entry_points;
  kiln_format_binding_t* bindings;
  kiln_format_specialization_t* specializations;
} kiln_executables_fill_t;

static kiln_status_t kiln_exe_read_string(kiln_reader_t* reader,
                                          kiln_string_view_t* out) {
  uint32_t length = 0;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &length));
  kiln_const_byte_span_t span;
  KILN_RETURN_IF_ERROR(kiln_reader_read_span(reader, length, &span));
  KILN_RETURN_IF_ERROR(kiln_reader_align(reader, 4));
  *out = kiln_make_string_view((const char*)span.data, span.size);
  return kiln_ok_status();
}

// Reads a count whose entries take at least `min_entry_bytes` each, so a
// forged count cannot ask for more table memory than the section could
// describe.
static kiln_status_t kiln_exe_read_count(kiln_reader_t* reader,
                                         size_t min_entry_bytes,
                                         const char* what, uint32_t* out) {
  size_t at = reader->base_offset + reader->offset;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, out));
  size_t needed;
  if (!kiln_size_mul(*out, min_entry_bytes, &needed) ||
      needed > kiln_reader_remaining(reader)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "executables section: %s count %u at offset %zu "
                            "exceeds the %zu bytes that remain",
                            what, *out, at, kiln_reader_remaining(reader));
  }
  return kiln_ok_status();
}

// Binding flags: only known bits, and a texel binding must be read-only
// (uniform texel buffers cannot be written).
static kiln_status_t kiln_exe_check_binding_flags(const kiln_reader_t* reader,
                                                  uint32_t flags) {
  size_t at = reader->base_offset + reader->offset - 4;
  if (flags & ~KILN_FORMAT_BINDING_ALL) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executables section: binding flags 0x%x at offset "
                            "%zu have unknown bits 0x%x",
                            flags, at, flags & ~KILN_FORMAT_BINDING_ALL);
  }
  if ((flags & KILN_FORMAT_BINDING_TEXEL_VEC4F32) &&
      !(flags & KILN_FORMAT_BINDING_READ_ONLY)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executables section: binding flags 0x%x at offset "
                            "%zu: a texel binding must be read-only",
                            flags, at);
  }
  return kiln_ok_status();
}

// A variant's SPIR-V: its own words, or (KILN_FORMAT_SPIRV_SHARED) those of
// an earlier variant, which the fill pass has already resolved. Sharing
// allocates nothing, so a forged index cannot amplify memory.
static kiln_status_t kiln_exe_read_spirv(kiln_reader_t* reader,
                                         const kiln_executables_counts_t* counts,
                                         const kiln_executables_fill_t* fill,
                                         kiln_format_variant_t* variant) {
  size_t at = reader->base_offset + reader->offset;
  uint32_t word_count = 0;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &word_count));
  if (word_count == KILN_FORMAT_SPIRV_SHARED) {
    uint32_t index = 0;
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &index));
    // counts->variants already includes this variant.
    if (index >= counts->variants - 1) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executables section: variant %zu at offset %zu shares the "
                              "SPIR-V of variant %u, which is not an earlier variant",
                              counts->variants - 1, at, index);
    }
    if (fill) {
      variant->spirv = fill->variants[index].spirv;
      variant->spirv_word_count = fill->variants[index].spirv_word_count;
    }
    return kiln_ok_status();
  }
  if ((uint64_t)word_count * 4u > kiln_reader_remaining(reader)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "executables section: SPIR-V word count %u at offset %zu "
                            "exceeds the %zu bytes that remain",
                            word_count, at, kiln_reader_remaining(reader));
  }
  kiln_const_byte_span_t words;
  KILN_RETURN_IF_ERROR(kiln_reader_read_span(reader, (size_t)word_count * 4u, &words));
  variant->spirv = words.data;
  variant->spirv_word_count = word_count;
  return kiln_ok_status();
}

// Walks the section; with fill == NULL only counts.
static kiln_status_t kiln_exe_walk(kiln_reader_t* reader,
                                   kiln_executables_counts_t* counts,
                                   kiln_executables_fill_t* fill) {
  uint32_t executable_count = 0;
  KILN_RETURN_IF_ERROR(
      kiln_exe_read_count(reader, 8, "executable", &executable_count));
  for (uint32_t e = 0; e < executable_count; ++e) {
    kiln_format_executable_t* exe =
        fill ? &fill->executables[counts->executables] : NULL;
    counts->executables++;
    kiln_string_view_t name;
    KILN_RETURN_IF_ERROR(kiln_exe_read_string(reader, &name));
    uint32_t variant_count = 0;
    KILN_RETURN_IF_ERROR(
        kiln_exe_read_count(reader, 28, "variant", &variant_count));
    if (exe) {
      exe->name = name;
      exe->variants = &fill->variants[counts->variants];
      exe->variant_count = variant_count;
    }
    for (uint32_t v = 0; v < variant_count; ++v) {
      kiln_format_variant_t* variant =
          fill ? &fill->variants[counts->variants] : NULL;
      counts->variants++;
      kiln_format_variant_t tmp;
      memset(&tmp, 0, sizeof(tmp));
      KILN_RETURN_IF_ERROR(kiln_exe_read_string(reader, &tmp.target));
      size_t features_at = reader->base_offset + reader->offset;
      KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &tmp.required_features));
      if (tmp.required_features & ~KILN_FORMAT_FEATURE_ALL) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "executables section: unknown feature bits "
                                "0x%x at offset %zu",
                                tmp.required_features & ~KILN_FORMAT_FEATURE_ALL,
                                features_at);
      }
      KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &tmp.min_subgroup_size));
      KILN_RETURN_IF_ERROR(
          kiln_reader_read_u32(reader, &tmp.min_shared_memory_bytes));
      KILN_RETURN_IF_ERROR(
          kiln_reader_read_u32(reader, &tmp.min_workgroup_invocations));
      KILN_RETURN_IF_ERROR(kiln_exe_read_spirv(reader, counts, fill, &tmp));
      KILN_RETURN_IF_ERROR(kiln_exe_read_count(reader, 28, "entry point",
                                               &tmp.entry_point_count));
      if (variant) {
        *variant = tmp;
        variant->entry_points = &fill->entry_points[counts->entry_points];
      }
      for (uint32_t p = 0; p < tmp.entry_point_count; ++p) {
        kiln_format_entry_point_t* entry =
            fill ? &fill->entry_points[counts->entry_points] : NULL;
        counts->entry_points++;
        kiln_format_entry_point_t ep;
        memset(&ep, 0, sizeof(ep));
        KILN_RETURN_IF_ERROR(kiln_exe_read_string(reader, &ep.name));
        for (int i = 0; i < 3; ++i) {
          KILN_RETURN_IF_ERROR(
              kiln_reader_read_u32(reader, &ep.workgroup_size[i]));
        }
        KILN_RETURN_IF_ERROR(
            kiln_reader_read_u32(reader, &ep.push_constant_bytes));
        KILN_RETURN_IF_ERROR(
            kiln_exe_read_count(reader, 12, "binding", &ep.binding_count));
        if (entry) ep.bindings = &fill->bindings[counts->bindings];
        for (uint32_t b = 0; b < ep.binding_count; ++b) {
          kiln_format_binding_t binding;
          KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &binding.set));
          KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &binding.binding));
          KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &binding.flags));
          KILN_RETURN_IF_ERROR(kiln_exe_check_binding_flags(reader, binding.flags));
          if (fill) fill->bindings[counts->bindings] = binding;
          counts->bindings++;
        }
        KILN_RETURN_IF_ERROR(kiln_exe_read_count(
            reader, 8, "specialization constant", &ep.specialization_count));
        if (entry) {
          ep.specializations = &fill->specializations[counts->specializations];
        }
        for (uint32_t s = 0; s < ep.specialization_count; ++s) {
          kiln_format_specialization_t spec;
          KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &spec.id));
          KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &spec.value));
          if (fill) fill->specializations[counts->specializations] = spec;
          counts->specializations++;
        }
        if (entry) *entry = ep;
      }
    }
  }
  if (kiln_reader_remaining(reader) != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executables section: %zu unexpected trailing "
                            "bytes at offset %zu",
                            kiln_reader_remaining(reader),
                            reader->base_offset + reader->offset);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_format_executables_parse(kiln_const_byte_span_t section,
                                            size_t base_offset,
                                            kiln_allocator_t allocator,
                                            kiln_format_executables_t* out) {
  memset(out, 0, sizeof(*out));
  out->allocator = allocator;
  if (section.size == 0) return kiln_ok_status();
  kiln_reader_t reader;
  kiln_reader_init(&reader, section, base_offset, "executables section");
  kiln_executables_counts_t counts;
  memset(&counts, 0, sizeof(counts));
  KILN_RETURN_IF_ERROR(kiln_exe_walk(&reader, &counts, NULL));

  // Every table is bounded by the section size, so these sums cannot wrap.
  size_t sizes[5] = {
      counts.executables * sizeof(kiln_format_executable_t),
      counts.variants * sizeof(kiln_format_variant_t),
      counts.entry_points * sizeof(kiln_format_entry_point_t),
      counts.bindings * sizeof(kiln_format_binding_t),
      counts.specializations * sizeof(kiln_format_specialization_t)};
  size_t total = 0;
  for (int i = 0; i < 5; ++i) {
    size_t aligned;
    if (!kiln_size_align_up(sizes[i], 16, &aligned) ||
        !kiln_size_add(total, aligned, &total)) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "executables section tables overflow");
    }
  }
  void* storage = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(allocator, total, &storage));
  uint8_t* cursor = (uint8_t*)storage;
  void* parts[5];
  for (int i = 0; i < 5; ++i) {
    parts[i] = cursor;
    size_t aligned = (sizes[i] + 15) & ~(size_t)15;
    cursor += aligned;
  }
  kiln_executables_fill_t fill = {parts[0], parts[1], parts[2], parts[3],
                                  parts[4]};
  kiln_reader_init(&reader, section, base_offset, "executables section");
  memset(&counts, 0, sizeof(counts));
  kiln_status_t status = kiln_exe_walk(&reader, &counts, &fill);
  if (status) {
    kiln_allocator_free(allocator, storage);
    return status;
  }
  out->storage = storage;
  out->executables = fill.executables;
  out->executable_count = (uint32_t)counts.executables;
  return kiln_ok_status();
}

void kiln_format_executables_deinit(kiln_format_executables_t* executables) {
  if (executables->storage) {
    kiln_allocator_free(executables->allocator, executables->storage);
  }
  memset(executables, 0, sizeof(*executables));
}
