"""The studio's web application (Starlette) and its server (uvicorn).

One HTML page with plain JavaScript calls the JSON endpoints below; the charts are drawn by the
``plotly.min.js`` that ships inside the plotly Python package, served from here (no network).

Endpoints (every answer is JSON; an error is ``{"error": message}`` with status 400, 413 for a
body over the size limit):

========================  =====================================================================
``GET  /``                the page
``GET  /static/NAME``     its script, style sheet, plotly.min.js and the demo CSV
``GET  /api/options``     divergences and limits for the controls
``GET  /api/demo``        the built-in demo pair
``POST /api/pasted``      ``{"p0": text, "p1": text}`` -> the validated pair
``POST /api/columns``     the file's bytes, ``?name=FILE`` -> its columns and a guess of the
                          label, P0 and P1 columns (the page's column pickers)
``POST /api/upload``      the file's bytes, ``?name=FILE.csv|.parquet|.json`` and optionally
                          ``&label=COL&p0=COL&p1=COL`` -> the validated pair
``POST /api/design``      pair + ``eps``, ``divergence``, ``param``, ``max_outputs``
``POST /api/curve``       pair + ``eps_min``, ``eps_max``, ``points``, ``divergence``, ...
``POST /api/deployment``  pair + design fields + ``alpha``, ``beta``
``POST /api/mechanism``   pair + design fields (+ ``which``) -> the mechanism file
``POST /api/decide``      a ``decide`` problem file's bytes, ``?name=...&eps=...``
``POST /api/reports``     pair + design fields (or ``mechanism_file``: a mechanism file's text)
                          + ``reports`` (a reports CSV's text), ``alpha``, ``confidence``,
                          ``delta`` -> the test, the mixture estimate, the shuffled central eps
``POST /api/check``       ``text`` (a pasted matrix) or ``file`` (base64) + ``name``, optional
                          pair + design fields -> the exact eps, the worst pair, the optimal
                          mechanism beside it (:mod:`ldpopt.studio.check`)
``POST /api/target``      pair + ``n``, ``alpha``, ``beta``, ``divergence`` -> the smallest eps
========================  =====================================================================

Security: the server binds to 127.0.0.1 unless told otherwise and answers only requests whose
Host header names the address it serves or this machine (no DNS rebinding; IPv6 addresses in any
spelling, ``[::1]:8765``); it reads nothing from disk but its
own package files and writes nothing; request bodies are capped (:data:`MAX_UPLOAD_BYTES`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import signal
import threading
import webbrowser
from collections.abc import Callable, Collection
from importlib import resources
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ldpopt._json import loads_strict
from ldpopt.deploy.pairs import read_pair
from ldpopt.studio import check, core

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "MAX_UPLOAD_BYTES",
    "MAX_REQUEST_BYTES",
    "SHUTDOWN_GRACE",
    "StudioStopped",
    "create_app",
    "host_name",
    "host_of_header",
    "page_url",
    "serve",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: largest uploaded file (a CSV of 10 000 symbols with long labels is ~1 MB)
MAX_UPLOAD_BYTES = 2 * 1024 * 1024
#: largest JSON request (a pair of MAX_K symbols with labels, as the page sends it)
MAX_REQUEST_BYTES = 4 * 1024 * 1024
_STATIC = {
    "studio.js": "text/javascript; charset=utf-8",
    "studio.css": "text/css; charset=utf-8",
    "demo.csv": "text/csv; charset=utf-8",
}
_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'"
    ),
}


#: the names of this machine, always answered (as :func:`host_name` spells them)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: hosts that bind every address: the server then answers any Host header
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


class _TooLarge(Exception):
    pass


def host_name(host: str) -> str:
    """A host name or address in one spelling: lower case, an IP address in its compressed form
    and without the brackets of a URL (``"[0:0::1]"`` -> ``"::1"``)."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return ipaddress.ip_address(name).compressed
    except ValueError:
        return name


def host_of_header(header: str) -> str | None:
    """The host a Host header names (``name``, ``name:port``, ``[IPv6]``, ``[IPv6]:port``, or a bare
    IPv6 address, which no port can follow) as :func:`host_name` spells it; None when malformed."""
    text = header.strip()
    if text.startswith("["):
        end = text.find("]")
        port = text[end + 1 :]
        if end < 0 or (port and not (port[0] == ":" and port[1:].isdigit())):
            return None
        return host_name(text[1:end])
    if text.count(":") > 1:
        return host_name(text)
    name, sep, port = text.partition(":")
    if not name or (sep and not port.isdigit()):
        return None
    return host_name(name)


