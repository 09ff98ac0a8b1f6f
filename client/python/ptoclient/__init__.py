# SPDX-License-Identifier: Apache-2.0
"""ptoclient: the Python client of ptod, the per-device worker daemon.

Pure Python on msgpack (Debian's python3-msgpack).  See client/python/README.md.

    from ptoclient import Client, RunConfig, Buffer, Data, Out

    with Client() as c:               # $PTOD_SOCKET, else device 0's socket
        r = c.dispatch("vector_add", [Data(a), Data(b), Out(len(a))],
                       config=RunConfig(ring_heap=[512 << 20, 0, 0, 0]))
        print(r["arena"]["hit"], r["sizing"]["source"]["ring_heap"])

Large tensors go through shared memory instead (ptoclient.shm):
c.shm(nbytes) gives a region whose slices are arguments.
"""

from .shm import Region, ShmArg
from .args import Buffer, Data, InOut, Out, Scalar, encode_arg, encode_args, f32, from_f32
from .client import DEFAULT_TIMEOUT, Client, default_socket_path, socket_path_for
from .paths import UntrustedSocketWarning
from .config import INT32_MAX, MAX_TASK_WINDOW, PLATFORMS, RING_FIELDS, RunConfig, as_config
from .env import DEVICE_SOCKET_ENV_PREFIX, SOCKET_ENV, SizingEnvWarning, sizing_env_note
from .errors import (
    ERROR_CLASSES, AlreadyExists, Busy, CallTimeout, Cancelled, ClientError, ConnectFailed, ConnectionLost,
    DeadlineExceeded, DepPoolOverflow, ExplicitOrchFatal, FlowControlDeadlock, HeapRingDeadlock,
    Internal, InvalidArgs, InvalidConfig, InvalidRequest, MessageTooLarge, MultiDispatchError,
    NotFound, OutOfMemory, PermissionDenied, ProtocolError, PtoError, RuntimeFailure,
    SchedulerTimeout, ScopeDeadlock, ShuttingDown, TensormapOverflow, UnknownMethod,
    UnknownProgram, Unsupported, error_from_wire)
from .dfx import DfxRefused, save_dfx
from .multi import MultiResult, dispatch_many
from .where import check_where, run

PROTOCOL_VERSION = 1
# The release; pyproject.toml reads it, and the tests check it against CMake's.
__version__ = "0.1.0"

__all__ = [
    "Client", "RunConfig", "Buffer", "Data", "InOut", "Out", "Scalar", "dispatch_many",
    "MultiResult", "default_socket_path", "socket_path_for", "encode_arg", "encode_args",
    "f32", "from_f32", "as_config", "RING_FIELDS", "INT32_MAX", "MAX_TASK_WINDOW",
    "DEFAULT_TIMEOUT", "PROTOCOL_VERSION", "__version__", "PLATFORMS", "SOCKET_ENV",
    "DEVICE_SOCKET_ENV_PREFIX", "SizingEnvWarning", "sizing_env_note", "UntrustedSocketWarning",
    "check_where", "run", "save_dfx", "DfxRefused", "Region", "ShmArg",
    # errors
    "PtoError", "RuntimeFailure", "ClientError", "ConnectFailed", "ConnectionLost",
    "CallTimeout", "ProtocolError", "Unsupported", "MultiDispatchError", "error_from_wire", "ERROR_CLASSES",
    "ScopeDeadlock", "HeapRingDeadlock", "FlowControlDeadlock", "DepPoolOverflow",
    "InvalidArgs", "ExplicitOrchFatal", "TensormapOverflow", "SchedulerTimeout",
    "InvalidRequest", "InvalidConfig", "UnknownMethod", "UnknownProgram", "Busy",
    "DeadlineExceeded", "ShuttingDown", "OutOfMemory", "NotFound", "AlreadyExists",
    "PermissionDenied", "MessageTooLarge", "Internal", "Cancelled",
]
