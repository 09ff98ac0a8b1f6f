#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""An asyncio HTTP serving front end on ptod: prefill, then decode steps,
each HTTP request with its own KV cache resident in the daemon.

    aio_frontend.py [--socket PATH | --device N] [--port P | --unix PATH]

    POST /generate  {"prompt": S, "steps": N, "seed": int}
        -> 200, application/x-ndjson: one line per position,
           {"pos": p, "out": [H*D floats]} (S prompt positions, then N
           decoded ones), then {"done": true}; the response's X-Request-Id
           is the request's (taken from the HTTP request, else generated)
    GET /stats      -> {"active": n, "finished": n, "disconnected": n}

The "model" is a toy: the query, key and value of position p are
pseudo-random f32[H,D] drawn from (seed, p) by token_qkv(), so a client
can check every output.  Per HTTP request the front end

1. allocates the KV cache f32[2, S+N, H, D] as a resident buffer;
2. runs attention_prefill over the prompt at priority PREFILL_PRIORITY (0):
   it fills kv[:, 0:S] and gives the prompt's outputs;
3. runs attention_decode once per new position at DECODE_PRIORITY (-1):
   decode steps are latency-critical, so the daemon runs them before the
   prefills of other requests waiting at the same time;
4. frees the cache, however the request ended.

