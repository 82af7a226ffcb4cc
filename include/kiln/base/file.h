// Whole-file read and read-only memory mapping. Errors name the path and the
// system's reason. Every file kiln reads may be untrusted: all of them go
// through kiln_file_open_regular, which never blocks on a FIFO or device.
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
// The same, refusing (OUT_OF_RANGE, before allocating) a file larger than
// `max_size` bytes: a sparse or huge file costs nothing to refuse.
kiln_status_t kiln_file_read_all_limited(const char* path, size_t max_size,
                                         kiln_allocator_t allocator,
                                         kiln_file_contents_t* out_contents);

// Opens a regular file read-only (blocking reads) and returns its size.
// FIFOs, devices, sockets and directories are refused (INVALID_ARGUMENT,
// naming what it is) without waiting: the open is non-blocking until fstat.
kiln_status_t kiln_file_open_regular(const char* path, int* out_fd,
                                     uint64_t* out_size);

// Resolves every symlink of `path` and of `root` (realpath) and refuses
// (PERMISSION_DENIED) a path that then lies outside `root`; the resolved
// path is copied to `out_resolved` for opening.
kiln_status_t kiln_file_resolve_inside(const char* root, const char* path,
                                       char* out_resolved,
                                       size_t resolved_size);
void kiln_file_contents_deinit(kiln_file_contents_t* contents);

// Writes (replacing) a whole file.
kiln_status_t kiln_file_write_all(const char* path,
                                  kiln_const_byte_span_t contents);
// Creates a new file (O_CREAT|O_EXCL|O_NOFOLLOW) and writes it: fails
// (ALREADY_EXISTS) if anything, a symlink included, is at
// `path`; a half-written file is removed.
kiln_status_t kiln_file_write_new(const char* path,
                                  kiln_const_byte_span_t contents);

// Maps a file read-only. An empty file maps to an empty span.
typedef struct kiln_file_mapping_t {
  const uint8_t* data;
  size_t size;
  size_t mapped_size;  // 0 when nothing was mapped
} kiln_file_mapping_t;

kiln_status_t kiln_file_map(const char* path, kiln_file_mapping_t* out_mapping);
void kiln_file_unmap(kiln_file_mapping_t* mapping);
// Drops the resident pages wholly inside [offset, offset+size) after the
// caller has copied them out (they read back from the file if touched
// again), so a mapping read once does not stay in the process's memory.
void kiln_file_mapping_release(const kiln_file_mapping_t* mapping,
                               size_t offset, size_t size);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_FILE_H_
