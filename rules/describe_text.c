/* SPDX-License-Identifier: Apache-2.0 */
/* The text describer of describe_text.h: pure, no msgpack, so the sizing
 * rules can quote what they were given without linking msgpack-c. */
#include "describe_text.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_SHOWN 40

/* Length of the valid UTF-8 sequence at s[0..len), or 0 when the bytes
 * there are not one (overlong forms, surrogates and values past U+10FFFF
 * included). */
static size_t utf8_sequence(const unsigned char *s, size_t len) {
  size_t n;
  uint32_t cp;
  if (s[0] < 0x80) return 1;
  if (s[0] >= 0xc2 && s[0] <= 0xdf) n = 2, cp = s[0] & 0x1fu;
  else if (s[0] >= 0xe0 && s[0] <= 0xef) n = 3, cp = s[0] & 0x0fu;
  else if (s[0] >= 0xf0 && s[0] <= 0xf4) n = 4, cp = s[0] & 0x07u;
  else return 0;
  if (len < n) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

size_t proto_escape_text(const char *s, size_t len, size_t max_shown, char *buf, size_t buflen) {
  const unsigned char *u = (const unsigned char *)s;
  size_t o = 0, i = 0;
  if (buflen == 0) return 0;
  while (i < len && i < max_shown) {
    size_t n = utf8_sequence(u + i, len - i);
    char tmp[8];
    if (n == 1 && (u[i] == '"' || u[i] == '\\')) {
      tmp[0] = '\\';
      tmp[1] = (char)u[i];
      n = 1;
      if (o + 2 >= buflen) break;
      memcpy(buf + o, tmp, 2);
      o += 2;
    } else if (n == 0 || (n == 1 && (u[i] < 0x20 || u[i] == 0x7f))) {
      /* Not text a terminal shows as it is: one byte, escaped. */
      snprintf(tmp, sizeof(tmp), "\\x%02x", u[i]);
      n = 1;
      if (o + 4 >= buflen) break;
      memcpy(buf + o, tmp, 4);
      o += 4;
    } else {
      /* A whole character or nothing: never half of one. */
      if (i + n > max_shown || o + n >= buflen) break;
      memcpy(buf + o, s + i, n);
      o += n;
    }
    i += n;
  }
  buf[o] = '\0';
  return i;
}

void proto_show_text(const char *s, size_t len, size_t max_shown, char *buf, size_t buflen) {
  if (buflen < 4) {
    if (buflen) buf[0] = '\0';
    return;
  }
  if (proto_escape_text(s, len, max_shown, buf, buflen - 3) < len)
    memcpy(buf + strlen(buf), "...", 4);
}

void proto_describe_text(const char *s, size_t len, char *buf, size_t buflen) {
  size_t o, shown;
  if (buflen < 8) {
    if (buflen) buf[0] = '\0';
    return;
  }
  buf[0] = '"';
  shown = proto_escape_text(s, len, MAX_SHOWN, buf + 1, buflen - 5);
  o = 1 + strlen(buf + 1);
  if (shown < len) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o++] = '"';
  buf[o] = '\0';
}
