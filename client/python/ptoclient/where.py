# SPDX-License-Identifier: Apache-2.0
"""PyPTO's where-to-run fields: RunConfig.platform and RunConfig.device_id.

PyPTO picks the chip from the RunConfig (``run(prog, ..., config=
RunConfig(platform="a2a3", device_id=1))``); ptod is one daemon per device,
so here device_id picks the daemon (run() connects to that device's socket)
and both fields are checked against the daemon a dispatch reaches, with a
clear error instead of a run on the wrong device.
"""

from typing import Any, Dict, Iterable, Optional, Tuple

from .config import as_config, platform_matches

__all__ = ["check_where", "where_needed", "where_mismatch", "run"]


def where_needed(config: Any) -> Any:
    """config as a RunConfig when it sets platform or device_id (the daemon
    must be asked where it runs), else None."""
    cfg = as_config(config)
    if cfg is None or (cfg.platform is None and cfg.device_id is None):
        return None
    return cfg


def where_mismatch(cfg: Any, where: Tuple[Any, Any], socket_path: str) -> Optional[str]:
    """Why cfg cannot run on the daemon at socket_path whose (device,
    platform) is where, or None when it can."""
    device, platform = where
    if cfg.platform is not None and not platform_matches(cfg.platform, platform):
        return ("RunConfig(platform=%r) cannot run on the daemon at %s: it runs "
                "platform %r. Connect to a daemon of that platform, or use "
                "platform=%r (or None)." % (cfg.platform, socket_path, platform, platform))
    if cfg.device_id is not None and cfg.device_id != device:
        return ("RunConfig(device_id=%d) cannot run on the daemon at %s: it owns "
                "device %s. Use Client(device=%d) or ptoclient.run(), which connect "
                "to that device's socket." % (cfg.device_id, socket_path, device, cfg.device_id))
    return None


def check_where(client: Any, config: Any, timeout: Optional[float] = None) -> None:
    """Raise ValueError when config's platform or device_id is not that of
    the daemon behind client (asked once, with status); nothing when both
    are unset."""
    cfg = where_needed(config)
    if cfg is None:
        return
    if client.where is None:
        st = client.status(timeout)
        client.where = (st.get("device"), st.get("platform"))
    why = where_mismatch(cfg, client.where, client.socket_path)
    if why is not None:
        raise ValueError(why)


def run(program: str, args: Iterable[Any] = (), config: Any = None,
        deadline_ms: Optional[int] = None, timeout: Optional[float] = None) -> Dict[str, Any]:
    """One dispatch on a connection of its own, as PyPTO's run(): to the
    daemon of config's device_id (its built-in socket) when set, else to the
    default one (Client(): $PTOD_SOCKET, else device 0).  config may be a
    ptoclient or a PyPTO RunConfig.  Returns the result map."""
    from .client import DEFAULT_TIMEOUT, Client

    cfg = as_config(config)
    device = cfg.device_id if cfg is not None else None
    with Client(device=device, timeout=DEFAULT_TIMEOUT if timeout is None else timeout) as c:
        return c.dispatch(program, args, cfg, deadline_ms)
