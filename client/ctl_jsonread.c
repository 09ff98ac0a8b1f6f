/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_jsonread.c — see ctl_jsonread.h. */
#include "ctl_jsonread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jr_parser {
  jr_doc_t *d;
  char *p, *end;
  int depth;
  char *msg;
  size_t msglen;
} jr_parser_t;

static int fail(jr_parser_t *ps, const char *what) {
  snprintf(ps->msg, ps->msglen, "%s at byte %ld.", what, (long)(ps->p - ps->d->text));
  return -1;
}

static void skip_ws(jr_parser_t *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
    ps->p++;
}

static int new_node(jr_parser_t *ps, jr_type_t type) {
  jr_doc_t *d = ps->d;
  if (d->n == d->cap) {
    int cap = d->cap ? d->cap * 2 : 1024;
    jr_node_t *grown = realloc(d->nodes, (size_t)cap * sizeof *grown);
    if (!grown) return -1;
    d->nodes = grown;
    d->cap = cap;
  }
  d->nodes[d->n] = (jr_node_t){.type = type, .first = -1, .next = -1};
  return d->n++;
}

/* A string at ps->p (after its opening quote), NUL-terminated in place. */
static char *parse_string(jr_parser_t *ps) {
  char *start = ps->p, *w = ps->p;
  while (ps->p < ps->end && *ps->p != '"') {
    if ((unsigned char)*ps->p < 0x20) return NULL;
    if (*ps->p == '\\') {
      if (++ps->p >= ps->end) return NULL;
      if (*ps->p == 'u') { /* kept as written: \uXXXX */
        if (ps->end - ps->p < 5) return NULL;
        *w++ = '\\';
      } else if (strchr("\"\\/bfnrt", *ps->p) == NULL) {
        return NULL;
      }
    }
    *w++ = *ps->p++;
  }
  if (ps->p >= ps->end) return NULL;
  ps->p++; /* the closing quote */
  *w = '\0';
  return start;
}

static int parse_value(jr_parser_t *ps);

static int parse_container(jr_parser_t *ps, jr_type_t type, int self) {
  int last = -1;
  char close = type == JR_ARRAY ? ']' : '}';
  if (++ps->depth > 64) return fail(ps, "JSON nested deeper than 64");
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    ps->depth--;
    return self;
  }
  for (;;) {
    const char *key = NULL;
    int child;
    skip_ws(ps);
    if (type == JR_OBJECT) {
      if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a member name");
      ps->p++;
      key = parse_string(ps);
      if (!key) return fail(ps, "bad string");
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':'");
      ps->p++;
    }
    child = parse_value(ps);
    if (child < 0) return -1;
    ps->d->nodes[child].key = key;
    if (last < 0)
      ps->d->nodes[self].first = child;
    else
      ps->d->nodes[last].next = child;
    last = child;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == close) {
      ps->p++;
      ps->depth--;
      return self;
    }
    return fail(ps, type == JR_ARRAY ? "expected ',' or ']'" : "expected ',' or '}'");
  }
}

static int parse_value(jr_parser_t *ps) {
  int i;
  skip_ws(ps);
  if (ps->p >= ps->end) return fail(ps, "unexpected end of the file");
  switch (*ps->p) {
    case '{':
    case '[': {
      jr_type_t type = *ps->p == '{' ? JR_OBJECT : JR_ARRAY;
      ps->p++;
      i = new_node(ps, type);
      return i < 0 ? fail(ps, "out of memory") : parse_container(ps, type, i);
    }
    case '"': {
      char *s;
      ps->p++;
      s = parse_string(ps);
      if (!s) return fail(ps, "bad string");
      i = new_node(ps, JR_STRING);
      if (i < 0) return fail(ps, "out of memory");
      ps->d->nodes[i].str = s;
      return i;
    }
    default: break;
  }
  if (ps->end - ps->p >= 4 && memcmp(ps->p, "true", 4) == 0) {
    ps->p += 4;
    i = new_node(ps, JR_BOOL);
    if (i >= 0) ps->d->nodes[i].num = 1;
    return i;
  }
  if (ps->end - ps->p >= 5 && memcmp(ps->p, "false", 5) == 0) {
    ps->p += 5;
    return new_node(ps, JR_BOOL);
  }
  if (ps->end - ps->p >= 4 && memcmp(ps->p, "null", 4) == 0) {
    ps->p += 4;
    return new_node(ps, JR_NULL);
  }
  {
    char *after;
    double v = strtod(ps->p, &after);
    if (after == ps->p || after > ps->end) return fail(ps, "expected a JSON value");
    ps->p = after;
    i = new_node(ps, JR_NUMBER);
    if (i >= 0) ps->d->nodes[i].num = v;
    return i;
  }
}

int jr_parse(const char *text, size_t len, jr_doc_t *ret, char *msg, size_t msglen) {
  jr_parser_t ps;
  memset(ret, 0, sizeof *ret);
  ret->text = malloc(len + 1);
  if (!ret->text) {
    snprintf(msg, msglen, "Out of memory.");
    return -1;
  }
  memcpy(ret->text, text, len);
  ret->text[len] = '\0'; /* strtod stops here at the latest */
  ps = (jr_parser_t){ret, ret->text, ret->text + len, 0, msg, msglen};
  if (parse_value(&ps) < 0) {
    jr_free(ret);
    return -1;
  }
  skip_ws(&ps);
  if (ps.p != ps.end) {
    fail(&ps, "text after the JSON value");
    jr_free(ret);
    return -1;
  }
  return 0;
}

void jr_free(jr_doc_t *doc) {
  free(doc->nodes);
  free(doc->text);
  memset(doc, 0, sizeof *doc);
}

int jr_get(const jr_doc_t *d, int i, const char *key) {
  if (i < 0 || d->nodes[i].type != JR_OBJECT) return -1;
  for (int c = d->nodes[i].first; c >= 0; c = d->nodes[c].next)
    if (strcmp(d->nodes[c].key, key) == 0) return c;
  return -1;
}

double jr_num(const jr_doc_t *d, int i, const char *key, double def) {
  int c = jr_get(d, i, key);
  return c >= 0 && d->nodes[c].type == JR_NUMBER ? d->nodes[c].num : def;
}

const char *jr_str(const jr_doc_t *d, int i, const char *key) {
  int c = jr_get(d, i, key);
  return c >= 0 && d->nodes[c].type == JR_STRING ? d->nodes[c].str : NULL;
}
