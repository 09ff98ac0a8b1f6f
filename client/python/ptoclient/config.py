# SPDX-License-Identifier: Apache-2.0
"""RunConfig: the per-dispatch configuration, validated at construction.

The ring fields follow PyPTO's RunConfig and ptod's include/pto/sizing.h
word for word, so a bad value gives the same ValueError text here as the
daemon's INVALID_CONFIG would:

    ring_task_window must be a power of 2 >= 4, got 3            (and <= 2^30)
    ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000
    ring_dep_pool must be in [4, INT32_MAX], got 2
    ring_heap must have exactly 4 entries (one per scope-depth ring), got 3
    ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got 1000

Values are shown as the daemon shows them: ``got true``, ``got 1.5``,
``got "1M"``, ``got nil`` (a None entry in a list).
"""

import math
from typing import Any, Dict, List, Optional, Union

import msgpack

__all__ = ["RunConfig", "RING_FIELDS", "MAX_TASK_WINDOW", "INT32_MAX", "PLATFORMS", "as_config"]

INT32_MAX = 2**31 - 1
MAX_TASK_WINDOW = 1 << 30
_UINT64_LIMIT = 1 << 64
# A ring field: one value for all four rings, or four (0 keeps a ring's default).
RingValue = Union[int, List[int], tuple]

RING_FIELDS = ("ring_task_window", "ring_heap", "ring_dep_pool")
_SCALAR_RULE = {
    "ring_task_window": "be a power of 2 >= 4",
    "ring_heap": "be a power of 2 >= 1024 (bytes per ring)",
    "ring_dep_pool": "be in [4, INT32_MAX]",
}
_ENTRY_RULE = {
    "ring_task_window": "be a power of 2 >= 4",
    "ring_heap": "be a power of 2 >= 1024",
    "ring_dep_pool": "be in [4, INT32_MAX]",
}
_OTHER_FIELDS = ("aicpu_thread_num", "enable_swimlane", "enable_scope_stats", "enable_dep_gen")
KNOWN_KEYS = RING_FIELDS + _OTHER_FIELDS
# Client-side fields: where to run, never sent in the config map.
_WHERE_FIELDS = ("platform", "device_id")
# PyPTO's platforms, and ptod's own name for its CPU simulation.
PLATFORMS = ("a2a3sim", "a2a3", "a5sim", "a5", "sim")
# The DFX attributes of a PyPTO RunConfig that ptod's config map has, by
# PyPTO name -> ptod name; the others it has (enable_dump_args, enable_pmu)
# are sent under their own names when set, so a daemon that lacks them says
# so (INVALID_REQUEST) instead of dropping them.
_PYPTO_DFX = {"enable_chip_swimlane": "enable_swimlane", "enable_scope_stats": "enable_scope_stats",
              "enable_dep_gen": "enable_dep_gen"}
_PYPTO_UNSUPPORTED_DFX = ("enable_dump_args", "enable_pmu")
_SHOWN_MAX = 40    # bytes of a string shown in a message, as proto/sizing.c
_SHOWN_CAP = 96


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _ring_value_valid(field, v):
    if v <= 0 or v >= _UINT64_LIMIT:
        return False
    if field == "ring_task_window":
        return v & (v - 1) == 0 and 4 <= v <= MAX_TASK_WINDOW
    if field == "ring_heap":
        return v & (v - 1) == 0 and v >= 1024
    return 4 <= v <= INT32_MAX


def _show_float(d):
    # The shortest %g text that reads back as d, with ".0" on integral values
    # (proto/sizing.c show_double).
    if math.isnan(d):
        return "nan"
    if math.isinf(d):
        return "-inf" if d < 0 else "inf"
    text = "%.17g" % d
    for prec in range(1, 18):
        text = "%.*g" % (prec, d)
        if float(text) == d:
            break
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def _show_str(s):
    # Quoted, escaped byte by byte, cut at 40 bytes (proto/sizing.c show_quoted).
    raw = s.encode("utf-8", "surrogatepass")
    out = '"'
    for c in raw[:_SHOWN_MAX]:
        if c in (0x22, 0x5C):
            piece = "\\" + chr(c)
        elif c < 0x20 or c >= 0x7F:
            piece = "\\x%02x" % c
        else:
            piece = chr(c)
        if len(out) + len(piece) + 5 >= _SHOWN_CAP:
            break
        out += piece
    if len(raw) > _SHOWN_MAX:
        out += "..."
    return out + '"'


