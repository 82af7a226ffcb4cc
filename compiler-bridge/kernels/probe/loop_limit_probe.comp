#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint MODE = 0;
layout(constant_id = 4) const uint S16 = 16;
layout(constant_id = 5) const uint S4 = 4;
layout(set = 0, binding = 0) readonly buffer In { uint ones[]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint out_[]; };
layout(push_constant) uniform P { uint n1, n2, n3, pad; } p;
void main() {
  uint lane = gl_LocalInvocationIndex + gl_WorkGroupID.x * gl_WorkGroupSize.x;
  uint c = 0;
  if (MODE == 0) {  // one loop
    for (uint i = 0; i < p.n1; ++i) c += ones[i & 1023];
  } else if (MODE == 1) {  // two loops in sequence
    for (uint i = 0; i < p.n1; ++i) c += ones[i & 1023];
    for (uint j = 0; j < p.n2; ++j) c += ones[j & 1023];
  } else if (MODE == 2) {  // nested
    for (uint i = 0; i < p.n1; ++i)
      for (uint j = 0; j < p.n2; ++j) c += ones[(i + j) & 1023];
  } else if (MODE == 3) {  // compile-time trip count 100000
    for (uint i = 0; i < 100000u; ++i) c += ones[i & 1023];
  } else if (MODE == 4) {  // lane 0 runs n1 trips, the others n2
    uint n = gl_LocalInvocationIndex == 0 ? p.n1 : p.n2;
    for (uint i = 0; i < n; ++i) c += ones[i & 1023];
  } else if (MODE == 5) {  // constant 4-trip inner loop in a run-time loop
    for (uint i = 0; i < p.n1; ++i)
      for (uint j = 0; j < 4u; ++j) c += ones[(i + j) & 1023];
  } else if (MODE == 6) {  // zero-trip loops: n1 passes of an outer loop whose inner loop runs 0 trips
    for (uint i = 0; i < p.n1; ++i) {
      c += ones[i & 1023];
      for (uint j = 0; j < p.n2; ++j) c += ones[j & 1023];
    }
  } else if (MODE == 7) {  // constant-trip 16-loop nested in n1 (like gemm TK)
    for (uint i = 0; i < p.n1; ++i)
      for (uint j = 0; j < 16u; ++j) c += ones[(i + j) & 1023];
  }
  if (MODE == 10) {  // n1 x (inner of n2 trips x (innermost of n3 trips)): counts outer trips
    for (uint i = 0; i < p.n1; ++i) {
      c += ones[i & 1023];
      for (uint j = 0; j < p.n2; ++j) {
        for (uint k = 0; k < p.n3; ++k) c += 1000000u * ones[k & 1023];
      }
    }
  } else if (MODE == 8) {  // spec-constant 16-trip inner loop in a run-time loop
    for (uint i = 0; i < p.n1; ++i)
      for (uint j = 0; j < S16; ++j) c += ones[(i + j) & 1023];
  } else if (MODE == 9) {  // gemm-like: 16 x (4 + 4 x 4) spec-constant nest with arrays
    float acc[S4 * S4];
    for (uint i = 0; i < S4 * S4; ++i) acc[i] = 0.0;
    for (uint i = 0; i < p.n1; ++i) {
      for (uint kk = 0; kk < S16; ++kk) {
        float bv[S4];
        for (uint j = 0; j < S4; ++j) bv[j] = float(ones[(i + kk + j) & 1023]);
        for (uint a = 0; a < S4; ++a) {
          float av = float(ones[(a + kk) & 1023]);
          for (uint j = 0; j < S4; ++j) acc[a * S4 + j] += av * bv[j];
        }
      }
    }
    c = uint(acc[0] / 16.0);
  }
  out_[lane] = c;
}
