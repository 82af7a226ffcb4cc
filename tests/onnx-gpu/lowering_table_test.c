// One table per concept: the GPU lowering dispatches by the ONNX op table's
// names, and both supported-op lists are built from their tables, complete
// (a fixed buffer once cut the GPU list off at 512 bytes).
#include <stdlib.h>
#include <string.h>

#include "kiln_test.h"
#include "lower_util.h"
#include "ops.h"

// `name` appears in `list` as a whole entry ("A, B (note), C").
static bool kiln_list_has(const char* list, const char* name) {
  size_t length = strlen(name);
  for (const char* p = strstr(list, name); p; p = strstr(p + 1, name)) {
    bool starts = p == list || (p >= list + 2 && p[-2] == ',' && p[-1] == ' ');
    char end = p[length];
    if (starts && (end == '\0' || end == ',' || end == ' ')) return true;
  }
  return false;
}

KILN_TEST(LoweringTableTest, EveryLoweredOpIsAnOnnxTableOpAndListed) {
  char* list = kiln_lower_supported_list();
  KILN_ASSERT_TRUE(list != NULL);
  KILN_EXPECT_GT(kiln_lowering_count(), 40u);
  for (size_t i = 0; i < kiln_lowering_count(); ++i) {
    const char* op = kiln_lowering_op(i);
    KILN_EXPECT_TRUE(kiln_op_find(op) != NULL);
    KILN_EXPECT_TRUE(kiln_list_has(list, op));
    for (size_t j = 0; j < i; ++j) KILN_EXPECT_TRUE(strcmp(kiln_lowering_op(j), op) != 0);
  }
  // The unary ops come from the activation table: all listed, all ONNX ops.
  size_t activations = 0;
  for (const char* name; (name = kiln_activation_name(activations)); ++activations) {
    KILN_EXPECT_TRUE(kiln_op_find(name) != NULL);
    KILN_EXPECT_TRUE(kiln_list_has(list, name));
    KILN_EXPECT_TRUE(kiln_activation_from_name(name) != KILN_ACT_NONE);
  }
  KILN_EXPECT_EQ(activations, (size_t)KILN_ACT_COUNT - 1);  // every code but NONE
  KILN_EXPECT_GT(strlen(list), 512u);  // longer than the old cut-off
  KILN_EXPECT_FALSE(kiln_list_has(list, "Mod"));
  free(list);
}

KILN_TEST(LoweringTableTest, EveryOnnxTableOpIsInTheReferenceList) {
  char* list = kiln_op_supported_list();
  KILN_ASSERT_TRUE(list != NULL);
  KILN_EXPECT_GT(kiln_op_count(), 80u);
  for (size_t i = 0; i < kiln_op_count(); ++i) {
    KILN_EXPECT_TRUE(kiln_list_has(list, kiln_op_at(i)->op_type));
  }
  KILN_EXPECT_TRUE(kiln_op_at(kiln_op_count()) == NULL);
  KILN_EXPECT_EQ(strncmp(list, "Abs, Acos, Acosh, Add, ", 23), 0);  // sorted
  free(list);
}

// The one activation enum: the fusable ones are exactly what an epilogue
// may carry; the reference computes every code.
KILN_TEST(LoweringTableTest, ActivationTable) {
  KILN_EXPECT_TRUE(kiln_activation_fusable(kiln_activation_from_name("Relu")));
  KILN_EXPECT_TRUE(kiln_activation_fusable(kiln_activation_from_name("Gelu")));
  KILN_EXPECT_FALSE(kiln_activation_fusable(kiln_activation_from_name("Sqrt")));
  KILN_EXPECT_FALSE(kiln_activation_fusable(KILN_ACT_NONE));
  KILN_EXPECT_EQ(kiln_activation_from_name("Mod"), (kiln_activation_t)KILN_ACT_NONE);
  KILN_EXPECT_NEAR(kiln_ref_activation(KILN_ACT_ERF, 0, 0, 0.5f), 0.5204999, 1e-6);
  KILN_EXPECT_NEAR(kiln_ref_activation(KILN_ACT_RECIPROCAL, 0, 0, 4.0f), 0.25, 0);
  KILN_EXPECT_NEAR(kiln_ref_activation(KILN_ACT_ABS, 0, 0, -2.0f), 2.0, 0);
  KILN_EXPECT_NEAR(kiln_ref_activation(KILN_ACT_CLIP, 0, 6, 7.0f), 6.0, 0);
}