def _show(v):
    """A value as the daemon's messages render it (proto/describe.c)."""
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _show_float(v)
    if isinstance(v, str):
        return _show_str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "a bin of %d bytes" % len(bytes(v))
    if isinstance(v, (list, tuple)):
        return "an array of %d" % len(v)
    if isinstance(v, dict):
        return "a map of %d" % len(v)
    return repr(v)


def _check_ring(field, value):
    """Validate one ring field; returns the normalised value (None, an int,
    or a list of 4 ints).  Raises ValueError with the RunConfig message."""
    if value is None:
        return None
    if _is_int(value):
        if not _ring_value_valid(field, value):
            raise ValueError("%s must %s, got %s" % (field, _SCALAR_RULE[field], value))
        return value
    if isinstance(value, (list, tuple)):
        if len(value) != 4:
            raise ValueError("%s must have exactly 4 entries (one per scope-depth ring), got %d"
                             % (field, len(value)))
        for entry in value:
            if not _is_int(entry) or (entry != 0 and not _ring_value_valid(field, entry)):
                raise ValueError("%s entries must %s (or 0 to keep default), got %s"
                                 % (field, _ENTRY_RULE[field], _show(entry)))
        return list(value)
    raise ValueError("%s must %s, got %s" % (field, _SCALAR_RULE[field], _show(value)))


def _check_other(field, value):
    if value is None:
        return None
    if field == "aicpu_thread_num":
        if _is_int(value) and (value == 0 or 2 <= value <= 16):
            return value or None
        raise ValueError("aicpu_thread_num must be an integer in [2, 16] (0 or nil to leave it "
                         "unset), got %s." % _show(value))
    if field == "enable_swimlane":
        # PyPTO's RunConfig reads a bool as a level: True is 4, False is 0.
        if isinstance(value, bool):
            return 4 if value else 0
        if _is_int(value) and 0 <= value <= 4:
            return value
        raise ValueError("enable_swimlane must be an integer in [0, 4], got %s." % _show(value))
    if isinstance(value, bool):
        return value
    raise ValueError("%s must be a boolean, got %s." % (field, _show(value)))


def _check_where(field, value):
    if value is None:
        return None
    if field == "platform":
        if not isinstance(value, str) or value not in PLATFORMS:
            raise ValueError("Invalid platform %r. Expected 'a2a3sim', 'a2a3', 'a5sim', 'a5' "
                             "or ptod's 'sim'." % (value,))
        return value
    if not _is_int(value) or not 0 <= value <= 255:
        raise ValueError("device_id must be an integer in [0, 255], got %s." % _show(value))
    return value


def platform_matches(wanted: str, daemon_platform: str) -> bool:
    """Whether a RunConfig's platform may run on a daemon of daemon_platform:
    the same name, or a PyPTO simulation platform (a2a3sim, a5sim) on ptod's
    CPU simulation (sim)."""
    if wanted == daemon_platform:
        return True
    return daemon_platform == "sim" and wanted.endswith("sim")


def _check_extra(extra):
    if extra is None:
        return {}
    if not hasattr(extra, "items"):
        raise ValueError("extra must be a mapping of config key to value, got %s."
                         % _show(extra))
    out = {}
    for key, value in extra.items():
        if not isinstance(key, str) or not key:
            raise ValueError("extra keys must be non-empty strings, got %s." % _show(key))
        if key in KNOWN_KEYS:
            raise ValueError("extra key '%s' is a RunConfig field; pass it as RunConfig(%s=...) "
                             "so that it is validated." % (key, key))
        try:
            msgpack.packb(value, use_bin_type=True)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError("extra['%s'] cannot be sent as msgpack: %s; use ints, floats, "
                             "bools, strings, bytes, lists or dicts." % (key, exc)) from None
        out[key] = value
    return out


