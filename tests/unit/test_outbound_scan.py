"""Every place in the code that can open a connection, listed: a new one fails here until it goes through the
outbound policy (llmload/client/outbound.py) or is added to PLACES with why its credentials stay with their origin.

The scan reads the source (AST, no import): imports of HTTP client libraries, calls that open a socket or a URL,
and SDK clients (which must be given the policy's httpx2 client)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("llmload", "scenarios", "analysis", "locustfile.py")

OPENER_MODULES = ("urllib.request", "http.client", "httpx", "httpx2", "httpcore", "httpcore2", "requests",
                  "urllib3", "aiohttp", "pycurl", "websocket", "websockets", "locust.contrib.fasthttp",
                  "locust.clients", "socket", "_socket", "gevent.socket")
"""a module whose import gives code the means to open a connection"""
OPENER_NAMES = {"geventhttpclient": ("HTTPClient", "UserAgent", "HTTPConnectionPool"),
                "geventhttpclient.client": ("HTTPClient",), "geventhttpclient.useragent": ("UserAgent",),
                "gevent": ("socket",),
                "locust": ("HttpUser", "FastHttpUser"), "locust.contrib.fasthttp": ("FastHttpUser", "FastHttpSession")}
"""names imported from a module that open connections"""
OPENER_CALLS = ("create_connection", "connect", "connect_ex", "urlopen", "HTTPClient", "UserAgent", "OpenAI",
                "AsyncOpenAI", "AzureOpenAI", "Anthropic", "AsyncAnthropic", "Client", "AsyncClient")
"""a call of one of these names (a function or an attribute) may open a connection"""
SDK_CLIENTS = ("OpenAI", "AsyncOpenAI", "AzureOpenAI", "Anthropic", "AsyncAnthropic")

POLICY = "llmload/client/outbound.py"
PLACES = {
    (POLICY, "import urllib.request"): "the policy: side requests (fetch), redirects within the origin only",
    (POLICY, "import geventhttpclient.HTTPClient"): "the policy: the fast transport's client (load_client)",
    (POLICY, "call HTTPClient"): "the policy: load_client, bound to one host and port, no redirects",
    (POLICY, "import httpx2"): "the policy: the SDK transports' client (sdk_http_client)",
    (POLICY, "call Client"): "the policy: sdk_http_client, follow_redirects=False, OriginBound hook",
    ("llmload/client/fast.py", "call connect"): "the socket factory of load_client's pool: its own host and port",
    ("llmload/client/fast.py", "import socket"): "socket errors and options of the load client's sockets",
    ("llmload/client/sdk.py", "import httpx2"): "types and errors only (Limits, Timeout, exceptions)",
    ("llmload/client/sdk.py", "call OpenAI"): "given http_client=traced_http_client(...): outbound.sdk_http_client",
    ("llmload/client/sdk_anthropic.py", "import httpx2"): "errors only",
    ("llmload/client/sdk_anthropic.py", "call Anthropic"): "given http_client=traced_http_client(...): the policy's",
    ("llmload/client/kstamp.py", "import socket"): "socket options (kernel receive timestamps) of load sockets",
    ("llmload/client/kstamp.py", "import gevent.socket"): "the socket class load_client's pool creates (stamped reads)",
    ("llmload/client/resolve.py", "import _socket"): "numeric-address parsing (AI_NUMERICHOST), no connection",
    ("llmload/client/resolve.py", "import gevent.socket"): "DNS lookups of the load's host, no connection",
    ("llmload/client/tlssock.py", "import socket"): "TLS over the load client's socket (no connect of its own)",
    ("llmload/run/watch/health.py", "import socket"): "gethostname, no connection",
    ("llmload/cli/main.py", "import socket"): "binds the web UI's port to test it is free (a listener, no connect)",
    ("llmload/webui/__init__.py", "call connect"): "a blinker signal (before_render_template.connect), no socket",
}
"""(file, what) -> why its credentials stay with their origin (every place the scan finds must be here)"""


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        path = ROOT / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.exists() else []
    return out


def _called_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def places(path: Path) -> list[tuple[str, int, ast.AST]]:
    """(what, line, node) of every opener in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(f"import {a.name}", node.lineno, node) for a in node.names
                      if any(a.name == m or a.name.startswith(m + ".") for m in OPENER_MODULES)]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            module = node.module
            if any(module == m or module.startswith(m + ".") for m in OPENER_MODULES):
                found.append((f"import {module}", node.lineno, node))
            found += [(f"import {module}.{a.name}", node.lineno, node) for a in node.names
                      if a.name in OPENER_NAMES.get(module, ())]
        elif isinstance(node, ast.Call) and _called_name(node) in OPENER_CALLS:
            found.append((f"call {_called_name(node)}", node.lineno, node))
    return found


def test_every_place_that_can_open_a_connection_is_listed_with_why_it_keeps_credentials_at_their_origin():
    unlisted, seen = [], set()
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for what, line, _node in places(path):
            seen.add((rel, what))
            if (rel, what) not in PLACES:
                unlisted.append(f"{rel}:{line} {what}")
    assert not unlisted, ("a new place can open a connection: build its client in llmload/client/outbound.py (the "
                          "outbound policy: credentials only to their origin, no redirect to another) or list it in "
                          "PLACES with why its credentials stay at their origin:\n  " + "\n  ".join(unlisted))
    stale = sorted(set(k for k, why in PLACES.items() if why) - seen)
    assert not stale, f"listed but gone (remove them from PLACES): {stale}"


def test_only_the_policy_opens_urls_and_builds_http_clients():
    """urlopen anywhere, or an HTTP client built outside outbound.py, bypasses the redirect rule."""
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for what, line, _node in places(path):
            if what in ("call urlopen", "call HTTPClient", "call UserAgent", "call Client", "call AsyncClient"):
                assert rel == POLICY, f"{rel}:{line} {what}: build it in {POLICY}"


def test_every_sdk_client_is_given_the_policys_http_client():
    """An SDK left to build its own httpx client follows redirects (the openai and anthropic SDKs' default)."""
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for what, line, node in places(path):
            if what.removeprefix("call ") in SDK_CLIENTS:
                keywords = {k.arg: k.value for k in node.keywords}
                assert "http_client" in keywords, f"{rel}:{line}: {what} without http_client="
                source = path.read_text()
                assert "traced_http_client(" in source or "outbound.sdk_http_client(" in source, rel
    sdk = (ROOT / "llmload/client/sdk.py").read_text()
    assert "outbound.sdk_http_client(" in sdk  # traced_http_client is the policy's client


def test_the_scan_finds_what_it_looks_for(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import urllib.request\nimport requests.adapters\nfrom geventhttpclient import HTTPClient\n"
                     "from locust import FastHttpUser\nimport socket\n"
                     "urllib.request.urlopen('http://x')\nsocket.create_connection(('x', 1))\n"
                     "openai.OpenAI(base_url='x')\nhttpx2.Client()\n")
    whats = [what for what, _line, _node in places(probe)]
    assert whats.count("call urlopen") == 1 and "call create_connection" in whats and "call OpenAI" in whats
    assert {"import urllib.request", "import requests.adapters", "import geventhttpclient.HTTPClient",
            "import locust.FastHttpUser", "import socket", "call Client"} <= set(whats)