class _HostCheck:
    """Answer only requests whose Host header names one of ``allowed`` (:func:`host_name`
    spellings); others get a plain 400.  (Starlette's TrustedHostMiddleware compares the header's
    host as text, so ``[0:0::1]`` is not ``::1``, and the older releases that the ``studio`` extra
    admits cut ``[::1]:8765`` at its first colon.)"""

    def __init__(self, app: ASGIApp, allowed: Collection[str]) -> None:
        self.app = app
        self.allowed = frozenset(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            header = Headers(scope=scope).get("host")
            if header is None or host_of_header(header) not in self.allowed:
                await PlainTextResponse("Invalid host header", status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def page_url(host: str, port: int) -> str:
    """The page's address for a browser: a wildcard host reads as this machine, an IPv6 address
    goes in brackets."""
    name = host_name(host)
    name = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(name, name)
    return f"http://[{name}]:{port}/" if ":" in name else f"http://{name}:{port}/"


def _package_file(name: str) -> bytes:
    return resources.files("ldpopt.studio").joinpath("static", name).read_bytes()


def _plotly_js() -> bytes:
    return resources.files("plotly").joinpath("package_data", "plotly.min.js").read_bytes()


async def _body(request: Request, limit: int) -> bytes:
    """The request body, refused (413) past ``limit`` bytes without reading the rest."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge(f"the request is {int(declared)} bytes; the limit is {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge(f"the request is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _json_body(request: Request) -> dict:
    data = await _body(request, MAX_REQUEST_BYTES)
    try:
        doc = loads_strict(data.decode("utf-8"), "request")
    except UnicodeDecodeError:
        raise ValueError("request: not UTF-8 text") from None
    if not isinstance(doc, dict):
        raise ValueError("request: expected a JSON object")
    return doc


def _json(payload: Any, status: int = 200) -> Response:
    # strict JSON: core returns no NaN or infinity (None in their place)
    return Response(
        json.dumps(payload, allow_nan=False),
        status_code=status,
        media_type="application/json",
        headers=_HEADERS,
    )


def _settle(fut: asyncio.Future, result: Any, exc: BaseException | None) -> None:
    if fut.cancelled():  # the request was abandoned (the server is stopping)
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)


async def run_off_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a daemon thread of its own, awaited: the event loop keeps answering, and a
    stopping server abandons the computation instead of waiting for it (a worker pool's threads
    would be joined when the process exits, for as long as the computation takes)."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def work() -> None:
        result, error = None, None
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the awaiting request, which reports it
            error = exc
        try:
            loop.call_soon_threadsafe(_settle, fut, result, error)
        except RuntimeError:  # the loop is closed: nobody waits for this answer any more
            pass

    threading.Thread(target=work, name="ldpopt-studio-request", daemon=True).start()
    return await fut


def _guard(handler: Callable) -> Callable:
    """Run ``handler``; the library's ValueError/TypeError (bad input) is a 400 with its message."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except asyncio.CancelledError:  # the server stops: the page goes away with it
            return _json({"error": "the studio is stopping"}, 503)
        except _TooLarge as exc:
            return _json({"error": str(exc)}, 413)
        except (ValueError, TypeError) as exc:
            return _json({"error": str(exc)}, 400)
        except Exception as exc:  # a failure of ours: one line in the page, the server goes on
            return _json({"error": f"internal error ({type(exc).__name__}: {exc})"}, 500)

    return run


def _compute(fn: Callable[[dict], Any]) -> Callable:
    @_guard
    async def handler(request: Request) -> Response:
        req = await _json_body(request)
        return _json(await run_off_loop(fn, req))

    return handler


@_guard
async def _pasted(request: Request) -> Response:
    req = await _json_body(request)
    return _json(await run_off_loop(core.parse_pasted, req.get("p0"), req.get("p1")))


def _upload_name(request: Request) -> str:
    name = request.query_params.get("name", "")
    if not name or len(name) > 200:
        raise ValueError("the upload needs its file name (?name=FILE.csv), at most 200 characters")
    return name


def _read_upload(name: str, data: bytes, columns: dict[str, str] | None = None) -> dict:
    """An uploaded pair file (CSV, Parquet or JSON; counts or probabilities) read in memory by
    :func:`ldpopt.read_pair`: its columns ``p0``, ``p1`` and optionally ``label``, or the ones
    ``columns`` names (``label``, ``p0``, ``p1``; an empty label: none)."""
    if not columns:
        pair = read_pair(data, label="label", normalize=True, optional_label=True, filename=name)
    else:
        label = columns.get("label") or None
        pair = read_pair(
            data, columns.get("p0") or "p0", columns.get("p1") or "p1", label, normalize=True, filename=name
        )
    return core.pair_payload(*pair.as_dicts())


def _column_choice(request: Request) -> dict[str, str] | None:
    chosen = {k: request.query_params[k] for k in ("label", "p0", "p1") if k in request.query_params}
    for key, value in chosen.items():
        if len(value) > 200:
            raise ValueError(f"{key}: a column name of at most 200 characters, got {len(value)}")
    return chosen or None


@_guard
async def _upload(request: Request) -> Response:
    name = _upload_name(request)
    chosen = _column_choice(request)
    data = await _body(request, MAX_UPLOAD_BYTES)
    return _json(await run_off_loop(_read_upload, name, data, chosen))


@_guard
async def _columns(request: Request) -> Response:
    name = _upload_name(request)
    data = await _body(request, MAX_UPLOAD_BYTES)
    return _json(await run_off_loop(core.columns, data, name))


@_guard
async def _decide(request: Request) -> Response:
    name = _upload_name(request)
    data = await _body(request, MAX_UPLOAD_BYTES)
    eps = request.query_params.get("eps", "")
    return _json(await run_off_loop(core.decide, data, name, eps))


@_guard
async def _mechanism(request: Request) -> Response:
    req = await _json_body(request)
    text = await run_off_loop(core.mechanism_file, req)
    headers = {**_HEADERS, "Content-Disposition": 'attachment; filename="mechanism.json"'}
    return Response(text, media_type="application/json", headers=headers)


def create_app(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> Starlette:
    """The studio application; it answers requests addressed to ``host`` (and to localhost)."""
    files = {name: _package_file(name) for name in ("index.html", *_STATIC)}
    files["plotly.min.js"] = _plotly_js()
    types = {**_STATIC, "plotly.min.js": "text/javascript; charset=utf-8"}
    demo = _read_upload("demo.csv", files["demo.csv"])

    async def page(request: Request) -> Response:
        return Response(files["index.html"], media_type="text/html; charset=utf-8", headers=_HEADERS)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in types:
            return _json({"error": f"no such file: {name}"}, 404)
        # plotly.js changes only with the installed plotly: let the browser keep it
        cache = "max-age=86400" if name == "plotly.min.js" else "no-cache"
        return Response(files[name], media_type=types[name], headers={**_HEADERS, "Cache-Control": cache})

    async def options(request: Request) -> Response:
        return _json(core.options())

    async def demo_pair(request: Request) -> Response:
        return _json(demo)

    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/api/options", options),
        Route("/api/demo", demo_pair),
        Route("/api/pasted", _pasted, methods=["POST"]),
        Route("/api/upload", _upload, methods=["POST"]),
        Route("/api/design", _compute(core.design), methods=["POST"]),
        Route("/api/curve", _compute(core.curve), methods=["POST"]),
        Route("/api/deployment", _compute(core.deployment), methods=["POST"]),
        Route("/api/mechanism", _mechanism, methods=["POST"]),
        Route("/api/decide", _decide, methods=["POST"]),
        Route("/api/columns", _columns, methods=["POST"]),
        Route("/api/reports", _compute(core.reports), methods=["POST"]),
        Route("/api/check", _compute(check.check), methods=["POST"]),
        Route("/api/target", _compute(check.target), methods=["POST"]),
    ]
    name = host_name(host)
    if name in _WILDCARDS:
        return Starlette(routes=routes)
    return Starlette(routes=routes, middleware=[Middleware(_HostCheck, allowed=_LOOPBACK | {name})])


#: seconds the server waits, once told to stop, for requests in progress before it cancels them
#: (a design the page asked for is abandoned: the page is going away with the server)
SHUTDOWN_GRACE = 0.5


class StudioStopped(Exception):
    """The studio was told to stop by a signal (``signum``: SIGTERM, SIGHUP); Ctrl-C raises
    ``KeyboardInterrupt`` as usual."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stopped(signum: int, frame: Any) -> None:
    raise StudioStopped(signum)


class _QuietCancel(logging.Filter):
    """Drop uvicorn's line about the requests it cancels when the grace period ends: stopping
    abandons them by design, and the command says that it stopped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Cancel ")


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, open_browser: bool = False) -> None:
    """Run the studio until interrupted; ``open_browser``: open the page once the server is up.

    It stops within :data:`SHUTDOWN_GRACE` seconds (plus the time to close its sockets) of a
    SIGTERM or SIGHUP, and raises :class:`StudioStopped` then (``KeyboardInterrupt`` for Ctrl-C),
    so that the caller can say so; requests still running are abandoned.
    """
    bind = host_name(host)  # "[::1]" binds as "::1"
    config = uvicorn.Config(
        create_app(host, port),
        host=bind,
        port=port,
        log_level="warning",
        # annotated int, used as asyncio.timeout(seconds), which takes a float
        timeout_graceful_shutdown=SHUTDOWN_GRACE,  # type: ignore[arg-type]
    )
    server = uvicorn.Server(config)
    logging.getLogger("uvicorn.error").addFilter(_QuietCancel())
    if open_browser:

        def opener() -> None:
            while not server.started and not server.should_exit:
                threading.Event().wait(0.05)
            if server.started:
                webbrowser.open(page_url(host, port))

        threading.Thread(target=opener, daemon=True).start()
    # uvicorn handles the signals while it runs, shuts down, restores the handlers it found and then
    # raises the signal again: with these handlers that ends run() with StudioStopped
    stops = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, _raise_stopped) for s in stops} if main else {}
    try:
        server.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
