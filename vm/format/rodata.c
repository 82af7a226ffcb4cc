// Unpacks one rodata segment: a copy for stored data, zstd for compressed
// data with the decompressed size fixed by the table (never by the frame).
#include <string.h>
#include <zstd.h>

#include "kiln/format/module_reader.h"

kiln_status_t kiln_format_rodata_unpack(const kiln_format_rodata_t* rodata,
                                        uint32_t index, kiln_byte_span_t out) {
  if (out.size != rodata->size) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "rodata %u: output holds %zu bytes, segment has "
                            "%llu",
                            index, out.size, (unsigned long long)rodata->size);
  }
  if (!(rodata->flags & KILN_FORMAT_RODATA_ZSTD)) {
    if (rodata->size) memcpy(out.data, rodata->stored, (size_t)rodata->size);
    return kiln_ok_status();
  }
  unsigned long long frame_size =
      ZSTD_getFrameContentSize(rodata->stored, (size_t)rodata->stored_size);
  if (frame_size != rodata->size) {
    return kiln_make_status(KILN_STATUS_DATA_LOSS,
                            "rodata %u at offset %llu: zstd frame declares "
                            "%llu bytes, the table says %llu",
                            index, (unsigned long long)rodata->file_offset,
                            frame_size, (unsigned long long)rodata->size);
  }
  size_t written = ZSTD_decompress(out.data, out.size, rodata->stored,
                                   (size_t)rodata->stored_size);
  if (ZSTD_isError(written) || written != out.size) {
    return kiln_make_status(
        KILN_STATUS_DATA_LOSS,
        "rodata %u at offset %llu: zstd decompression failed: %s", index,
        (unsigned long long)rodata->file_offset,
        ZSTD_isError(written) ? ZSTD_getErrorName(written) : "short output");
  }
  return kiln_ok_status();
}
