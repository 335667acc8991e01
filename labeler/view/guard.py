"""Who may talk to the server of `labeler view`: its own page, and nothing else on the web.

As Jupyter's server does: every request must name the server itself in `Host` (127.0.0.1,
localhost or [::1] with its port), which defeats DNS rebinding; the page is served only to an
address carrying the server's secret token (the one `labeler view` prints), and the page
sends the token back in a custom header with every API call, which no other web page can
read or send without a CORS preflight this server never grants. A write must also be
`Content-Type: application/json` and come from no foreign `Origin`. Every answer carries a
Content-Security-Policy without inline script, nosniff, no referrer and same-origin
resources.
"""

from __future__ import annotations

import hmac
import secrets
from email.message import Message
from http import HTTPStatus

#: the header the page sends its token in
TOKEN_HEADER = "X-Labeler-Token"
#: the names the server answers to, each with its port
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
#: sent with every answer
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class Refused(Exception):
    """A request this server does not answer: its HTTP status and one line why."""

    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


def new_token() -> str:
    """A fresh secret for one server."""
    return secrets.token_urlsafe(32)


def check_host(headers: Message, port: int) -> None:
    """Refused unless `Host`, given once, names this server on the loopback with its
    port."""
    if len(headers.get_all("Host", [])) != 1 or headers["Host"].lower() not in _hosts(port):
        raise Refused(HTTPStatus.FORBIDDEN, "Host is not this server (127.0.0.1, localhost or "
                                            f"[::1] with port {port})")


def _hosts(port: int) -> set[str]:
    """This server's names with its port; on port 80, HTTP's default, a browser leaves the
    port out of Host and Origin, so the bare names too."""
    return {f"{name}:{port}" for name in LOOPBACK} | (set(LOOPBACK) if port == 80 else set())


def check_token(given: str | None, token: str) -> None:
    """Refused unless `given` is the server's token."""
    if not given or not hmac.compare_digest(given.encode(), token.encode()):
        raise Refused(HTTPStatus.FORBIDDEN, "missing or wrong token: open the address "
                                            "`labeler view` printed")


def check_write(headers: Message, port: int, token: str) -> None:
    """Refused unless a write is JSON, from this server's own page (Origin, if sent, is the
    server's) and carries the token in TOKEN_HEADER."""
    if headers.get_content_type() != "application/json":
        raise Refused(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "a write must be "
                                                         "Content-Type: application/json")
    origin = headers.get("Origin")
    if origin is not None and origin.lower() not in {f"http://{host}" for host in _hosts(port)}:
        raise Refused(HTTPStatus.FORBIDDEN, "a write from another origin is refused")
    check_token(headers.get(TOKEN_HEADER), token)
