// Whole-file read and read-only memory mapping. Errors name the path and the
// system's reason.
#ifndef KILN_BASE_FILE_H_
#define KILN_BASE_FILE_H_

#include <stddef.h>

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"

#ifdef __cplusplus
extern "C" {
#endif

// Reads the whole file into memory from `allocator`; the contents are
// followed by a NUL byte (not counted in size) so text can be parsed in place.
typedef struct kiln_file_contents_t {
  kiln_allocator_t allocator;
  uint8_t* data;
  size_t size;
} kiln_file_contents_t;

kiln_status_t kiln_file_read_all(const char* path, kiln_allocator_t allocator,
                                 kiln_file_contents_t* out_contents);
void kiln_file_contents_deinit(kiln_file_contents_t* contents);

// Writes (replacing) a whole file.
kiln_status_t kiln_file_write_all(const char* path,
                                  kiln_const_byte_span_t contents);

// Maps a file read-only. An empty file maps to an empty span.
typedef struct kiln_file_mapping_t {
  const uint8_t* data;
  size_t size;
  size_t mapped_size;  // 0 when nothing was mapped
} kiln_file_mapping_t;

kiln_status_t kiln_file_map(const char* path, kiln_file_mapping_t* out_mapping);
void kiln_file_unmap(kiln_file_mapping_t* mapping);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_FILE_H_
