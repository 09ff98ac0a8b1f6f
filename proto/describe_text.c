/* The text describer of describe_text.h: pure, no msgpack, so the sizing
 * rules can quote what they were given without linking msgpack-c. */
#include "describe_text.h"

#include <stdio.h>
#include <string.h>

#define MAX_SHOWN 40

void proto_describe_text(const char *s, size_t len, char *buf, size_t buflen) {
  size_t o = 0;
  if (buflen < 8) {
    if (buflen) buf[0] = '\0';
    return;
  }
  buf[o++] = '"';
  for (size_t i = 0; i < len && i < MAX_SHOWN; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[8];
    int n;
    if (c == '"' || c == '\\')
      n = snprintf(tmp, sizeof(tmp), "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      n = snprintf(tmp, sizeof(tmp), "\\x%02x", c);
    else
      n = snprintf(tmp, sizeof(tmp), "%c", c);
    if (n < 0 || o + (size_t)n + 5 >= buflen) break;
    memcpy(buf + o, tmp, (size_t)n);
    o += (size_t)n;
  }
  if (len > MAX_SHOWN) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o++] = '"';
  buf[o] = '\0';
}
