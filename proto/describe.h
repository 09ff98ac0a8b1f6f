/* SPDX-License-Identifier: Apache-2.0 */
/* proto/describe.h — how a value someone sent is shown in an error
 * message: the one describer for every message of proto/ (sizing rules,
 * envelopes, params).  Text is quoted and escaped (\xNN for bytes a
 * terminal would not show, so a message stays valid UTF-8 whatever was
 * sent) and cut at 40 bytes; a float reads back as the same double and
 * keeps a ".0" when integral, as RunConfig echoes it. */
#ifndef PROTO_DESCRIBE_H
#define PROTO_DESCRIBE_H

#include <stddef.h>

#include <msgpack.h>

#include "describe_text.h"

/* nil, true, 42, -1, 1.5, 2.0, "text", "a bin of 3 bytes", "an array of 2",
 * "a map of 1", "an ext of type 5". */
void proto_describe(const msgpack_object *obj, char *buf, size_t len);

#endif
