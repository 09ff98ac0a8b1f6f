/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_jsonread.h — a small strict JSON reader for ptoctl (RFC 8259 values
 * into a tree), enough to read the Chrome trace-event files ptod writes
 * back (ptoctl dfx ring-occupancy).
 *
 * One allocation pool per document: jr_parse builds it, jr_free releases
 * it.  Strings are kept undecoded but for \" and \\ (the trace's names are
 * plain ASCII); nesting is limited to 64.
 */
#ifndef PTOCTL_JSONREAD_H
#define PTOCTL_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { JR_NULL, JR_BOOL, JR_NUMBER, JR_STRING, JR_ARRAY, JR_OBJECT } jr_type_t;

typedef struct jr_node {
  jr_type_t type;
  const char *key; /* member name inside an object, else NULL */
  const char *str; /* JR_STRING, NUL-terminated */
  double num;      /* JR_NUMBER; JR_BOOL: 0 or 1 */
  int first, next; /* children (arrays, objects) and siblings: indices, -1 = none */
} jr_node_t;

typedef struct jr_doc {
  jr_node_t *nodes;
  int n, cap;
  char *text; /* a copy the strings point into */
} jr_doc_t;

/* Parse text (len bytes).  0, or -1 with msg saying where and what. */
int jr_parse(const char *text, size_t len, jr_doc_t *ret, char *msg, size_t msglen);
void jr_free(jr_doc_t *doc);

/* The member `key` of object node i, or -1. */
int jr_get(const jr_doc_t *d, int i, const char *key);
/* Its number (def when absent or not a number), string (NULL). */
double jr_num(const jr_doc_t *d, int i, const char *key, double def);
const char *jr_str(const jr_doc_t *d, int i, const char *key);

#endif
