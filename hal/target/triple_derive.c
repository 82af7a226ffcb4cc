// Derives a device's triple from vendor id, device name, driver id and OS.
// Device names are matched on a lowercase, alphanumeric-only copy so that
// "NVIDIA GeForce RTX 3080" and "rtx3080" meet.
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "kiln/hal/target_triple.h"

enum {
  kVendorAmd = 0x1002,
  kVendorNvidia = 0x10DE,
  kVendorIntel = 0x8086,
  kVendorArm = 0x13B5,
  kVendorQualcomm = 0x5143,
  kVendorApple = 0x106B,
  kVendorGoogle = 0x1AE0,
  kVendorMesa = 0x10005,
  // VkDriverId values (Vulkan 1.2), kept numeric to stay Vulkan-free.
  kDriverSwiftShader = 10,
  kDriverMoltenVk = 14,
  kDriverLlvmpipe = 13,
};

// A name fragment -> (arch, product). The first match wins, so longer
// fragments come before their prefixes.
typedef struct name_rule_t {
  const char* fragment;
  const char* arch;
  const char* product;
} name_rule_t;

static const name_rule_t kNvidiaRules[] = {
    {"gh200", "hopper", "gh200"},     {"h200", "hopper", "h200"},
    {"h100", "hopper", "h100"},       {"h800", "hopper", "unknown"},
    {"rtx4090", "ada", "rtx4090"},    {"rtx4080", "ada", "rtx4080"},
    {"rtx4070", "ada", "rtx4070"},    {"rtx4060", "ada", "rtx4060"},
    {"l40s", "ada", "l40s"},          {"l40", "ada", "l40"},
    {"nvidial4", "ada", "l4"},        {"rtx40", "ada", "unknown"},
    {"rtx3090", "ampere", "rtx3090"}, {"rtx3080", "ampere", "rtx3080"},
    {"rtx3070", "ampere", "rtx3070"}, {"rtx3060", "ampere", "rtx3060"},
    {"a100", "ampere", "a100"},       {"nvidiaa40", "ampere", "a40"},
    {"nvidiaa10", "ampere", "a10"},   {"rtx30", "ampere", "unknown"},
    {"rtx2080ti", "turing", "rtx2080ti"},
    {"rtx2080", "turing", "rtx2080"}, {"rtx2070", "turing", "rtx2070"},
    {"rtx2060", "turing", "rtx2060"}, {"gtx1660", "turing", "gtx1660"},
    {"teslat4", "turing", "t4"},      {"rtx20", "turing", "unknown"},
    {"gtx1080ti", "pascal", "gtx1080ti"},
    {"gtx1080", "pascal", "gtx1080"}, {"gtx1070", "pascal", "gtx1070"},
    {"gtx1060", "pascal", "gtx1060"}, {"p100", "pascal", "p100"},
    {NULL, NULL, NULL},
};

static const name_rule_t kAmdRules[] = {
    {"7900xtx", "rdna3", "7900xtx"}, {"7900xt", "rdna3", "7900xt"},
    {"7800xt", "rdna3", "7800xt"},   {"rx7600", "rdna3", "7600"},
    {"rx7", "rdna3", "unknown"},     {"6900xt", "rdna2", "6900xt"},
    {"6800xt", "rdna2", "6800xt"},   {"rx6800", "rdna2", "6800"},
    {"6700xt", "rdna2", "6700xt"},   {"rx6600", "rdna2", "6600"},
    {"rx6", "rdna2", "unknown"},     {"5700xt", "rdna1", "5700xt"},
    {"rx5700", "rdna1", "5700"},     {"5600xt", "rdna1", "5600xt"},
    {"5500xt", "rdna1", "5500xt"},   {"rx5", "rdna1", "unknown"},
    {NULL, NULL, NULL},
};

static const name_rule_t kArmRules[] = {
    {"g710", "valhall", "g710"}, {"g610", "valhall", "g610"},
    {"g510", "valhall", "g510"}, {"g310", "valhall", "g310"},
    {"g78", "valhall", "g78"},   {"g77", "valhall", "g77"},
    {"g68", "valhall", "g68"},   {"g57", "valhall", "g57"},
    {NULL, NULL, NULL},
};

