// The kiln release this library was built as (meson's project version), for
// tools' --version and for hosts that log what they embed.
#ifndef KILN_BASE_VERSION_H_
#define KILN_BASE_VERSION_H_

#ifdef __cplusplus
extern "C" {
#endif

// "MAJOR.MINOR.PATCH"; a static string.
const char* kiln_version(void);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_VERSION_H_
