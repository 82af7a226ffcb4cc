// See einsum.h.
#include "einsum.h"

#include <stdio.h>
#include <string.h>

static int32_t kiln_einsum_slot(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

bool kiln_einsum_parse(const char* equation, size_t input_count, kiln_einsum_t* out,
                       char* error, size_t error_size) {
  memset(out, 0, sizeof(*out));
  if (input_count < 1 || input_count > KILN_EINSUM_MAX_INPUTS) {
    snprintf(error, error_size, "%zu operands (1 or 2 are supported)", input_count);
    return false;
  }
  out->input_count = input_count;
  int32_t index_of_slot[KILN_EINSUM_MAX_LABELS];
  int32_t uses[KILN_EINSUM_MAX_LABELS] = {0};
  for (int32_t i = 0; i < KILN_EINSUM_MAX_LABELS; ++i) index_of_slot[i] = -1;
  size_t operand = 0;
  bool explicit_output = false;
  for (const char* p = equation; *p; ++p) {
    char c = *p;
    if (c == ' ') continue;
    if (c == '.') {
      snprintf(error, error_size, "ellipsis ('...') is not supported");
      return false;
    }
    if (c == ',') {
      if (explicit_output || ++operand >= input_count) {
        snprintf(error, error_size, "more operands in the equation than inputs");
        return false;
      }
      continue;
    }
    if (c == '-') {
      if (p[1] != '>' || explicit_output) {
        snprintf(error, error_size, "malformed '->'");
        return false;
      }
      ++p;
      explicit_output = true;
      if (operand + 1 != input_count) {
        snprintf(error, error_size, "fewer operands in the equation than inputs");
        return false;
      }
      operand = input_count;
      continue;
    }
    int32_t slot = kiln_einsum_slot(c);
    if (slot < 0) {
      snprintf(error, error_size, "unexpected character '%c'", c);
      return false;
    }
    if (index_of_slot[slot] < 0) {
      if (explicit_output) {
        snprintf(error, error_size, "output label '%c' is not in any input", c);
        return false;
      }
      index_of_slot[slot] = out->label_count;
      out->names[out->label_count++] = c;
    }
    int32_t label = index_of_slot[slot];
    if (out->rank[operand] == KILN_GRAPH_MAX_RANK) {
      snprintf(error, error_size, "an operand has more than %d labels", KILN_GRAPH_MAX_RANK);
      return false;
    }
    for (int32_t d = 0; explicit_output && operand == input_count && d < out->rank[operand];
         ++d) {
      if (out->labels[operand][d] == label) {
        snprintf(error, error_size, "output label '%c' repeats", c);
        return false;
      }
    }
    out->labels[operand][out->rank[operand]++] = label;
    if (operand < input_count) ++uses[label];
  }
  if (!explicit_output) {
    if (operand + 1 != input_count) {
      snprintf(error, error_size, "fewer operands in the equation than inputs");
      return false;
    }
    // Implicit output: labels used exactly once, alphabetically (ONNX and
    // numpy order upper case before lower case, as ASCII does).
    for (char c = 'A'; c <= 'z'; ++c) {
      int32_t slot = kiln_einsum_slot(c);
      if (slot < 0 || index_of_slot[slot] < 0 || uses[index_of_slot[slot]] != 1) continue;
      if (out->rank[input_count] == KILN_GRAPH_MAX_RANK) {
        snprintf(error, error_size, "output rank exceeds %d", KILN_GRAPH_MAX_RANK);
        return false;
      }
      out->labels[input_count][out->rank[input_count]++] = index_of_slot[slot];
    }
  }
  return true;
}
