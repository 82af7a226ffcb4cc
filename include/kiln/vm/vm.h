// Everything an embedder needs from the VM.
#ifndef KILN_VM_VM_H_
#define KILN_VM_VM_H_
#include "kiln/vm/buffer.h"
#include "kiln/vm/context.h"
#include "kiln/vm/instance.h"
#include "kiln/vm/isa.h"
#include "kiln/vm/list.h"
#include "kiln/vm/module.h"
#include "kiln/vm/native_module.h"
#include "kiln/vm/ref.h"
#include "kiln/vm/value.h"
#endif  // KILN_VM_VM_H_
