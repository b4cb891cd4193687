"""TLS session resumption for the fast transport's reconnects.

Why: a server or a proxy that closes keep-alive connections every N requests (nginx's keepalive_requests, a
gateway's idle timeout) makes the next request open a new connection inside its TTFT. A full TLS handshake there
costs a certificate chain and a key exchange signature; resuming the last session (a TLS 1.3 ticket, a TLS 1.2
session id) costs neither.

How: `Tickets` belongs to one transport (one user: one connection at a time, one host). Each connect hands the new
`tlssock.TLSSocket` the last connection's session, once that holds a ticket (TLS 1.3 sends it after the handshake,
with the first records of the answer) or a session id, and counts the handshakes, full and resumed. A session the
context refuses gets a full handshake. The server decides: one that issues no tickets is handshaken in full every
time, as before. With --new-connection-per-request (`Connection: close`, each request a new client's) nothing is
resumed: every TTFT holds a full handshake, as that flag promises.
"""

from __future__ import annotations

import ssl
from typing import Any

from llmload.client.tlssock import TLSSocket


class Tickets:
    """The session a new connection of one transport resumes, and the handshakes so far (module docstring)."""

    __slots__ = ("full", "last", "resume", "resumed")

    def __init__(self, resume: bool = True) -> None:
        self.resume = resume
        """False: every connection is a new client's, handshaken in full (--new-connection-per-request)"""
        self.last: TLSSocket | None = None
        """the transport's last connection (its session is read at the next connect: a ticket arrives late)"""
        self.full = 0
        self.resumed = 0

    def session(self) -> ssl.SSLSession | None:
        """The last connection's session when it can be resumed (a ticket or a session id), else None."""
        session = self.last.sslobj.session if self.last is not None and self.resume else None
        return session if session is not None and (session.has_ticket or session.id) else None

    def connect(self, sock: Any, context: ssl.SSLContext, server_hostname: str | None) -> TLSSocket:
        """A TLS connection over the connected `sock`, handshaken, resuming the last session when there is one."""
        tls = TLSSocket(sock, context, server_hostname)
        session = self.session()
        if session is not None:
            try:
                tls.sslobj.session = session
            except (ValueError, ssl.SSLError):  # a session the context refuses: a full handshake
                pass
        tls.handshake()
        if tls.sslobj.session_reused:
            self.resumed += 1
        else:
            self.full += 1
        self.last = tls
        return tls
