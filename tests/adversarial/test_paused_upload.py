# SPDX-License-Identifier: Apache-2.0
"""A paused upload cut by client_timeout (issue 18, item 2): the daemon
pauses reading an honest client's upload because another client put all
clients over clients_memory; the time it keeps the upload paused must not
count against the upload's client_timeout (docs/protocol.md promises it).

On 934b52e the message clock kept running while the daemon was not reading
the connection, so the upload was cut the moment reading resumed ("took
more than client_timeout"): 3 of 3 honest 16 MiB uploads at 20 MiB/s were
cut after 4.1 s with client_timeout = 4s.
"""

import socket
import struct
import threading

import msgpack

from adversary import *  # noqa: F401,F403

MIB = 1 << 20
TIMEOUT_S = 6


def write_header(msgid, name, data_bytes):
    """A buffer.write request up to its data's body (a bin of data_bytes)."""
    empty = msgpack.packb([0, msgid, "buffer.write", [{"name": name, "data": b""}]],
                          use_bin_type=True)
    assert empty.endswith(b"\xc4\x00")
    return empty[:-2] + b"\xc6" + struct.pack(">I", data_bytes)


class PausedUpload(DaemonTest):
    def test_time_paused_by_the_daemon_is_not_the_clients(self):
        """An honest 8 MiB buffer.write, 1 MiB sent, is paused while an
        attacker's half-sent message holds all clients over clients_memory
        (8M) until client_timeout (6s) cuts the attacker; the upload, begun
        before the attacker's message, then completes and is answered."""
        d = self.daemon(config={"daemon": {"clients_memory": "8M", "max_message": "32M",
                                           "client_timeout": "%ds" % TIMEOUT_S}},
                        env=rss_env())
        upload = 8 * MIB
        with d.client() as honest:
            honest.call("buffer.alloc", {"name": "up", "bytes": upload})
            msgid = 7
            head = write_header(msgid, "up", upload)
            honest.send_raw(head + bytes(MIB))
            wait_until(lambda: d.status()["client_memory"]["input"] >= MIB,
                       what="the upload's first MiB to be read")

            attacker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            attacker.connect(d.socket)
            attacker.settimeout(120)
            attacker.sendall(write_header(1, "x", 32 * MIB - 128) + bytes(8 * MIB))
            wait_until(lambda: d.status()["client_memory"]["input"] >= 8 * MIB,
                       what="all clients to be over clients_memory")

            rest = threading.Thread(target=honest.send_raw, args=(bytes(upload - MIB),),
                                    daemon=True)
            rest.start()
            # The daemon keeps the upload paused meanwhile: an honest ping
            # still gets in (its allowance).
            self.assertEqual(honest_ping(d, timeout=30)["device"], 0)
            # The pressure ends when the attacker, stalled in the middle of
            # its message (and read meanwhile: its clock runs), is cut by
            # client_timeout; the upload, paused all that time, goes on.
            rest.join()
            result = honest.result(msgid)
            attacker.close()
        report(self, "paused-upload", honest_errors=0)
        self.assertEqual(result, {"bytes": upload})
        self.assertEqual(d.read_log().count("took more than client_timeout"), 1)

if __name__ == "__main__":
    main()
