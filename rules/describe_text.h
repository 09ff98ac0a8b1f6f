/* SPDX-License-Identifier: Apache-2.0 */
/* rules/describe_text.h — how a text someone sent is shown in an error
 * message.  Pure: the sizing rules of ptorules use it without msgpack;
 * describe.h adds the msgpack describer. */
#ifndef RULES_DESCRIBE_TEXT_H
#define RULES_DESCRIBE_TEXT_H

#include <stddef.h>

/* The bytes someone sent, made safe to echo: printable ASCII as it is,
 * '"' and '\\' backslashed, whole valid UTF-8 characters as they are, any
 * other byte as \xNN.  Shows at most max_shown bytes of s and cuts only
 * between characters, so buf (NUL-terminated, always) is valid UTF-8 and
 * never ends inside a character or an escape.  Returns how many bytes of
 * s it showed (< len: it was cut). */
size_t proto_escape_text(const char *s, size_t len, size_t max_shown, char *buf, size_t buflen);

/* A name or key someone sent, for an error message: escaped as above, at
 * most max_shown bytes of s, then "..." when it was cut.  The "..." always
 * fits: the escaping stops 3 bytes short of buflen (>= 4). */
void proto_show_text(const char *s, size_t len, size_t max_shown, char *buf, size_t buflen);

/* "text" for len bytes of s, quoted and escaped as above, cut at 40 bytes
 * ("..." after the closing quote of a cut text). */
void proto_describe_text(const char *s, size_t len, char *buf, size_t buflen);

#endif
