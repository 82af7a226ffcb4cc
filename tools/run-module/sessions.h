// --sessions=N: runs the function on N more sessions at once, one thread
// each, all made from the first session's model (one device, one copy of
// the weights), and checks every result equals the first session's.
#ifndef KILN_TOOLS_RUN_MODULE_SESSIONS_H_
#define KILN_TOOLS_RUN_MODULE_SESSIONS_H_

#include <stdio.h>

#include "kiln/session.h"

enum { KILN_RUN_MAX_SESSIONS = 64 };

typedef struct kiln_run_sessions_t {
  kiln_session_t* first;          // ran the function already
  const kiln_session_options_t* options;  // the first session's
  const char* function;
  const kiln_format_signature_t* signature;
  const kiln_vm_value_t* args;     // made by the first session (same device)
  const kiln_vm_value_t* results;  // the first session's
  int sessions;                    // more sessions, 1..KILN_RUN_MAX_SESSIONS
  int calls;                       // per session
} kiln_run_sessions_t;

// Prints one "[sessions]" line; a differing result is an INTERNAL error
// naming the session, call, result and byte.
kiln_status_t kiln_run_shared_sessions(const kiln_run_sessions_t* run,
                                       FILE* out);

#endif  // KILN_TOOLS_RUN_MODULE_SESSIONS_H_
