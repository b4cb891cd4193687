"""The TLS client context every transport uses: which certificates are trusted, and the one-line hint when none is.

How it works: `context(ca_bundle, insecure)` is `ssl.create_default_context()`, the way Python users expect it:
OpenSSL's default paths, which honour `SSL_CERT_FILE` and `SSL_CERT_DIR`; with `--ca-bundle PATH` (a PEM file
or a hashed folder, as `c_rehash` makes) only that; on a system whose OpenSSL has no default paths (and neither
variable is set) certifi's bundle, as geventhttpclient and httpx do. Host names and chains are checked unless
`insecure` (--insecure). ALPN offers `http/1.1` (as urllib3 and httpx do): a TLS front end that serves
HTTP/2 too then knows which one the connection speaks. `check_path` turns a bad --ca-bundle into one line
saying what to fix. A failed verification reads `certificate verify failed: REASON` (client/errors.py
`connect_reason`) followed by `CERT_HINT`.
"""

from __future__ import annotations

import functools
import os
import ssl

CERT_HINT = "pass --ca-bundle PATH or set SSL_CERT_FILE to trust it, or --insecure"
"""what a failed certificate verification tells the user to do"""


class CABundleError(ValueError):
    """A --ca-bundle that cannot be loaded; the message says what to fix."""


def check_path(path: str) -> str:
    """The --ca-bundle path if it loads as certificates, else CABundleError (one line)."""
    if not path:
        return ""
    if not os.path.exists(path):
        raise CABundleError(f"--ca-bundle {path}: no such file or folder; give a PEM file of CA certificates")
    try:
        context(path)
    except (ssl.SSLError, OSError) as exc:
        raise CABundleError(f"--ca-bundle {path}: not a PEM file of CA certificates "
                            f"({getattr(exc, 'reason', None) or exc.strerror or exc})") from None
    return path


def _certifi_fallback() -> str | None:
    """certifi's bundle when OpenSSL has no default trust store and neither variable points to one."""
    paths = ssl.get_default_verify_paths()
    if paths.cafile or (paths.capath and os.listdir(paths.capath)):
        return None
    if os.environ.get(paths.openssl_cafile_env) or os.environ.get(paths.openssl_capath_env):
        return None
    try:
        import certifi
    except ImportError:
        return None
    return certifi.where()


def context(ca_bundle: str = "", insecure: bool = False) -> ssl.SSLContext:
    """The client context (module docstring); `ca_bundle`: a PEM file or a certificate folder ('' : the defaults).

    One per process for the same choice (loading a system store costs milliseconds; every user of a run shares it),
    built again when SSL_CERT_FILE / SSL_CERT_DIR changed."""
    return _context(ca_bundle, insecure, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=16)
def _context(ca_bundle: str, insecure: bool, _cert_file: str | None, _cert_dir: str | None) -> ssl.SSLContext:
    if ca_bundle and os.path.isdir(ca_bundle):
        ctx = ssl.create_default_context(capath=ca_bundle)
    elif ca_bundle:
        ctx = ssl.create_default_context(cafile=ca_bundle)
    else:
        ctx = ssl.create_default_context(cafile=_certifi_fallback())
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])  # what every transport speaks (a gateway that also offers h2 picks this)
    return ctx
