// The arch capability table (docs/architecture.md, "Target triples") and the
// OS tokens. Values follow IREE's former triple table and what Vulkan drivers
// report (NVIDIA reports 48 KiB maxComputeSharedMemorySize on every arch; the
// 99-227 KiB CUDA figures are not reachable through Vulkan). Drivers differ,
// so these are defaults that a device's own report overrides. The compiler
// bridge plans its kernels from this table (kernels/arch_caps.c).
#include <stdio.h>
#include <string.h>

#include "kiln/hal/target_triple.h"
#include "target_internal.h"

#define F(x) KILN_TARGET_FEATURE_##x
#define DESKTOP_BASE                                                  \
  (F(STORAGE_16BIT) | F(STORAGE_8BIT) | F(SUBGROUP_OPS) |             \
   F(TIMELINE_SEMAPHORE) | F(INT64) | F(INT16) | F(INT8_ARITHMETIC))

static const char* const kUnknownProducts[] = {"unknown", NULL};
static const char* const kCpuProducts[] = {"swiftshader", "llvmpipe",
                                           "unknown", NULL};
static const char* const kValhallProducts[] = {"g57", "g68", "g77", "g78",
                                               "g310", "g510", "g610",
                                               "g710", "unknown", NULL};
static const char* const kAdrenoProducts[] = {"a640", "a650", "a660", "a730",
                                              "a740", "unknown", NULL};
static const char* const kRdna1Products[] = {"5500xt", "5600xt", "5700",
                                             "5700xt", "unknown", NULL};
static const char* const kRdna2Products[] = {"6600", "6700xt", "6800",
                                             "6800xt", "6900xt", "unknown",
                                             NULL};
static const char* const kRdna3Products[] = {"7600", "7800xt", "7900xt",
                                             "7900xtx", "unknown", NULL};
static const char* const kPascalProducts[] = {"gtx1060", "gtx1070", "gtx1080",
                                              "gtx1080ti", "p100", "unknown",
                                              NULL};
static const char* const kTuringProducts[] = {"rtx2060", "rtx2070", "rtx2080",
                                              "rtx2080ti", "gtx1660", "t4",
                                              "unknown", NULL};
static const char* const kAmpereProducts[] = {"rtx3060", "rtx3070", "rtx3080",
                                              "rtx3090", "a10", "a40", "a100",
                                              "unknown", NULL};
static const char* const kAdaProducts[] = {"rtx4060", "rtx4070", "rtx4080",
                                           "rtx4090", "l4", "l40", "l40s",
                                           "unknown", NULL};
static const char* const kHopperProducts[] = {"h100", "h200", "gh200",
                                              "unknown", NULL};
static const char* const kArcProducts[] = {"a380", "a750", "a770", "unknown",
                                           NULL};
static const char* const kM1Products[] = {"m1", "m1pro", "m1max", "m2",
                                          "unknown", NULL};

// Storage-buffer ranges: 128 MiB is Vulkan's guaranteed minimum (lavapipe,
// and what mobile and unknown parts are planned for); desktop drivers report
// 4 GiB - 1.
#define R_MIN ((uint64_t)128 << 20)
#define R_4G ((uint64_t)UINT32_MAX)

static const kiln_target_arch_info_t kArchTable[] = {
    {"unknown", "any", 64, 128, 16 * 1024, 0, "", kUnknownProducts, R_MIN},
    {"cpu", "cpu", 8, 1024, 32 * 1024,
     DESKTOP_BASE | F(FP16) | F(FP64) | F(INT8_DOT), "", kCpuProducts, R_MIN},
    {"valhall", "arm", 16, 512, 32 * 1024,
     F(FP16) | F(INT8_DOT) | F(STORAGE_16BIT) | F(STORAGE_8BIT) |
         F(SUBGROUP_OPS) | F(INT8_ARITHMETIC) | F(INT16),
     "", kValhallProducts, R_MIN},
    {"adreno", "qualcomm", 64, 1024, 32 * 1024,
     F(FP16) | F(STORAGE_16BIT) | F(SUBGROUP_OPS) | F(INT16), "",
     kAdrenoProducts, R_MIN},
    {"rdna1", "amd", 64, 1024, 64 * 1024, DESKTOP_BASE | F(FP16), "",
     kRdna1Products, R_4G},
    {"rdna2", "amd", 64, 1024, 64 * 1024, DESKTOP_BASE | F(FP16) | F(INT8_DOT),
     "", kRdna2Products, R_4G},
    // RDNA3's cooperative matrix is VK_KHR_cooperative_matrix only; kiln's
    // feature bit is the NV route its kernels take (docs/vulkan.md).
    {"rdna3", "amd", 64, 1024, 64 * 1024, DESKTOP_BASE | F(FP16) | F(INT8_DOT),
     "16x16x16 f16 (KHR only)", kRdna3Products, R_4G},
    {"pascal", "nvidia", 32, 1024, 48 * 1024, DESKTOP_BASE | F(FP16), "",
     kPascalProducts, R_4G},
    {"turing", "nvidia", 32, 1024, 48 * 1024,
     DESKTOP_BASE | F(FP16) | F(INT8_DOT) | F(COOPERATIVE_MATRIX),
     "16x16x16 f16", kTuringProducts, R_4G},
    {"ampere", "nvidia", 32, 1024, 48 * 1024,
     DESKTOP_BASE | F(FP16) | F(INT8_DOT) | F(COOPERATIVE_MATRIX),
     "16x16x16 f16", kAmpereProducts, R_4G},
    {"ada", "nvidia", 32, 1024, 48 * 1024,
     DESKTOP_BASE | F(FP16) | F(INT8_DOT) | F(COOPERATIVE_MATRIX),
     "16x16x16 f16", kAdaProducts, R_4G},
    {"hopper", "nvidia", 32, 1024, 48 * 1024,
     DESKTOP_BASE | F(FP16) | F(INT8_DOT) | F(COOPERATIVE_MATRIX),
     "16x16x16 f16", kHopperProducts, R_4G},
    {"arc", "intel", 8, 1024, 32 * 1024, DESKTOP_BASE | F(FP16) | F(INT8_DOT),
     "", kArcProducts, R_4G},
    {"m1", "apple", 32, 1024, 32 * 1024,
     F(FP16) | F(STORAGE_16BIT) | F(STORAGE_8BIT) | F(SUBGROUP_OPS) | F(INT16),
     "", kM1Products, R_MIN},
};

