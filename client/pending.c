/* SPDX-License-Identifier: Apache-2.0 */
/* The requests waiting for their answers (connection.h): one slot per
 * request sent, in the order sent, finished by its answer or by the
 * connection's death, and collected by the waits. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connection.h"

/* --- slots ------------------------------------------------------------------ */

slot_t *slot_find(pto_client_t *c, uint32_t msgid) {
  for (size_t i = 0; i < c->nslots; i++)
    if (c->slots[i].msgid == msgid) return &c->slots[i];
  return NULL;
}

void slot_release(slot_t *s) {
  pto_result_free(s->result);
  free(s->err);
  s->result = NULL;
  s->err = NULL;
}

void slot_remove(pto_client_t *c, slot_t *s) {
  size_t i = (size_t)(s - c->slots);
  memmove(&c->slots[i], &c->slots[i + 1], (c->nslots - i - 1) * sizeof(*s));
  c->nslots--;
}

/* Finish a slot with an error (a copy of err). */
static void slot_fail(slot_t *s, const pto_error_t *err) {
  s->state = SLOT_DONE;
  s->rc = -err->code;
  s->err = malloc(sizeof(*s->err));
  if (s->err) *s->err = *err;
}

int slot_add(pto_client_t *c, proto_method_t method, uint32_t msgid) {
  if (c->nslots == c->slots_cap) {
    size_t cap = c->slots_cap ? c->slots_cap * 2 : 16;
    slot_t *ns = realloc(c->slots, cap * sizeof(*ns));
    if (!ns) return -PTO_E_NO_MEMORY;
    c->slots = ns;
    c->slots_cap = cap;
  }
  c->slots[c->nslots++] = (slot_t){.msgid = msgid, .method = method, .state = SLOT_SENT};
  return 0;
}

int slot_collect(pto_client_t *c, slot_t *s, void **ret_result, pto_error_t *err) {
  int rc = s->rc;
  if (rc == 0) {
    if (ret_result)
      *ret_result = s->result;
    else
      pto_result_free(s->result);
    s->result = NULL;
  } else if (err) {
    if (s->err)
      *err = *s->err;
    else
      client_error(err, -rc, NULL);
  }
  slot_release(s);
  slot_remove(c, s);
  return rc;
}

int slot_method_of(pto_client_t *c, uint32_t msgid) {
  slot_t *s = slot_find(c, msgid);
  return s && s->state == SLOT_SENT ? (int)s->decode : -1;
}

bool slot_answer_waiting(const pto_client_t *c) {
  for (size_t i = 0; i < c->nslots; i++)
    if (c->slots[i].state == SLOT_DONE) return true;
  return false;
}

/* --- a dead connection --------------------------------------------------------- */

static void lost_message(const pto_client_t *c, const slot_t *s, pto_error_t *err) {
  client_error(err, PTO_E_CONNECTION_LOST,
               "The connection to ptod at '%s' was closed before it answered '%s' (request "
               "%u); the daemon may have exited or restarted.",
               c->path, proto_method_name(s->method), s->msgid);
  snprintf(err->hint, sizeof(err->hint),
           "Check the daemon's log (journalctl -u ptod@N), then connect again.");
}

void conn_kill(pto_client_t *c, const pto_error_t *why) {
  if (c->dead) return;
  c->dead = true;
  if (c->fd >= 0) {
    close(c->fd);
    c->fd = -1;
  }
  if (why) {
    c->dead_err = *why;
  } else {
    client_error(&c->dead_err, PTO_E_CONNECTION_LOST,
                 "The connection to ptod at '%s' is closed; the daemon may have exited or "
                 "restarted.",
                 c->path);
    snprintf(c->dead_err.hint, sizeof(c->dead_err.hint),
             "Check the daemon's log (journalctl -u ptod@N), then connect again.");
  }
  for (size_t i = 0; i < c->nslots;) {
    slot_t *s = &c->slots[i];
    if (s->state == SLOT_DISCARDED) {
      slot_remove(c, s);
      continue;
    }
    if (s->state == SLOT_SENT) {
      pto_error_t e;
      if (why)
        e = *why;
      else
        lost_message(c, s, &e);
      slot_fail(s, &e);
    }
    i++;
  }
}

int conn_dead_error(const pto_client_t *c, pto_error_t *err) {
  if (err) *err = c->dead_err;
  return -c->dead_err.code;
}

/* --- answers ---------------------------------------------------------------- */

