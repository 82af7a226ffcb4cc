// Parsing and printing of full and partial target triples. Each position
// has its own table; what is missing is "unknown".
#include <stdio.h>
#include <string.h>

#include "kiln/hal/target_triple.h"
#include "target_internal.h"

kiln_target_triple_t kiln_target_triple_unknown(void) {
  kiln_target_triple_t triple;
  memset(&triple, 0, sizeof(triple));
  strcpy(triple.arch, "unknown");
  strcpy(triple.product, "unknown");
  strcpy(triple.os, "unknown");
  return triple;
}

static bool product_known(const kiln_target_arch_info_t* arch,
                          const char* product) {
  for (size_t i = 0; arch->products[i]; ++i) {
    if (strcmp(arch->products[i], product) == 0) return true;
  }
  return false;
}

static size_t list_archs(char* buffer, size_t size) {
  size_t used = 0;
  for (size_t i = 0; i < kiln_target_arch_count(); ++i) {
    int n = snprintf(buffer + used, size - used, "%s%s", i ? ", " : "",
                     kiln_target_arch_at(i)->name);
    if (n < 0 || (size_t)n >= size - used) break;
    used += (size_t)n;
  }
  return used;
}

static size_t list_products(const kiln_target_arch_info_t* arch, char* buffer,
                            size_t size) {
  size_t used = 0;
  buffer[0] = '\0';
  for (size_t i = 0; arch->products[i]; ++i) {
    int n = snprintf(buffer + used, size - used, "%s%s", i ? ", " : "",
                     arch->products[i]);
    if (n < 0 || (size_t)n >= size - used) break;
    used += (size_t)n;
  }
  return used;
}

// Copies a token, refusing empty or oversized ones.
static kiln_status_t copy_token(kiln_string_view_t text,
                                kiln_string_view_t token, const char* position,
                                char* out) {
  if (token.size == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "target triple '%.*s': empty %s token",
                            KILN_SV_ARG(text), position);
  }
  if (token.size >= KILN_TARGET_TOKEN_CAPACITY) {
    return kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "target triple '%.*s': %s token '%.*s' is longer than %d characters",
        KILN_SV_ARG(text), position, KILN_SV_ARG(token),
        KILN_TARGET_TOKEN_CAPACITY - 1);
  }
  memcpy(out, token.data, token.size);
  out[token.size] = '\0';
  return kiln_ok_status();
}

kiln_status_t kiln_target_triple_parse(kiln_string_view_t text,
                                       kiln_target_triple_t* out_triple) {
  *out_triple = kiln_target_triple_unknown();
  kiln_string_view_t tokens[3];
  size_t token_count = 0;
  kiln_string_view_t rest = text;
  while (true) {
    kiln_string_view_t head, tail;
    bool more = kiln_string_view_split(rest, '-', &head, &tail);
    if (token_count == 3) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "target triple '%.*s' has more than 3 tokens "
                              "(expected <arch>-<product>-<os>)",
                              KILN_SV_ARG(text));
    }
    tokens[token_count++] = head;
    if (!more) break;
    rest = tail;
  }

  kiln_target_triple_t triple = kiln_target_triple_unknown();
  char list[512];
  KILN_RETURN_IF_ERROR(copy_token(text, tokens[0], "arch", triple.arch));
  const kiln_target_arch_info_t* arch = kiln_target_arch_lookup(triple.arch);
  if (!arch) {
    list_archs(list, sizeof(list));
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "target triple '%.*s': unknown arch '%s' (known: %s)",
                            KILN_SV_ARG(text), triple.arch, list);
  }
  char second[KILN_TARGET_TOKEN_CAPACITY];
  if (token_count == 2) {
    // arch-product or arch-os: the OS table is asked first.
    KILN_RETURN_IF_ERROR(copy_token(text, tokens[1], "second", second));
    if (kiln_target_os_known(second)) {
      strcpy(triple.os, second);
    } else if (product_known(arch, second)) {
      strcpy(triple.product, second);
    } else {
      char os_list[256];
      kiln_target_os_list(os_list, sizeof(os_list));
      list_products(arch, list, sizeof(list));
      return kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "target triple '%.*s': '%s' is neither a %s product (known: %s) "
          "nor an OS (known: %s)",
          KILN_SV_ARG(text), second, arch->name, list, os_list);
    }
  } else if (token_count == 3) {
    KILN_RETURN_IF_ERROR(copy_token(text, tokens[1], "product", second));
    if (!product_known(arch, second)) {
      list_products(arch, list, sizeof(list));
      return kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "target triple '%.*s': unknown %s product '%s' (known: %s)",
          KILN_SV_ARG(text), arch->name, second, list);
    }
    strcpy(triple.product, second);
    KILN_RETURN_IF_ERROR(copy_token(text, tokens[2], "os", triple.os));
    if (!kiln_target_os_known(triple.os)) {
      kiln_target_os_list(list, sizeof(list));
      return kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "target triple '%.*s': unknown OS '%s' (known: %s)",
          KILN_SV_ARG(text), triple.os, list);
    }
  }
  *out_triple = triple;
  return kiln_ok_status();
}

size_t kiln_target_triple_format(const kiln_target_triple_t* triple,
                                 char* buffer, size_t buffer_size) {
  int n = snprintf(buffer, buffer_size, "%s-%s-%s", triple->arch,
                   triple->product, triple->os);
  return n < 0 ? 0 : (size_t)n;
}

bool kiln_target_triple_equal(const kiln_target_triple_t* a,
                              const kiln_target_triple_t* b) {
  return strcmp(a->arch, b->arch) == 0 && strcmp(a->product, b->product) == 0 &&
         strcmp(a->os, b->os) == 0;
}