class RunConfig:
    """The per-dispatch config (the ``config`` map of ``dispatch`` and
    ``prewarm``).  Every field is optional; None leaves it unset, so the
    daemon falls back to the PTO2_RING_* environment, its config file and the
    compile-time defaults, in that order.

    ring_task_window, ring_heap, ring_dep_pool: an int for all four rings, or
        4 ints, one per scope-depth ring, where 0 keeps that ring's
        lower-precedence value.  Tuples become lists.  A scalar 0, bools,
        floats and strings are rejected (ValueError, the RunConfig texts).
    aicpu_thread_num: 2..16 (0 is the same as None).
    enable_swimlane: 0..4 (a bool is read as PyPTO does: True = 4, False = 0).
    enable_scope_stats, enable_dep_gen: bool.
    platform: where the dispatch must run ('a2a3sim', 'a2a3', 'a5sim', 'a5',
        or ptod's 'sim'), as PyPTO's RunConfig: checked against the daemon's
        platform at dispatch (a simulation platform runs on ptod's sim);
        never sent.  None: any.
    device_id: the device whose socket ptoclient.run() connects to, and that
        Client.dispatch() checks it is talking to; never sent.  None: any.
    extra: {key: value} for config keys this client does not know yet; they
        are sent unchanged after the known ones, so a newer daemon gets them
        and an older one rejects them by name (INVALID_REQUEST) -- nothing is
        dropped silently.

    Assigning a field validates it again; to_wire() also re-validates, so a
    list mutated in place is caught before it is sent.
    """

    __slots__ = KNOWN_KEYS + _WHERE_FIELDS + ("extra",)
    extra: Dict[str, Any]  # always a dict once set (_check_extra)

    def __init__(self, ring_task_window: Optional[RingValue] = None,
                 ring_heap: Optional[RingValue] = None, ring_dep_pool: Optional[RingValue] = None,
                 *, platform: Optional[str] = None, device_id: Optional[int] = None,
                 aicpu_thread_num: Optional[int] = None,
                 enable_swimlane: Union[int, bool, None] = None,
                 enable_scope_stats: Optional[bool] = None, enable_dep_gen: Optional[bool] = None,
                 extra: Optional[Dict[str, Any]] = None) -> None:
        # Validation order follows PyPTO: the platform, then the rings in
        # field order.
        self.platform = platform
        self.device_id = device_id
        self.ring_task_window = ring_task_window
        self.ring_heap = ring_heap
        self.ring_dep_pool = ring_dep_pool
        self.aicpu_thread_num = aicpu_thread_num
        self.enable_swimlane = enable_swimlane
        self.enable_scope_stats = enable_scope_stats
        self.enable_dep_gen = enable_dep_gen
        self.extra = extra  # type: ignore[assignment]  # __setattr__ makes it a dict

    def __setattr__(self, name, value):
        if name in RING_FIELDS:
            value = _check_ring(name, value)
        elif name in _OTHER_FIELDS:
            value = _check_other(name, value)
        elif name in _WHERE_FIELDS:
            value = _check_where(name, value)
        elif name == "extra":
            value = _check_extra(value)
        object.__setattr__(self, name, value)

    @classmethod
    def from_dict(cls, mapping):
        """A RunConfig from a wire-style map: known keys become fields (and
        are validated), every other key goes to ``extra`` unchanged."""
        if isinstance(mapping, RunConfig):
            return mapping
        if not hasattr(mapping, "items"):
            raise ValueError("A config must be a RunConfig or a mapping, got %s."
                             % _show(mapping))
        known = {k: v for k, v in mapping.items() if k in KNOWN_KEYS}
        extra = {k: v for k, v in mapping.items() if k not in KNOWN_KEYS}
        ring = {k: known.pop(k) for k in RING_FIELDS if k in known}
        return cls(**ring, **known, extra=extra)

    def replace(self, **changes):
        """A copy with some fields changed (validated like the constructor)."""
        fields = self.to_dict()
        fields.update(changes)
        return RunConfig(**fields)

    @classmethod
    def from_pypto(cls, rc):
        """A RunConfig from PyPTO's (or any object with its attributes; see
        as_config).  Consumed: ring_task_window, ring_heap, ring_dep_pool,
        platform, device_id, aicpu_thread_num, and the DFX attributes
        enable_chip_swimlane (as enable_swimlane), enable_scope_stats,
        enable_dep_gen; enable_dump_args and enable_pmu are sent as given
        when set, and refused by a daemon without them.  Ignored, as PyPTO's
        own L3 dispatch path ignores them: the compile-side and harness
        fields (strategy, backend_type, dump_passes, save_kernels*,
        codegen_only, rtol, atol, golden_data_dir, compile_profiling,
        distributed_config, ...)."""
        def set_value(name):
            # PyPTO's defaults (None, 0, False) mean "off": leave them unset.
            value = getattr(rc, name, None)
            return None if value is None or value is False or value == 0 else value
        fields = {k: getattr(rc, k, None) for k in RING_FIELDS + _WHERE_FIELDS}
        fields["aicpu_thread_num"] = set_value("aicpu_thread_num")
        for pypto_name, ours in _PYPTO_DFX.items():
            fields[ours] = set_value(pypto_name)
        extra = {k: set_value(k) for k in _PYPTO_UNSUPPORTED_DFX if set_value(k) is not None}
        return cls(**fields, extra=extra)

    def to_dict(self):
        """Every field, set or not (constructor keywords)."""
        out = {k: getattr(self, k) for k in KNOWN_KEYS + _WHERE_FIELDS}
        for k in RING_FIELDS:
            if isinstance(out[k], list):
                out[k] = list(out[k])
        out["extra"] = dict(self.extra)
        return out

    def to_wire(self) -> Dict[str, Any]:
        """The dispatch ``config`` map: only the fields that are set, then
        ``extra`` as given.  Empty when nothing is set."""
        wire = {}
        for k in KNOWN_KEYS:
            value = getattr(self, k)
            if k in RING_FIELDS:
                value = _check_ring(k, value)   # a list may have been changed in place
            if value is not None:
                wire[k] = value
        wire.update(self.extra)
        return wire

    def is_empty(self):
        return not self.to_wire()

    def __eq__(self, other):
        if not isinstance(other, RunConfig):
            return NotImplemented
        return (self.to_wire() == other.to_wire()
                and all(getattr(self, k) == getattr(other, k) for k in _WHERE_FIELDS))

    def __repr__(self):
        parts = ["%s=%r" % (k, getattr(self, k)) for k in _WHERE_FIELDS
                 if getattr(self, k) is not None]
        parts += ["%s=%r" % (k, v) for k, v in self.to_wire().items() if k in KNOWN_KEYS]
        if self.extra:
            parts.append("extra=%r" % (self.extra,))
        return "RunConfig(%s)" % ", ".join(parts)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value


def _looks_like_pypto(config):
    return not hasattr(config, "items") and all(hasattr(config, k) for k in RING_FIELDS)


def as_config(config: Any) -> Optional["RunConfig"]:
    """None, a RunConfig, a mapping (see RunConfig.from_dict), or PyPTO's
    RunConfig -- any object with ring_task_window, ring_heap and
    ring_dep_pool attributes (see RunConfig.from_pypto) -> RunConfig or None."""
    if config is None:
        return None
    if isinstance(config, RunConfig):
        return config
    if _looks_like_pypto(config):
        return RunConfig.from_pypto(config)
    return RunConfig.from_dict(config)
