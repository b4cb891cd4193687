"""Run the embedded server: event loop, listening socket, signals, housekeeping.

The server prints exactly one line on stdout once it listens
(`llmload-server listening on http://HOST:PORT`, https with --tls-cert/--tls-key: asyncio's
TLS transport under the same protocol), so a parent that asked for port 0 learns
the port; everything else goes to stderr. SIGTERM/SIGINT stop it cleanly (truth log
flushed). With `--exit-with-parent` it also stops when the process that started it dies,
so a killed test run leaves no server behind.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from collections.abc import Callable

from llmload.server.app import App
from llmload.server.config import ServerConfig, tls_context

READY_PREFIX = "llmload-server listening on "


def new_loop(use_uvloop: bool) -> asyncio.AbstractEventLoop:
    if use_uvloop:
        try:
            import uvloop

            return uvloop.new_event_loop()
        except ImportError:
            pass
    return asyncio.new_event_loop()


async def serve(cfg: ServerConfig, ready: Callable[[int, asyncio.Event], object] | None = None) -> None:
    loop = asyncio.get_running_loop()
    app = App(cfg, loop)
    context = tls_context(cfg)
    server = await loop.create_server(app.protocol, cfg.host, cfg.port, backlog=4096, reuse_address=True,
                                      ssl=context)
    port = server.sockets[0].getsockname()[1]
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass
    parent_pid = os.getppid()

    async def housekeeping() -> None:
        while not stop.is_set():
            await asyncio.sleep(0.5)
            app.state.truth.flush()  # the request log flushes every line itself
            if cfg.exit_with_parent and os.getppid() != parent_pid:
                stop.set()

    keeper = loop.create_task(housekeeping())
    # fewer, cheaper collections: startup objects never move again, and the per-chunk path
    # allocates only short-lived strings (a gen-2 pass over thousands of streams costs ms)
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)
    if ready is not None:
        ready(port, stop)
    else:
        print(f"{READY_PREFIX}{'https' if context else 'http'}://{cfg.host}:{port}", flush=True)
    try:
        await stop.wait()
    finally:
        keeper.cancel()
        server.close()
        app.close()


def run(cfg: ServerConfig) -> int:
    loop = new_loop(cfg.use_uvloop)
    try:
        loop.run_until_complete(serve(cfg))
    except OSError as exc:
        print(f"llmload-server: cannot listen on {cfg.host}:{cfg.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    finally:
        loop.close()
    return 0