// OS tokens: androidNN is any API level from 24 to 40.
static const char* const kOsTokens[] = {"unknown", "linux",  "windows",
                                        "macos",   "ios",    "android30",
                                        "android31", NULL};

size_t kiln_target_arch_count(void) {
  return sizeof(kArchTable) / sizeof(kArchTable[0]);
}

const kiln_target_arch_info_t* kiln_target_arch_at(size_t index) {
  return index < kiln_target_arch_count() ? &kArchTable[index] : NULL;
}

const kiln_target_arch_info_t* kiln_target_arch_lookup(const char* arch) {
  for (size_t i = 0; i < kiln_target_arch_count(); ++i) {
    if (strcmp(kArchTable[i].name, arch) == 0) return &kArchTable[i];
  }
  return NULL;
}

bool kiln_target_os_split(const char* os, char* family, size_t family_size,
                          int* version) {
  size_t length = strlen(os);
  size_t digits = length;
  while (digits > 0 && os[digits - 1] >= '0' && os[digits - 1] <= '9') {
    --digits;
  }
  if (digits >= family_size) return false;
  memcpy(family, os, digits);
  family[digits] = '\0';
  *version = 0;
  for (size_t i = digits; i < length; ++i) {
    if (*version > 1000) return false;
    *version = *version * 10 + (os[i] - '0');
  }
  return true;
}

bool kiln_target_os_known(const char* os) {
  for (size_t i = 0; kOsTokens[i]; ++i) {
    if (strcmp(kOsTokens[i], os) == 0) return true;
  }
  char family[KILN_TARGET_TOKEN_CAPACITY];
  int version = 0;
  if (!kiln_target_os_split(os, family, sizeof(family), &version)) {
    return false;
  }
  return strcmp(family, "android") == 0 && version >= 24 && version <= 40;
}

size_t kiln_target_os_list(char* buffer, size_t buffer_size) {
  size_t used = 0;
  for (size_t i = 0; kOsTokens[i]; ++i) {
    int n = snprintf(buffer + (used < buffer_size ? used : buffer_size),
                     used < buffer_size ? buffer_size - used : 0, "%s%s",
                     i ? ", " : "", kOsTokens[i]);
    used += (size_t)n;
  }
  int n = snprintf(buffer + (used < buffer_size ? used : buffer_size),
                   used < buffer_size ? buffer_size - used : 0,
                   " (androidNN for API 24..40)");
  return used + (size_t)n;
}

const char* kiln_target_host_os(void) {
#if defined(__ANDROID__)
#if defined(__ANDROID_API__) && __ANDROID_API__ >= 31
  return "android31";
#else
  return "android30";
#endif
#elif defined(__linux__)
  return "linux";
#elif defined(_WIN32)
  return "windows";
#elif defined(__APPLE__)
  return "macos";
#else
  return "unknown";
#endif
}

static const struct {
  kiln_target_feature_bits_t bit;
  const char* name;
} kFeatureNames[] = {
    {F(FP16), "fp16"},
    {F(FP64), "fp64"},
    {F(INT64), "int64"},
    {F(STORAGE_16BIT), "storage16"},
    {F(STORAGE_8BIT), "storage8"},
    {F(INT8_DOT), "int8_dot"},
    {F(SUBGROUP_OPS), "subgroup_ops"},
    {F(SUBGROUP_SIZE_CONTROL), "subgroup_size_control"},
    {F(COOPERATIVE_MATRIX), "cooperative_matrix"},
    {F(TIMELINE_SEMAPHORE), "timeline_semaphore"},
    {F(PUSH_DESCRIPTORS), "push_descriptors"},
    {F(INT8_ARITHMETIC), "int8"},
    {F(INT16), "int16"},
};

size_t kiln_target_features_format(kiln_target_features_t features,
                                   char* buffer, size_t buffer_size) {
  size_t used = 0;
  if (buffer_size) buffer[0] = '\0';
  for (size_t i = 0; i < sizeof(kFeatureNames) / sizeof(kFeatureNames[0]);
       ++i) {
    if (!(features & kFeatureNames[i].bit)) continue;
    int n = snprintf(buffer + (used < buffer_size ? used : buffer_size),
                     used < buffer_size ? buffer_size - used : 0, "%s%s",
                     used ? "|" : "", kFeatureNames[i].name);
    used += (size_t)n;
  }
  if (used == 0) {
    int n = snprintf(buffer, buffer_size, "none");
    used = (size_t)n;
  }
  return used;
}
