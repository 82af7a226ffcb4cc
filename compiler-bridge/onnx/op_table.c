// Looks ops up across the families.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ops.h"

static const kiln_op_def_t* const kiln_op_families[] = {
    kiln_ops_elementwise, kiln_ops_shape, kiln_ops_copy, kiln_ops_conv,
    kiln_ops_pool,        kiln_ops_logic,
    kiln_ops_matmul,      kiln_ops_norm,  kiln_ops_reduce, kiln_ops_resize, kiln_ops_scatter,
    kiln_ops_einsum, kiln_ops_rnn, kiln_ops_space_depth,
    kiln_ops_trilu, kiln_ops_attention, kiln_ops_arg, kiln_ops_versions, kiln_ops_quant, kiln_ops_host,
    kiln_ops_matmul_nbits, kiln_ops_cumsum,
};

const kiln_op_def_t* kiln_op_find(const char* op_type) {
  for (size_t f = 0; f < sizeof(kiln_op_families) / sizeof(*kiln_op_families);
       ++f) {
    for (const kiln_op_def_t* op = kiln_op_families[f]; op->op_type; ++op) {
      if (strcmp(op->op_type, op_type) == 0) return op;
    }
  }
  return NULL;
}

size_t kiln_op_count(void) {
  size_t count = 0;
  for (size_t f = 0; f < sizeof(kiln_op_families) / sizeof(*kiln_op_families);
       ++f) {
    for (const kiln_op_def_t* op = kiln_op_families[f]; op->op_type; ++op) {
      ++count;
    }
  }
  return count;
}

const kiln_op_def_t* kiln_op_at(size_t index) {
  for (size_t f = 0; f < sizeof(kiln_op_families) / sizeof(*kiln_op_families);
       ++f) {
    for (const kiln_op_def_t* op = kiln_op_families[f]; op->op_type; ++op) {
      if (index-- == 0) return op;
    }
  }
  return NULL;
}

static int kiln_op_name_compare(const void* a, const void* b) {
  return strcasecmp(*(const char* const*)a, *(const char* const*)b);
}

char* kiln_op_supported_list(void) {
  size_t count = kiln_op_count();
  size_t length = 1;
  for (size_t i = 0; i < count; ++i) length += strlen(kiln_op_at(i)->op_type) + 2;
  const char** names = (const char**)malloc((count ? count : 1) * sizeof(*names));
  char* text = (char*)malloc(length);
  if (!names || !text) {
    free(names);
    free(text);
    return NULL;
  }
  for (size_t i = 0; i < count; ++i) names[i] = kiln_op_at(i)->op_type;
  qsort(names, count, sizeof(*names), kiln_op_name_compare);
  size_t used = 0;
  text[0] = '\0';
  for (size_t i = 0; i < count; ++i) {
    used += (size_t)snprintf(text + used, length - used, "%s%s", i ? ", " : "",
                             names[i]);
  }
  free(names);
  return text;
}
