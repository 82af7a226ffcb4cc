// Everything in base/ at once.
#ifndef KILN_BASE_H_
#define KILN_BASE_H_
#include "kiln/base/allocator.h"
#include "kiln/base/arena.h"
#include "kiln/base/byte_buffer.h"
#include "kiln/base/file.h"
#include "kiln/base/reader.h"
#include "kiln/base/size_math.h"
#include "kiln/base/status.h"
#include "kiln/base/time.h"
#include "kiln/base/views.h"
#endif  // KILN_BASE_H_
