// The fused epilogue of gemm and gemm_coopmat: C[gm][gn..gn+3] =
// act(scale * v + bias + residual), stored by quad where C (and the
// residual) are quad-aligned and the quad is whole, else by element.
// The includer declares the push block p (kiln_kernel_gemm_params_t), the
// bias4 / residual4 buffers, KILN_OUTPUT_BUFFER, the ACTIVATION / HAS_BIAS
// / HAS_RESIDUAL spec constants, and sets the globals batch and c_vec4.
#ifndef KILN_GEMM_EPILOGUE_GLSL_
#define KILN_GEMM_EPILOGUE_GLSL_

uint batch;
bool c_vec4;

// gemm_coopmat defines it as [[unroll]] so that no loop around its
// accumulators stays rolled (gemm does not enable the attribute).
#ifndef KILN_EPILOGUE_UNROLL
#define KILN_EPILOGUE_UNROLL
#endif

// Columns past n (not stored) read column n - 1: no read outside the bias.
float bias_at(uint gm, uint gn) {
  const uint i = batch * p.bias_batch_stride + gm * p.bias_row_stride +
                 min(gn, p.n - 1) * p.bias_col_stride;
  return LOAD_AT(bias4, i);
}

void kiln_gemm_epilogue(uint gm, uint gn, vec4 v) {
  v *= p.scale;
  if (HAS_BIAS) {
    v += vec4(bias_at(gm, gn), bias_at(gm, gn + 1), bias_at(gm, gn + 2), bias_at(gm, gn + 3));
  }
  const uint r = batch * p.residual_batch_stride + gm * p.residual_row_stride + gn;
  const uint o = batch * p.c_batch_stride + gm * p.c_row_stride + gn;
  const bool whole = c_vec4 && gn + 3 < p.n;
  if (HAS_RESIDUAL) {
    if (whole) {
      v += LOAD4(residual4[r >> 2]);
    } else {
      KILN_EPILOGUE_UNROLL for (uint j = 0; j < 4; ++j) {
        if (gn + j < p.n) v[j] += LOAD_AT(residual4, r + j);
      }
    }
  }
  KILN_EPILOGUE_UNROLL for (uint j = 0; j < 4; ++j) v[j] = kiln_activate(ACTIVATION, v[j], p.alpha, p.beta);
  if (whole) {
    kiln_store4(o, v);
  } else {
    KILN_EPILOGUE_UNROLL for (uint j = 0; j < 4; ++j) {
      if (gn + j < p.n) kiln_store1(o + j, v[j]);
    }
  }
}

#endif  // KILN_GEMM_EPILOGUE_GLSL_
