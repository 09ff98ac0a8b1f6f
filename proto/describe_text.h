/* proto/describe_text.h — how a text someone sent is shown in an error
 * message (quoted, escaped, cut at 40 bytes; see describe.h).  Pure: the
 * sizing rules of ptorules use it without msgpack. */
#ifndef PROTO_DESCRIBE_TEXT_H
#define PROTO_DESCRIBE_TEXT_H

#include <stddef.h>

/* "text" for len bytes of s, quoted and escaped: \xNN for bytes a terminal
 * would not show, so a message stays valid UTF-8 whatever was sent. */
void proto_describe_text(const char *s, size_t len, char *buf, size_t buflen);

#endif
