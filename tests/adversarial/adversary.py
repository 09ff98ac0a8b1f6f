"""What the adversarial tests share: the integration harness (imported from
tests/integration) and an honest client's view of a daemon under attack.

Each test starts a daemon, lets a hostile client do its worst, and checks
that an honest client sharing the daemon is still answered, correctly, and
that the daemon's memory stays within what it counts for the attacker.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from harness import *  # noqa: E402,F401,F403  (the harness is this suite's API)
import harness  # noqa: E402


def honest_ping(daemon, timeout=60):
    """One honest client's ping on a fresh connection: returns its result
    (the test fails with the RPC error or a timeout if it is not answered)."""
    with harness.Client(daemon.socket, timeout=timeout) as c:
        return c.call("ping")