void conn_deliver(pto_client_t *c, reply_outcome_t *o) {
  slot_t *s;
  if (o->kind == REPLY_FATAL) {
    conn_kill(c, &o->err);
    return;
  }
  if (o->kind == REPLY_IGNORE && o->msgid == 0) return;
  s = slot_find(c, o->msgid);
  if (!s) {
    pto_result_free(o->result);
    return;
  }
  if (s->state == SLOT_DISCARDED) {
    pto_result_free(o->result);
    slot_remove(c, s);
    return;
  }
  if (s->state != SLOT_SENT) { /* a second answer to one request: ignore it */
    pto_result_free(o->result);
    return;
  }
  if (o->kind == REPLY_RESULT) {
    s->state = SLOT_DONE;
    s->rc = 0;
    s->result = o->result;
  } else if (o->kind == REPLY_ERROR) {
    slot_fail(s, &o->err);
    if (o->result) {
      pto_result_free(c->error_dfx);
      c->error_dfx = o->result;
    }
  }
}

size_t pto_client_pending(const pto_client_t *c) {
  size_t n = 0;
  if (!c) return 0;
  for (size_t i = 0; i < c->nslots; i++) n += c->slots[i].state != SLOT_DISCARDED;
  return n;
}

void pto_client_discard(pto_client_t *c, uint32_t msgid) {
  slot_t *s = c ? slot_find(c, msgid) : NULL;
  if (!s) return;
  if (s->state == SLOT_SENT) {
    s->state = SLOT_DISCARDED;
  } else if (s->state == SLOT_DONE) {
    slot_release(s);
    slot_remove(c, s);
  }
}

/* --- wait ------------------------------------------------------------------------------ */

static int timeout_error(pto_client_t *c, const slot_t *s, pto_error_t *err) {
  return client_error(err, PTO_E_TIMEOUT,
                      "ptod at '%s' did not answer '%s' (request %u) within the timeout.", c->path,
                      proto_method_name(s->method), s->msgid);
}

int client_wait_until(pto_client_t *c, uint32_t msgid, int64_t deadline, void **ret_result,
                      pto_error_t *err) {
  slot_t *s;
  if (!c) return client_error(err, PTO_E_INVALID_ARGUMENT, "pto_client_wait needs a client.");
  for (;;) {
    s = slot_find(c, msgid);
    if (!s || s->state == SLOT_DISCARDED)
      return client_error(err, PTO_E_INVALID_ARGUMENT,
                          "No request %u is pending on this connection (already collected, "
                          "discarded or never sent).",
                          msgid);
    if (s->state == SLOT_DONE) return slot_collect(c, s, ret_result, err);
    if (c->dead) return conn_dead_error(c, err); /* not reached: kill finishes every slot */
    if (conn_holding(c)) { /* the answer may be to a request still held (send.c) */
      if (conn_flush(c, deadline) == -PTO_E_TIMEOUT) return timeout_error(c, s, err);
      continue;
    }
    if (conn_poll(c, POLLIN, deadline) == 0) return timeout_error(c, s, err);
    conn_read(c);
  }
}

int pto_client_wait(pto_client_t *c, uint32_t msgid, int timeout_ms, void **ret_result,
                    pto_error_t *ret_err) {
  return client_wait_until(c, msgid, client_deadline(timeout_ms), ret_result, ret_err);
}

int pto_client_wait_any(pto_client_t *c, int timeout_ms, uint32_t *ret_msgid, void **ret_result,
                        pto_error_t *ret_err) {
  int64_t deadline = client_deadline(timeout_ms);
  if (ret_msgid) *ret_msgid = 0;
  if (!c)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT, "pto_client_wait_any needs a client.");
  for (;;) {
    bool waiting = false;
    for (size_t i = 0; i < c->nslots; i++) {
      slot_t *s = &c->slots[i];
      if (s->state == SLOT_DONE) {
        if (ret_msgid) *ret_msgid = s->msgid;
        return slot_collect(c, s, ret_result, ret_err);
      }
      waiting |= s->state == SLOT_SENT;
    }
    if (!waiting)
      return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                          "No request is pending on this connection.");
    if (conn_holding(c)) { /* the requests still held first (send.c) */
      if (conn_flush(c, deadline) == -PTO_E_TIMEOUT) break;
      continue;
    }
    if (conn_poll(c, POLLIN, deadline) == 0) break;
    conn_read(c);
  }
  return client_error(ret_err, PTO_E_TIMEOUT,
                      "ptod at '%s' answered none of the %zu pending requests within the "
                      "timeout.",
                      c->path, pto_client_pending(c));
}

