// Dispatch order and barriers. Each dispatch gets a level: one more than
// the highest level of any earlier dispatch it has a hazard with (its
// bindings overlap with at least one write: read-after-write,
// write-after-read, write-after-write, since the memory plan reuses
// ranges). Dispatches are then ordered by level (stably) with one barrier
// between levels, so independent branches (Inception's towers, attention
// heads) share a level and run without barriers between them. The count
// is the least any placement of full barriers allows: the longest hazard
// chain.
#include <string.h>

#include "emit_internal.h"

typedef struct kiln_emit_access_t {
  kiln_emit_range_t range;
  bool write;
  uint32_t level;
  uint32_t group;  // the dispatch's disjoint group (0: none)
} kiln_emit_access_t;

static bool kiln_emit_same_buffer(const kiln_emit_range_t* a, const kiln_emit_range_t* b) {
  if (a->space != b->space) return false;
  return !((a->space == KILN_EMIT_SPACE_INPUT || a->space == KILN_EMIT_SPACE_OUTPUT) &&
           a->index != b->index);
}

static bool kiln_emit_overlap(const kiln_emit_range_t* a, const kiln_emit_range_t* b) {
  return kiln_emit_same_buffer(a, b) && a->offset < b->offset + b->length &&
         b->offset < a->offset + a->length;
}

// `inner` lies inside `outer`.
static bool kiln_emit_covers(const kiln_emit_range_t* outer, const kiln_emit_range_t* inner) {
  return kiln_emit_same_buffer(outer, inner) && outer->offset <= inner->offset &&
         inner->offset + inner->length <= outer->offset + outer->length;
}

// The accesses still able to order a later dispatch: one covered by a later
// write is dropped (anything that conflicts with it conflicts with that
// write, at a level at least as high). A write of a disjoint group drops
// nothing: the group's other dispatches do not see it. Reads of the
// weights order nothing unless some dispatch writes them, and are then
// not kept.
static kiln_status_t kiln_emit_levels(kiln_emit_program_t* program, size_t begin, size_t end,
                                      uint32_t* levels, uint32_t* out_max_level) {
  kiln_allocator_t allocator = program->allocator;
  kiln_emit_access_t* live = NULL;
  size_t live_count = 0, live_capacity = 0;
  uint32_t max_level = 0;
  bool weights_written = false;
  for (size_t k = 0; k < program->dispatch_count; ++k) {
    const kiln_emit_dispatch_t* d = &program->dispatches[k];
    for (uint32_t b = 0; b < d->binding_count; ++b) {
      if (((d->written_mask >> b) & 1) && d->bindings[b].space == KILN_EMIT_SPACE_WEIGHTS) {
        weights_written = true;
      }
    }
  }
  kiln_status_t status = kiln_ok_status();
  for (size_t k = begin; k < end && !status; ++k) {
    const kiln_emit_dispatch_t* d = &program->dispatches[k];
    uint32_t level = 0;
    for (uint32_t b = 0; b < d->binding_count; ++b) {
      bool writes = (d->written_mask >> b) & 1;
      for (size_t a = 0; a < live_count; ++a) {
        bool same_group = d->disjoint_group && live[a].group == d->disjoint_group;
        if ((writes || live[a].write) && !same_group && live[a].level + 1 > level &&
            kiln_emit_overlap(&d->bindings[b], &live[a].range)) {
          level = live[a].level + 1;
        }
      }
    }
    levels[k - begin] = level;
    if (level > max_level) max_level = level;
    for (uint32_t b = 0; b < d->binding_count && !status; ++b) {
      bool writes = (d->written_mask >> b) & 1;
      if (d->bindings[b].space == KILN_EMIT_SPACE_WEIGHTS && !weights_written) continue;
      if (writes && !d->disjoint_group) {
        size_t kept = 0;
        for (size_t a = 0; a < live_count; ++a) {
          if (!kiln_emit_covers(&d->bindings[b], &live[a].range)) {
            live[kept++] = live[a];
          }
        }
        live_count = kept;
      }
      if (live_count == live_capacity) {
        size_t capacity = live_capacity ? live_capacity * 2 : 64;
        status = kiln_allocator_realloc_array(allocator, capacity, sizeof(*live),
                                              (void**)&live);
        if (status) break;
        live_capacity = capacity;
      }
      live[live_count++] = (kiln_emit_access_t){d->bindings[b], writes, level,
                                                d->disjoint_group};
    }
  }
  kiln_allocator_free(allocator, live);
  *out_max_level = max_level;
  return status;
}

// Schedules dispatches [begin, end): one GPU segment.
static kiln_status_t kiln_emit_schedule_segment(kiln_emit_program_t* program, size_t begin,
                                                size_t end) {
  size_t n = end - begin;
  if (n == 0) return kiln_ok_status();
  kiln_allocator_t allocator = program->allocator;
  uint32_t* levels = NULL;
  kiln_emit_dispatch_t* sorted = NULL;
  uint32_t max_level = 0;
  kiln_status_t status = kiln_allocator_realloc_array(allocator, n, sizeof(*levels),
                                                     (void**)&levels);
  if (!status) {
    status = kiln_allocator_realloc_array(allocator, n, sizeof(*sorted), (void**)&sorted);
  }
  if (!status) status = kiln_emit_levels(program, begin, end, levels, &max_level);
  if (!status) {
    // Stable by level: within a level, the lowering's order.
    size_t out = 0;
    for (uint32_t level = 0; level <= max_level; ++level) {
      bool first = true;
      for (size_t k = 0; k < n; ++k) {
        if (levels[k] != level) continue;
        sorted[out] = program->dispatches[begin + k];
        sorted[out].barrier_before = first && level > 0;
        first = false;
        ++out;
      }
    }
    memcpy(program->dispatches + begin, sorted, n * sizeof(*sorted));
    program->barrier_count += max_level;
  }
  kiln_allocator_free(allocator, sorted);
  kiln_allocator_free(allocator, levels);
  return status;
}

kiln_status_t kiln_emit_program_schedule(kiln_emit_program_t* program) {
  program->barrier_count = 0;
  for (size_t s = 0; s <= program->host_op_count; ++s) {
    size_t begin = 0, end = 0;
    kiln_emit_segment(program, s, &begin, &end);
    KILN_RETURN_IF_ERROR(kiln_emit_schedule_segment(program, begin, end));
  }
  return kiln_ok_status();
}
