// The kiln HAL: devices, buffers, command buffers, executables, semaphores,
// the driver registry and target triples.
#ifndef KILN_HAL_H_
#define KILN_HAL_H_

#include "kiln/hal/buffer.h"
#include "kiln/hal/buffer_view.h"
#include "kiln/hal/command_buffer.h"
#include "kiln/hal/device.h"
#include "kiln/hal/driver_registry.h"
#include "kiln/hal/executable.h"
#include "kiln/hal/semaphore.h"
#include "kiln/hal/target_triple.h"
#include "kiln/hal/types.h"

#endif  // KILN_HAL_H_
