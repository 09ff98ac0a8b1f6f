/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_query.c — the commands that ask a daemon and show its answer: ping,
 * status, metrics, programs, advise [--apply FILE] (the file's edit:
 * ctl_advise.c), and prewarm (ctl.h). */
#include <stdio.h>

#include "ctl.h"
#include "ctl_advise.h"
#include "ctl_print.h"

static void human_ping(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_ping(stdout, t->result, t->ms);
}
static void human_status(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_status(stdout, t->result);
}
static void human_metrics(ctl_t *c, target_t *t) {
  const pto_text_t *m = t->result;
  (void)c;
  fwrite(m->text, 1, m->len, stdout);
}
static void human_programs(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_programs(stdout, t->result);
}
static void human_advise(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_advise(stdout, t->result);
}
static void human_arena(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_arena(stdout, t->result);
}

int ctl_query_check(ctl_t *c) {
  static const view_t views[] = {
      [PTO_METHOD_PING] = {human_ping, NULL},
      [PTO_METHOD_STATUS] = {human_status, NULL},
      [PTO_METHOD_METRICS] = {human_metrics, NULL},
      [PTO_METHOD_PROGRAMS] = {human_programs, NULL},
      [PTO_METHOD_ADVISE] = {human_advise, NULL},
  };
  if (c->nwords != 1) return ctl_usage_error("'%s' takes no arguments.", c->words[0]);
  c->req.method = c->cmd->method;
  c->view = &views[c->cmd->method];
  return 0;
}

int ctl_prewarm_check(ctl_t *c) {
  static const view_t view = {human_arena, NULL};
  if (c->nwords != 1) return ctl_usage_error("'prewarm' takes no arguments, only ring options.");
  c->req.method = PTO_METHOD_PREWARM;
  c->req.u.prewarm.config = c->config;
  c->view = &view;
  return 0;
}

/* advise, then with --apply its lines into FILE. */
int ctl_advise_run(ctl_t *c) {
  char msg[4600];
  int rc = ctl_call_show(c);
  if (rc || !c->apply) return rc;
  if (ctl_multi(c))
    return ctl_usage_error("advise --apply takes one daemon: each may need its own.");
  rc = ctl_advise_apply(c->targets[0].result, c->apply, msg, sizeof(msg));
  return rc < 0 ? ctl_local_error(rc, msg) : 0;
}
