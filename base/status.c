#include "kiln/base/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Annotations are kept as one array of strings; errors are rare, so simple
// heap allocations are fine here.
struct kiln_status_storage_t {
  kiln_status_code_t code;
  const char* file;
  int line;
  char* message;
  char** annotations;
  size_t annotation_count;
};

// Used when memory runs out while making a status: the error still surfaces.
static struct kiln_status_storage_t kiln_status_oom_storage = {
    KILN_STATUS_RESOURCE_EXHAUSTED, __FILE__, __LINE__,
    (char*)"out of memory while creating a status", NULL, 0};

static char* kiln_vformat_alloc(const char* format, va_list args) {
  if (!format) format = "";
  va_list copy;
  va_copy(copy, args);
  int length = vsnprintf(NULL, 0, format, copy);
  va_end(copy);
  if (length < 0) length = 0;
  char* text = (char*)malloc((size_t)length + 1);
  if (!text) return NULL;
  vsnprintf(text, (size_t)length + 1, format, args);
  return text;
}

kiln_status_t kiln_status_make_at_v(const char* file, int line,
                                    kiln_status_code_t code,
                                    const char* format, va_list args) {
  if (code == KILN_STATUS_OK || code >= KILN_STATUS_CODE_COUNT) {
    code = KILN_STATUS_INTERNAL;
  }
  struct kiln_status_storage_t* status =
      (struct kiln_status_storage_t*)calloc(1, sizeof(*status));
  if (!status) return &kiln_status_oom_storage;
  status->code = code;
  status->file = file;
  status->line = line;
  status->message = kiln_vformat_alloc(format, args);
  if (!status->message) {
    free(status);
    return &kiln_status_oom_storage;
  }
  return status;
}

kiln_status_t kiln_status_make_at(const char* file, int line,
                                  kiln_status_code_t code, const char* format,
                                  ...) {
  va_list args;
  va_start(args, format);
  kiln_status_t status = kiln_status_make_at_v(file, line, code, format, args);
  va_end(args);
  return status;
}

kiln_status_t kiln_status_annotate_at(kiln_status_t status, const char* file,
                                      int line, const char* format, ...) {
  (void)file;
  (void)line;
  if (status == NULL || status == &kiln_status_oom_storage) return status;
  va_list args;
  va_start(args, format);
  char* text = kiln_vformat_alloc(format, args);
  va_end(args);
  if (!text) return status;  // losing context beats losing the error
  char** grown = (char**)realloc(
      status->annotations, (status->annotation_count + 1) * sizeof(char*));
  if (!grown) {
    free(text);
    return status;
  }
  status->annotations = grown;
  status->annotations[status->annotation_count++] = text;
  return status;
}

kiln_status_code_t kiln_status_code(kiln_status_t status) {
  return status ? status->code : KILN_STATUS_OK;
}

const char* kiln_status_code_name(kiln_status_code_t code) {
  static const char* const names[KILN_STATUS_CODE_COUNT] = {
      "OK",
      "CANCELLED",
      "UNKNOWN",
      "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED",
      "NOT_FOUND",
      "ALREADY_EXISTS",
      "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION",
      "ABORTED",
      "OUT_OF_RANGE",
      "UNIMPLEMENTED",
      "INTERNAL",
      "UNAVAILABLE",
      "DATA_LOSS",
      "INCOMPATIBLE",
  };
  if ((unsigned)code >= KILN_STATUS_CODE_COUNT) return "UNKNOWN_CODE";
  return names[code];
}

const char* kiln_status_message(kiln_status_t status) {
  return status ? status->message : "";
}

size_t kiln_status_annotation_count(kiln_status_t status) {
  return status ? status->annotation_count : 0;
}

const char* kiln_status_annotation(kiln_status_t status, size_t index) {
  if (!status || index >= status->annotation_count) return NULL;
  return status->annotations[index];
}

const char* kiln_status_source_file(kiln_status_t status) {
  return status ? status->file : NULL;
}

int kiln_status_source_line(kiln_status_t status) {
  return status ? status->line : 0;
}

// Appends to a snprintf-style buffer while tracking the full length.
static void kiln_append(char* buffer, size_t buffer_size, size_t* length,
                        const char* text) {
  size_t text_length = strlen(text);
  if (*length < buffer_size) {
    size_t room = buffer_size - *length - 1;
    size_t n = text_length < room ? text_length : room;
    memcpy(buffer + *length, text, n);
    buffer[*length + n] = 0;
  }
  *length += text_length;
}

size_t kiln_status_format(kiln_status_t status, char* buffer,
                          size_t buffer_size) {
  size_t length = 0;
  if (buffer_size > 0) buffer[0] = 0;
  kiln_append(buffer, buffer_size, &length,
              kiln_status_code_name(kiln_status_code(status)));
  if (!status) return length;
  kiln_append(buffer, buffer_size, &length, ": ");
  kiln_append(buffer, buffer_size, &length, status->message);
  // Annotations print in the order they were added: innermost context first.
  for (size_t i = 0; i < status->annotation_count; ++i) {
    kiln_append(buffer, buffer_size, &length, "; ");
    kiln_append(buffer, buffer_size, &length, status->annotations[i]);
  }
  return length;
}

char* kiln_status_to_string(kiln_status_t status) {
  size_t length = kiln_status_format(status, NULL, 0);
  char* text = (char*)malloc(length + 1);
  if (!text) return strdup("RESOURCE_EXHAUSTED: out of memory");
  kiln_status_format(status, text, length + 1);
  return text;
}

void kiln_status_free(kiln_status_t status) {
  if (!status || status == &kiln_status_oom_storage) return;
  for (size_t i = 0; i < status->annotation_count; ++i) {
    free(status->annotations[i]);
  }
  free(status->annotations);
  free(status->message);
  free(status);
}

kiln_status_code_t kiln_status_consume_code(kiln_status_t status) {
  kiln_status_code_t code = kiln_status_code(status);
  kiln_status_free(status);
  return code;
}