static const name_rule_t kQualcommRules[] = {
    {"740", "adreno", "a740"}, {"730", "adreno", "a730"},
    {"660", "adreno", "a660"}, {"650", "adreno", "a650"},
    {"640", "adreno", "a640"}, {"", "adreno", "unknown"},
    {NULL, NULL, NULL},
};

static const name_rule_t kIntelRules[] = {
    {"a770", "arc", "a770"}, {"a750", "arc", "a750"}, {"a380", "arc", "a380"},
    {"arc", "arc", "unknown"}, {NULL, NULL, NULL},
};

static const name_rule_t kAppleRules[] = {
    {"m1max", "m1", "m1max"}, {"m1pro", "m1", "m1pro"}, {"m1", "m1", "m1"},
    {"m2", "m1", "m2"},       {NULL, NULL, NULL},
};

static void squash_name(const char* name, char* out, size_t out_size) {
  size_t used = 0;
  for (const char* c = name ? name : ""; *c && used + 1 < out_size; ++c) {
    if (isalnum((unsigned char)*c)) out[used++] = (char)tolower(*c);
  }
  out[used] = '\0';
}

static const name_rule_t* match_rules(const name_rule_t* rules,
                                      const char* squashed) {
  for (size_t i = 0; rules[i].fragment; ++i) {
    if (strstr(squashed, rules[i].fragment)) return &rules[i];
  }
  return NULL;
}

static void set_token(char* out, const char* value) {
  snprintf(out, KILN_TARGET_TOKEN_CAPACITY, "%s", value);
}

void kiln_target_triple_derive(const kiln_target_device_facts_t* facts,
                               kiln_target_triple_t* out_triple,
                               char* reason, size_t reason_size) {
  kiln_target_triple_t triple = kiln_target_triple_unknown();
  char squashed[256];
  squash_name(facts->device_name, squashed, sizeof(squashed));
  const char* os = facts->os ? facts->os : kiln_target_host_os();
  set_token(triple.os, os);

  const name_rule_t* rules = NULL;
  const char* vendor = "unrecognised vendor";
  const char* why = "no rule for this vendor";
  switch (facts->vendor_id) {
    case kVendorNvidia: rules = kNvidiaRules; vendor = "nvidia"; break;
    case kVendorAmd: rules = kAmdRules; vendor = "amd"; break;
    case kVendorArm: rules = kArmRules; vendor = "arm"; break;
    case kVendorQualcomm: rules = kQualcommRules; vendor = "qualcomm"; break;
    case kVendorIntel: rules = kIntelRules; vendor = "intel"; break;
    case kVendorApple: rules = kAppleRules; vendor = "apple"; break;
    case kVendorMesa: vendor = "mesa"; break;
    case kVendorGoogle: vendor = "google"; break;
    default: break;
  }
  // CPU implementations are recognised by driver id first, then by name.
  if (facts->driver_id == kDriverLlvmpipe || strstr(squashed, "llvmpipe")) {
    set_token(triple.arch, "cpu");
    set_token(triple.product, "llvmpipe");
    why = "driver is Mesa llvmpipe (lavapipe)";
  } else if (facts->driver_id == kDriverSwiftShader ||
             strstr(squashed, "swiftshader")) {
    set_token(triple.arch, "cpu");
    set_token(triple.product, "swiftshader");
    why = "driver is SwiftShader";
  } else if (facts->driver_id == kDriverMoltenVk &&
             facts->vendor_id == kVendorApple) {
    const name_rule_t* rule = match_rules(kAppleRules, squashed);
    set_token(triple.arch, "m1");
    set_token(triple.product, rule ? rule->product : "unknown");
    why = "driver is MoltenVK on Apple silicon";
  } else if (rules) {
    const name_rule_t* rule = match_rules(rules, squashed);
    if (rule) {
      set_token(triple.arch, rule->arch);
      set_token(triple.product, rule->product);
      why = rule->fragment[0] ? "device name matches a known model"
                              : "vendor has a single arch";
    } else {
      why = "device name matches no known model of this vendor";
    }
  }
  *out_triple = triple;
  if (reason && reason_size) {
    snprintf(reason, reason_size,
             "vendor 0x%x (%s), device 0x%x '%s', driver id %u: %s -> "
             "%s-%s; OS %s%s",
             facts->vendor_id, vendor, facts->device_id,
             facts->device_name ? facts->device_name : "", facts->driver_id,
             why, triple.arch, triple.product, os,
             facts->os ? "" : " (this build)");
  }
}
