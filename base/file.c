#include "kiln/base/file.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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
  if (error == EEXIST || error == ELOOP) code = KILN_STATUS_ALREADY_EXISTS;
  return kiln_make_status(code, "cannot %s '%s': %s", action, path,
                          strerror(error));
}

kiln_status_t kiln_file_open_regular(const char* path, int* out_fd,
                                     uint64_t* out_size) {
  *out_fd = -1;
  *out_size = 0;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // forever; fstat then refuses it (and devices, directories, sockets).
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
                            "'%s' is not a regular file (a %s)", path,
                            S_ISDIR(info.st_mode)    ? "directory"
                            : S_ISFIFO(info.st_mode) ? "FIFO"
                            : S_ISSOCK(info.st_mode) ? "socket"
                                                     : "device");
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int error = errno;
    close(fd);
    return kiln_errno_status(error, "open", path);
  }
  *out_fd = fd;
  *out_size = (uint64_t)info.st_size;
  return kiln_ok_status();
}

static kiln_status_t kiln_open_regular(const char* path, int* out_fd,
                                       size_t* out_size) {
  uint64_t size = 0;
  KILN_RETURN_IF_ERROR(kiln_file_open_regular(path, out_fd, &size));
  if (size >= SIZE_MAX) {
    close(*out_fd);
    *out_fd = -1;
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "'%s' is too large",
                            path);
  }
  *out_size = (size_t)size;
  return kiln_ok_status();
}

kiln_status_t kiln_file_read_all(const char* path, kiln_allocator_t allocator,
                                 kiln_file_contents_t* out_contents) {
  return kiln_file_read_all_limited(path, SIZE_MAX - 1, allocator,
                                    out_contents);
}

kiln_status_t kiln_file_read_all_limited(const char* path, size_t max_size,
                                         kiln_allocator_t allocator,
                                         kiln_file_contents_t* out_contents) {
  memset(out_contents, 0, sizeof(*out_contents));
  int fd;
  size_t size;
  KILN_RETURN_IF_ERROR(kiln_open_regular(path, &fd, &size));
  if (size > max_size) {
    close(fd);
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "'%s' holds %zu bytes, more than the limit of %zu",
                            path, size, max_size);
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

kiln_status_t kiln_file_write_new(const char* path,
                                 kiln_const_byte_span_t contents) {
  // O_EXCL with O_CREAT never follows a symlink at `path` and fails if
  // anything is there; O_NOFOLLOW says so again for older kernels.
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0644);
  if (fd < 0) return kiln_errno_status(errno, "create", path);
  size_t done = 0;
  while (done < contents.size) {
    ssize_t n = write(fd, contents.data + done, contents.size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = n < 0 ? errno : EIO;
      close(fd);
      unlink(path);
      return kiln_errno_status(error, "write", path);
    }
    done += (size_t)n;
  }
  if (close(fd) != 0) {
    int error = errno;
    unlink(path);
    return kiln_errno_status(error, "write", path);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_file_resolve_inside(const char* root, const char* path,
                                       char* out_resolved,
                                       size_t resolved_size) {
  char real_root[PATH_MAX];
  char real_path[PATH_MAX];
  if (!realpath(root, real_root)) {
    return kiln_errno_status(errno, "resolve", root);
  }
  if (!realpath(path, real_path)) {
    return kiln_errno_status(errno, "resolve", path);
  }
  size_t root_length = strlen(real_root);
  bool inside = strncmp(real_path, real_root, root_length) == 0 &&
                (real_root[root_length - 1] == '/' ||
                 real_path[root_length] == '/');
  if (!inside) {
    return kiln_make_status(KILN_STATUS_PERMISSION_DENIED,
                            "'%s' resolves to '%s', outside '%s'", path,
                            real_path, real_root);
  }
  if (strlen(real_path) >= resolved_size) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "'%s': resolved path is too long", path);
  }
  memcpy(out_resolved, real_path, strlen(real_path) + 1);
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

void kiln_file_mapping_release(const kiln_file_mapping_t* mapping,
                               size_t offset, size_t size) {
  if (!mapping->mapped_size || offset > mapping->mapped_size ||
      size > mapping->mapped_size - offset) {
    return;
  }
  long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0) return;
  uintptr_t page = (uintptr_t)page_size;
  uintptr_t begin = (uintptr_t)mapping->data + offset;
  uintptr_t end = begin + size;
  uintptr_t first = (begin + page - 1) / page * page;
  uintptr_t last = end / page * page;
  // Advice only: a failure leaves the pages resident, nothing else.
  if (last > first) (void)madvise((void*)first, last - first, MADV_DONTNEED);
}

void kiln_file_unmap(kiln_file_mapping_t* mapping) {
  if (mapping->mapped_size) {
    munmap((void*)mapping->data, mapping->mapped_size);
  }
  memset(mapping, 0, sizeof(*mapping));
}
