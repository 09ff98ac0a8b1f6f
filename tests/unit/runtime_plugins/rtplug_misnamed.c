/* SPDX-License-Identifier: Apache-2.0 */
/* A program whose name field differs from its file name. */
#include <pto/program.h>

static int misnamed_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                                uint32_t nargs) {
  (void)api;
  (void)orch;
  (void)args;
  (void)nargs;
  return 0;
}

PTO_PROGRAM_EXPORT = {PTO_PROGRAM_ABI_VERSION, "other_name", "misnamed", 0, 0,
                      misnamed_orchestrate};
