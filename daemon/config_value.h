/* SPDX-License-Identifier: Apache-2.0 */
/* config_value.h — the value types of config.h's keys, inside the config
 * module (config.c, config_file.c, config_value.c): one row per cfg_type_t
 * saying how a value of that type is parsed from config text, written back
 * as config text, and what a printed value leaves unsaid.
 *
 * Plain functions of their arguments: nothing logs, nothing keeps state;
 * any thread.  User and group names are resolved with getpwnam_r and
 * getgrnam_r as they are parsed.
 */
#ifndef PTOD_CONFIG_VALUE_H
#define PTOD_CONFIG_VALUE_H

#include <stddef.h>

#include "config.h"

/* Why a value was refused: the sentence and a hint, sized as pto_error_t's. */
typedef struct cfg_why {
  char text[sizeof(((pto_error_t *)0)->message)];
  char hint[sizeof(((pto_error_t *)0)->hint)];
} cfg_why_t;

/* Parse text for key k into dst (k->size bytes).  Returns 0, or -1 with
 * why saying what was wrong and what to write instead (dst untouched). */
int cfg_parse_value(const cfg_key_t *k, const char *text, void *dst, cfg_why_t *why);

/* What the printed value of k in cfg leaves unsaid ("none", "the daemon's
 * primary group", a group's name), "" for nothing; may be built in buf. */
const char *cfg_value_note(const cfg_t *cfg, const cfg_key_t *k, char *buf, size_t len);

/* snprintf at buf + *pos, advancing *pos by what it wanted to write (so
 * *pos can pass len: the text was cut).  buf may be NULL. */
void cfg_append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
