// Shared between the ONNX reader's files; not a public header.
#ifndef KILN_COMPILER_BRIDGE_ONNX_ONNX_INTERNAL_H_
#define KILN_COMPILER_BRIDGE_ONNX_ONNX_INTERNAL_H_

#include "kiln/compiler/graph_tensor.h"
#include "onnx.pb-c.h"

// Maps an ONNX TensorProto.DataType to kiln's; INVALID when unsupported.
kiln_graph_dtype_t kiln_onnx_dtype_from_proto(int32_t data_type);
const char* kiln_onnx_proto_dtype_name(int32_t data_type);

// Decodes a TensorProto's contents (inline or external data; `model_dir` is
// the folder external paths are relative to, NULL to refuse them). `source`
// names the file in messages.
kiln_status_t kiln_onnx_tensor_decode(const Onnx__TensorProto* proto,
                                      const char* model_dir,
                                      const char* source,
                                      kiln_allocator_t allocator,
                                      kiln_graph_tensor_t* out_tensor);

#endif  // KILN_COMPILER_BRIDGE_ONNX_ONNX_INTERNAL_H_
