#include "kiln/base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static kiln_status_t kiln_errno_status(int error, const char* action,
                                       const char* path) {
  kiln_status_code_t code = KILN_STATUS_UNAVAILABLE;
  if (error == ENOENT) code = KILN_STATUS_NOT_FOUND;
  if (error == EACCES || error == EPERM) code = KILN_STATUS_PERMISSION_DENIED;
  if (error == EISDIR || error == EINVAL) code = KILN_STATUS_INVALID_ARGUMENT;
  return kiln_make_status(code, "cannot %s '%s': %s", action, path,
                          strerror(error));
}

// Opens a regular file and returns its size; directories and devices are
// refused because their sizes mean nothing.
static kiln_status_t kiln_open_regular(const char* path, int* out_fd,
                                       size_t* out_size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kiln_errno_status(errno, "open", path);
  struct stat info;
  if (fstat(fd, &info) != 0) {
    int error = errno;
    close(fd);
    return kiln_errno_status(error, "stat", path);
  }
  if (!S_ISREG(info.st_mode)) {
    close(fd);
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "'%s' is not a regular file", path);
  }
  *out_fd = fd;
  *out_size = (size_t)info.st_size;
  return kiln_ok_status();
}

kiln_status_t kiln_file_read_all(const char* path, kiln_allocator_t allocator,
                                 kiln_file_contents_t* out_contents) {
  memset(out_contents, 0, sizeof(*out_contents));
  int fd;
  size_t size;
  KILN_RETURN_IF_ERROR(kiln_open_regular(path, &fd, &size));
  if (size == SIZE_MAX) {
    close(fd);
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "'%s' is too large",
                            path);
  }
  void* data = NULL;
  kiln_status_t status = kiln_allocator_malloc(allocator, size + 1, &data);
  if (!kiln_status_is_ok(status)) {
    close(fd);
    return kiln_status_annotate(status, "reading '%s'", path);
  }
  size_t done = 0;
  while (done < size) {
    ssize_t n = read(fd, (uint8_t*)data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      kiln_allocator_free(allocator, data);
      return kiln_errno_status(error, "read", path);
    }
    if (n == 0) break;  // the file shrank under us; keep what we got
    done += (size_t)n;
  }
  close(fd);
  ((uint8_t*)data)[done] = 0;
  out_contents->allocator = allocator;
  out_contents->data = (uint8_t*)data;
  out_contents->size = done;
  return kiln_ok_status();
}

void kiln_file_contents_deinit(kiln_file_contents_t* contents) {
  if (contents->data) kiln_allocator_free(contents->allocator, contents->data);
  memset(contents, 0, sizeof(*contents));
}

kiln_status_t kiln_file_write_all(const char* path,
                                  kiln_const_byte_span_t contents) {
  FILE* file = fopen(path, "wb");
  if (!file) return kiln_errno_status(errno, "create", path);
  size_t written =
      contents.size ? fwrite(contents.data, 1, contents.size, file) : 0;
  int close_result = fclose(file);
  if (written != contents.size || close_result != 0) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "cannot write %zu bytes to '%s'", contents.size,
                            path);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_file_map(const char* path,
                            kiln_file_mapping_t* out_mapping) {
  memset(out_mapping, 0, sizeof(*out_mapping));
  int fd;
  size_t size;
  KILN_RETURN_IF_ERROR(kiln_open_regular(path, &fd, &size));
  if (size == 0) {
    close(fd);
    static const uint8_t empty[1] = {0};
    out_mapping->data = empty;
    return kiln_ok_status();
  }
  void* data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int error = errno;
  close(fd);  // the mapping keeps the file alive
  if (data == MAP_FAILED) return kiln_errno_status(error, "map", path);
  out_mapping->data = (const uint8_t*)data;
  out_mapping->size = size;
  out_mapping->mapped_size = size;
  return kiln_ok_status();
}

void kiln_file_unmap(kiln_file_mapping_t* mapping) {
  if (mapping->mapped_size) {
    munmap((void*)mapping->data, mapping->mapped_size);
  }
  memset(mapping, 0, sizeof(*mapping));
}
