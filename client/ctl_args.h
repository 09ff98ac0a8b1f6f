/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_args.h — ptoctl's parsing of command-line values: dispatch arguments,
 * data literals and files, sizes, --config-set values; and its exit codes.
 *
 * Functions return 0 or -CTL_EXIT_* (the exit code ptoctl should end
 * with) after writing a full sentence into msg.
 */
#ifndef CTL_ARGS_H
#define CTL_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>
#include <pto/client.h>

/* ptoctl's exit codes (documented in ptoctl(1)). */
enum {
  CTL_EXIT_OK = 0,
  CTL_EXIT_DAEMON = 1,   /* the daemon answered with an error */
  CTL_EXIT_USAGE = 2,    /* bad command line, or a value rejected before sending */
  CTL_EXIT_CONNECT = 3,  /* cannot connect, or the connection was lost */
  CTL_EXIT_TIMEOUT = 4,  /* --timeout passed without an answer */
  CTL_EXIT_FILE = 5,     /* a local file cannot be read or written */
  CTL_EXIT_PROTOCOL = 6, /* the answer was not understood, or out of memory */
};

/* The exit code for a library error code (or its negation). */
int ctl_exit_for(int code);

/* Bytes ptoctl owns (malloc'ed). */
typedef struct ctl_data {
  uint8_t *ptr;
  size_t len;
} ctl_data_t;

/* A data form:
 *   @FILE        the file's contents ("-" is not special)
 *   f32:1,2.5,-3 little-endian float32 values
 *   i32:1,-2     little-endian int32 values
 *   hex:00ff10   bytes in hex
 * Returns 0, 1 when text is none of these forms (nothing allocated), or
 * -CTL_EXIT_USAGE / -CTL_EXIT_FILE. */
int ctl_parse_data(const char *text, ctl_data_t *ret, char *msg, size_t msglen);

/* A size: digits with an optional K, M or G suffix (binary), as the config
 * file writes sizes.  Returns 0 or -CTL_EXIT_USAGE naming `what`. */
int ctl_parse_size(const char *what, const char *text, uint64_t *ret, char *msg, size_t msglen);

/* Dispatch arguments, one per command-line word:
 *   buf:NAME  buf:NAME:OFFSET:BYTES   a resident buffer, or a slice of it
 *   out:SIZE                          an output of SIZE bytes
 *   inout:DATA                        DATA copied in and back out
 *   in:DATA or DATA                   an input (a data form, above)
 *   int:N  float:X  or a bare number  a scalar (an integer if it reads as one)
 * A bare negative number needs `--` before it (or int:/float:). */
typedef struct ctl_args {
  pto_dispatch_arg_t *args;
  ctl_data_t *data; /* per argument, what args[i].data points into */
  uint32_t n;
} ctl_args_t;

int ctl_parse_args(char **words, int count, ctl_args_t *ret, char *msg, size_t msglen);
void ctl_args_free(ctl_args_t *a);

/* KEY=VALUE of --config-set into config: VALUE `true`/`false` -> bool,
 * `nil`/`null` -> nil, a decimal integer -> int, a number -> float,
 * "text" (quoted) or anything else -> string.  Sent untouched for keys the
 * library does not know; validated like the daemon for the ones it does. */
int ctl_config_set(pto_config_t *config, const char *assignment, char *msg, size_t msglen);

/* Write a whole file (mode 0644). */
int ctl_write_file(const char *path, const void *data, size_t len, char *msg, size_t msglen);

#endif
