"""The outbound HTTP policy: every connection llmload opens goes through here, and credentials stay with their origin.

How it works: a credential (the API key, every `--header` value, a URL's userinfo) is given for one origin, the
(scheme, host, port) of the URL it came with (`origin`). Three kinds of client open connections, each built here:
- the load, fast transport: `load_client`, a geventhttpclient `HTTPClient` bound to one host and port; it never
  follows a redirect (a 3xx is the attempt's answer: failure kind `redirect`, client/errors.Redirect);
- the load, SDK transports (openai, anthropic): `sdk_http_client`, the httpx2 client the SDK is given, with
  `follow_redirects=False`, and a request hook that refuses any request to another origin than the base URL's
  (`OriginBound`), should some SDK call ask to follow one: the SDK's requests cannot leave the origin;
- side requests (the server-metrics scrape of `--server-metrics`, a DCGM exporter's URL): `fetch`, a GET over
  urllib that follows a redirect only within the origin (at most MAX_REDIRECTS); a redirect to another origin is
  not followed, with or without credentials (`CrossOriginRedirect`, naming the target's origin only, never its
  path, query or userinfo). A URL's userinfo is taken out of it and sent as Basic auth, to that origin only.
The calibration probe, cache priming and every other request of a run go through the run's transport: the load's
policy. tests/unit/test_outbound_scan.py lists every place in llmload/ that can open a connection and fails when
a new one is not built here.
"""

from __future__ import annotations

import base64
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

MAX_REDIRECTS = 5
"""same-origin redirects a side request follows before it fails"""
DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, lower-cased, the default port filled in; ('', '', 0) when it has none."""
    parts = urlsplit((url or "").strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        port = 0
    return scheme, host, port


def same_origin(a: str, b: str) -> bool:
    return origin(a) == origin(b) and origin(a)[1] != ""


def origin_text(url: str) -> str:
    """`https://user:key@other.example:8443/v1?sig=x` -> `https://other.example:8443`: what a log line or report may
    name of a URL it was sent to (the default port left out; never the path, query or userinfo)."""
    scheme, host, port = origin(url)
    if not host:
        return "(no host)"
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + ("" if port == DEFAULT_PORTS.get(scheme) else f":{port}")


def split_userinfo(url: str) -> tuple[str, dict[str, str]]:
    """(the URL without userinfo, {'Authorization': 'Basic ...'} for it, or {} when it had none)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, {}
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=hostport)), {"Authorization": f"Basic {token}"}


class CrossOriginRedirect(OSError):
    """A side request answered with a redirect to another origin: not followed (the message names that origin only)."""

    def __init__(self, url: str, target: str, status: int) -> None:
        self.status = status
        self.source = origin_text(url)
        self.target = origin_text(target)
        """the redirect's origin (what may be shown of it)"""
        super().__init__(f"HTTP {status} redirect to {self.target}, another origin than {self.source}: not followed "
                         "(credentials stay with their origin)")


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirect handler, refusing a hop to another origin (its own would carry every header there)."""

    max_redirections = MAX_REDIRECTS

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        target = urljoin(req.full_url, newurl)
        if not same_origin(req.full_url, target) or "@" in urlsplit(target).netloc:
            raise CrossOriginRedirect(req.full_url, target, code)
        return super().redirect_request(req, fp, code, msg, headers, target)


Fetch = Callable[[str], tuple[int, str, str]]
"""url -> (HTTP status, content-type, body text); raises OSError (CrossOriginRedirect too) / urllib errors"""


def fetch(headers: dict[str, str], context: ssl.SSLContext | None, timeout_s: float, max_bytes: int) -> Fetch:
    """A side request's GET under the policy (module docstring): `headers` go to the URL's origin only, as does its
    userinfo (as Basic auth); an HTTP error status is returned, not raised."""
    opener = urllib.request.build_opener(_SameOriginRedirects(), urllib.request.HTTPSHandler(context=context))

    def get(url: str) -> tuple[int, str, str]:
        bare, auth = split_userinfo(url)
        request = urllib.request.Request(bare, headers={**auth, **headers})  # a given Authorization wins
        try:
            resp = opener.open(request, timeout=timeout_s)
        except urllib.error.HTTPError as exc:  # an error status: the caller judges it
            with exc:
                return exc.code, exc.headers.get("content-type", "") if exc.headers else "", ""
        with resp:
            body = resp.read(max_bytes)
            return resp.status, resp.headers.get("content-type", ""), body.decode("utf-8", "replace")

    return get


def load_client(hostname: str, port: int | None, tls_context: ssl.SSLContext | None, insecure: bool,
                connect_timeout_s: float, block_size: int) -> Any:
    """The fast transport's client: one connection to one host and port, redirects never followed
    (geventhttpclient's HTTPClient has no redirect logic: a 3xx is returned as the answer). No per-read timeout:
    the attempt's caps bound every read (client/fast.py)."""
    from geventhttpclient import HTTPClient

    return HTTPClient(hostname, port=port, ssl=tls_context is not None, concurrency=1, insecure=insecure,
                      ssl_context_factory=lambda **_kw: tls_context, connection_timeout=connect_timeout_s,
                      network_timeout=None, block_size=block_size)  # type: ignore[arg-type]


class OriginBound:
    """httpx2 request hook: a request to another origin than `base_url`'s is refused before it is sent."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def __call__(self, request: Any) -> None:
        url = str(request.url)
        if not same_origin(url, self.base_url):
            raise CrossOriginRedirect(self.base_url, url, 0)


def sdk_http_client(base_url: str, timeout: Any, verify: ssl.SSLContext | bool, limits: Any,
                    request_hooks: list[Callable[[Any], None]]) -> Any:
    """The httpx2 client an SDK transport is given: redirects not followed, bound to `base_url`'s origin."""
    import httpx2

    return httpx2.Client(limits=limits, timeout=timeout, verify=verify, follow_redirects=False,
                         event_hooks={"request": [OriginBound(base_url), *request_hooks]})