All requests share one ptoclient.aio connection; every device call carries
the HTTP request's id (X-Request-Id, or a generated one), so the daemon's
log lines and errors name it.  When the HTTP client disconnects, the
handler's task is cancelled: the dispatch it awaits is cancelled with it,
ptoclient.aio sends ``cancel``, and the daemon drops the queued step (a
step already running finishes; its answer is dropped).  aiohttp 3.9 and
later do that with ``handler_cancellation=True``; Debian 12's 3.8 does not
cancel handlers, so start_runner() adds it.  A daemon without the protocol
1.2 features gets neither priorities, request ids nor cancel (it would
refuse the keys): the front end asks ``features`` once and sends only
what the daemon speaks.
"""

import argparse
import asyncio
import inspect
import itertools
import json
import os
import random
import signal
import string
import sys
import uuid
from typing import Any, Dict, List, Optional, Tuple

from aiohttp import web

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ptoclient.aio  # noqa: E402
from ptoclient import Buffer, Data, Out, PtoError, f32, from_f32  # noqa: E402

H, D = 2, 8          # heads, head dimension
HD = H * D
MAX_TOKENS = 1024    # prompt + steps, per request
PREFILL_PRIORITY = 0
DECODE_PRIORITY = -1
KV_PREFIX = "frontend.kv."
_ID_CHARS = frozenset(string.printable) - frozenset(string.whitespace) | {" "}


def token_qkv(seed: int, pos: int) -> Tuple[List[float], List[float], List[float]]:
    """The toy model: q, k, v (f32[H,D] each) of position pos."""
    rng = random.Random(seed * 1000003 + pos)
    return tuple([rng.uniform(-1.0, 1.0) for _ in range(HD)] for _ in range(3))  # type: ignore


def request_id_of(request: web.Request) -> str:
    """X-Request-Id when it is a valid ptod request id (1-64 printable
    ASCII characters), else a generated one; HTTPBadRequest when it is
    there but not valid."""
    rid = request.headers.get("X-Request-Id")
    if rid is None:
        return "gen-" + uuid.uuid4().hex
    if not 1 <= len(rid) <= 64 or not set(rid) <= _ID_CHARS:
        raise web.HTTPBadRequest(text="X-Request-Id must be 1 to 64 printable ASCII characters.\n")
    return rid


async def read_job(request: web.Request) -> Tuple[int, int, int]:
    """(prompt, steps, seed) of the JSON body; HTTPBadRequest when wrong."""
    try:
        body = await request.json()
        prompt, steps, seed = body["prompt"], body.get("steps", 0), body.get("seed", 0)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise web.HTTPBadRequest(text='The body must be {"prompt": S, "steps": N, "seed": int}.\n')
    if not all(type(x) is int for x in (prompt, steps, seed)) or prompt < 1 or steps < 0 \
            or prompt + steps > MAX_TOKENS:
        raise web.HTTPBadRequest(text="prompt >= 1, steps >= 0, prompt + steps <= %d, seed an int.\n"
                                 % MAX_TOKENS)
    return prompt, steps, seed


class Frontend:
    """The HTTP handlers over one ptoclient.aio connection (event loop
    thread only).  active / finished / disconnected count the generations."""

    def __init__(self, dev: ptoclient.aio.AsyncClient) -> None:
        self.dev = dev
        self.active = 0
        self.finished = 0
        self.disconnected = 0
        self._kv_ids = itertools.count()
        self._features: Optional[List[str]] = None
        self.tasks: Dict[Any, asyncio.Task] = {}  # HTTP connection -> its handler's task

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/generate", self.generate)
        app.router.add_get("/stats", self.stats)
        return app

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response({"active": self.active, "finished": self.finished,
                                  "disconnected": self.disconnected})

    async def _keys(self, priority: int, rid: str) -> Dict[str, Any]:
        """The protocol 1.2 keys of a device call, those the daemon speaks."""
        if self._features is None:
            self._features = await self.dev.features()
        keys: Dict[str, Any] = {}
        if "priority" in self._features:
            keys["priority"] = priority
        if "request_id" in self._features:
            keys["request_id"] = rid
        return keys

    async def generate(self, request: web.Request) -> web.StreamResponse:
        rid = request_id_of(request)
        prompt, steps, seed = await read_job(request)
        kv = KV_PREFIX + str(next(self._kv_ids))
        keys = await self._keys(PREFILL_PRIORITY, rid)
        self.active += 1
        self.tasks[request.protocol] = asyncio.current_task()  # type: ignore[assignment]
        try:
            try:
                await self.dev.buffer_alloc(kv, 2 * (prompt + steps) * HD * 4, **keys)
            except PtoError as exc:
                raise web.HTTPServiceUnavailable(text="%s\n" % exc, headers={"X-Request-Id": rid})
            resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson",
                                               "X-Request-Id": rid})
            await resp.prepare(request)
            await self._run(resp, kv, prompt, steps, seed, rid)
            await resp.write_eof()
            self.finished += 1
            return resp
        except (asyncio.CancelledError, ConnectionResetError):
            self.disconnected += 1  # the HTTP client went away
            raise
        finally:
            self.tasks.pop(request.protocol, None)
            # Shielded: a second cancel must not leave the cache allocated.
            await asyncio.shield(self._free(kv, keys))
            self.active -= 1

    async def _run(self, resp: web.StreamResponse, kv: str, prompt: int, steps: int, seed: int,
                   rid: str) -> None:
        tokens = [token_qkv(seed, pos) for pos in range(prompt)]
        q, k, v = ([x for t in tokens for x in t[i]] for i in range(3))
        try:
            r = await self.dev.dispatch(
                "attention_prefill", [Data(f32(q)), Data(f32(k)), Data(f32(v)), Buffer(kv),
                                      Out(prompt * HD * 4), prompt, H, D],
                **await self._keys(PREFILL_PRIORITY, rid))
            out = list(from_f32(r["outputs"][4]))
            for pos in range(prompt):
                await self._line(resp, {"pos": pos, "out": out[pos * HD:(pos + 1) * HD]})
            decode_keys = await self._keys(DECODE_PRIORITY, rid)
            for pos in range(prompt, prompt + steps):
                q, k, v = token_qkv(seed, pos)
                r = await self.dev.dispatch(
                    "attention_decode", [Data(f32(q)), Data(f32(k)), Data(f32(v)), Buffer(kv),
                                         Out(HD * 4), pos, H, D], **decode_keys)
                await self._line(resp, {"pos": pos, "out": list(from_f32(r["outputs"][4]))})
        except PtoError as exc:  # the status line is sent: say it in the stream
            await self._line(resp, {"error": exc.name, "message": str(exc)})
            return
        await self._line(resp, {"done": True})

    @staticmethod
    async def _line(resp: web.StreamResponse, obj: Dict[str, Any]) -> None:
        await resp.write(json.dumps(obj).encode() + b"\n")

    async def _free(self, kv: str, keys: Dict[str, Any]) -> None:
        try:
            await self.dev.buffer_free(kv, **keys)
        except PtoError:
            pass  # never allocated (or ptod is gone: a restarted daemon has no buffers)


def _cancel_on_disconnect(runner: web.AppRunner, frontend: Frontend) -> None:
    """aiohttp < 3.9: cancel a /generate handler when its HTTP connection
    is lost, as handler_cancellation=True does in later versions."""
    server = runner.server
    assert server is not None
    lost = server.connection_lost

    def connection_lost(handler: Any, exc: Optional[BaseException] = None) -> None:
        lost(handler, exc)
        task = frontend.tasks.pop(handler, None)
        if task is not None:
            task.cancel()

    server.connection_lost = connection_lost  # type: ignore[assignment]


async def start_runner(frontend: Frontend) -> web.AppRunner:
    """An AppRunner of frontend's app whose handlers are cancelled when
    their HTTP client disconnects; add a site and start it."""
    if "handler_cancellation" in inspect.signature(web.Server.__init__).parameters:
        runner = web.AppRunner(frontend.app(), handler_cancellation=True)
        await runner.setup()
    else:
        runner = web.AppRunner(frontend.app())
        await runner.setup()
        _cancel_on_disconnect(runner, frontend)
    return runner


async def serve(opts: argparse.Namespace) -> None:
    async with ptoclient.aio.connect(opts.socket, device=opts.device) as dev:
        runner = await start_runner(Frontend(dev))
        try:
            if opts.unix:
                site: web.BaseSite = web.UnixSite(runner, opts.unix)
            else:
                site = web.TCPSite(runner, opts.host, opts.port)
            await site.start()
            print("serving on %s, ptod at %s" % (site.name, dev.socket_path), flush=True)
            stop = asyncio.Event()
            for sig in (signal.SIGINT, signal.SIGTERM):
                asyncio.get_running_loop().add_signal_handler(sig, stop.set)
            await stop.wait()
        finally:
            await runner.cleanup()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="the daemon's socket (default: $PTOD_SOCKET or the device's)")
    ap.add_argument("--device", type=int, default=None, help="device number (default 0)")
    ap.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=8080, help="HTTP port (default 8080)")
    ap.add_argument("--unix", help="serve HTTP on this Unix socket instead")
    opts = ap.parse_args()
    try:
        asyncio.run(serve(opts))  # until SIGINT or SIGTERM
    except PtoError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
