"""How a failure to reach or read the Hub (or a dataset's download host) reads: one `HubError`
line naming the cause (offline mode, no route, DNS, TLS, a timeout, 401/403/404, a gated repo)
and what to do about it. Every Hub and network call of labeler goes through `hub_errors`; the
CLI's edge maps whatever still escapes with `hub_error`.

    with hub_errors("org/name", what="cannot load dataset"):
        hf_hub_download(...)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from labeler.errors import HubError, LabelerError

AGAIN = "run the same command again"
#: the hint of a file that is not cached and cannot be downloaded now
FIRST_USE = "needs network on first use; later runs read the local cache"
TOKEN = "use a token with access to the repo (write access, to push): HF_TOKEN or `hf auth login`"
_DNS = ("name or service not known", "temporary failure in name resolution",
        "nodename nor servname", "getaddrinfo", "no address associated", "name resolution")
_TLS = ("ssl", "certificate", "tls")
#: what `redact` hides: a Hugging Face token, or whatever follows "Bearer"
_SECRET = re.compile(r"(?P<bearer>\bBearer\s+)\S+|\bhf_[A-Za-z0-9_-]+", re.IGNORECASE)


def hub_error(exc: BaseException, *, repo: str | None = None, what: str = "",
              kind: str = "dataset", endpoint: str | None = None, again: str = AGAIN
              ) -> HubError | None:
    """The HubError `exc` amounts to (`what` before its cause: "cannot load dataset"; `kind`
    the repo's type, "dataset" or "model"), or None when neither `exc` nor an error it was
    raised from is a Hub or network failure."""
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    for error in _chain(exc):
        found = _hub_cause(error, kind, again) or _network_cause(
            error, endpoint or _endpoint(), again)
        if isinstance(error, LocalEntryNotFoundError):  # a refusal it wraps says more
            found = next((_hub_cause(e, kind, again) for e in _chain(error.__cause__ or
                          error.__context__) if _hub_cause(e, kind, again) is not None and
                          not isinstance(e, OfflineModeIsEnabled)), found)
        if found is not None:
            cause, hint = found
            return HubError(f"{what}: {cause}" if what else cause, repo, hint=hint)
    return None


@contextmanager
def hub_errors(repo: str | None = None, *, what: str = "", kind: str = "dataset",
               endpoint: str | None = None, again: str = AGAIN) -> Iterator[None]:
    """Within: a Hub or network failure is raised as its one-line `hub_error`; labeler's own
    errors and any other exception pass unchanged."""
    try:
        with quiet_retries():
            yield
    except LabelerError:
        raise
    except Exception as exc:
        error = hub_error(exc, repo=repo, what=what, kind=kind, endpoint=endpoint, again=again)
        if error is None:
            raise
        raise error from exc


@contextmanager
def quiet_retries() -> Iterator[None]:
    """Within: huggingface_hub's own log lines of a request it retries ("Retrying in 1s")
    stay off stderr unless --verbose: the failure, if it comes, is said once, by its error;
    and a connection that cannot be made is not retried (`_no_retry_without_a_connection`)."""
    import logging

    from labeler import settings

    _no_retry_without_a_connection()
    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    if not settings.verbose():
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _no_retry_without_a_connection() -> None:
    """huggingface_hub retries a file download whose first request failed, five times over
    23 s (1, 2, 4, 8 and 8 s apart), when the failure is one of its retried network errors:
    offline, with no route or no DNS, a model load waited ~46 s for its one error line. A
    connection refused or never made (`httpx.ConnectError`: refused, no route, a name that
    does not resolve) is now final at once; a timeout, a dropped connection and a 5xx or 429
    answer are still retried. Set once, for the process (huggingface_hub reads the tuple at
    each download)."""
    import httpx
    from huggingface_hub import file_download

    retried = getattr(file_download, "_DEFAULT_RETRY_ON_EXCEPTIONS", None)
    if isinstance(retried, tuple) and httpx.NetworkError in retried:
        file_download._DEFAULT_RETRY_ON_EXCEPTIONS = tuple(  # NetworkError less ConnectError
            kind for kind in retried if kind is not httpx.NetworkError) + (
            httpx.ReadError, httpx.WriteError, httpx.CloseError)


def cause_line(exc: BaseException, *, kind: str = "model") -> str:
    """What `exc` says on one line: its Hub or network cause where it is one (`hub_error`),
    else its own first line. How a model loader quotes a failed download in its own error."""
    error = hub_error(exc, kind=kind)
    return error.message if error is not None else _first(exc)


def describe(exc: BaseException) -> str:
    """A short, token-free account of a failure, on one line: whatever the server says is
    `redact`ed, for a server may echo the request's Authorization header."""
    import httpx
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        return redact(f"HTTP {exc.response.status_code}" +
                      (f" ({exc.server_message})" if exc.server_message else ""))
    if isinstance(exc, httpx.TransportError):
        return f"connection failed ({type(exc).__name__})"
    if exc.__cause__ is not None:
        return describe(exc.__cause__)
    return redact(str(exc).splitlines()[0]) if str(exc).strip() else type(exc).__name__


def redact(text: str) -> str:
    r"""`text` on one line, every token in it (`hf_…`, `Bearer …`) replaced by `***`.

    >>> redact("401: Authorization: Bearer hf_abcdefgh\nretry")
    '401: Authorization: Bearer *** retry'
    """
    return _SECRET.sub(lambda m: (m["bearer"] or "") + "***", " ".join(text.split()))


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """`exc` and the errors it was raised from or while handling, outermost first."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _hub_cause(error: BaseException, kind: str, again: str) -> tuple[str, str] | None:
    """(what went wrong, what to do) as huggingface_hub's error types say it; None for
    another error."""
    from huggingface_hub import errors

    if isinstance(error, errors.OfflineModeIsEnabled):
        return "offline mode is on (HF_HUB_OFFLINE=1)", "unset HF_HUB_OFFLINE to reach the Hub"
    if isinstance(error, errors.LocalEntryNotFoundError):
        return "not in the local cache and the Hub cannot be reached", FIRST_USE
    if isinstance(error, errors.GatedRepoError):  # before its parent, RepositoryNotFoundError
        return "the repo is gated and this user has not been granted access", \
            "accept its conditions on its Hub page, then set a token: hf auth login"
    if isinstance(error, errors.RepositoryNotFoundError):
        return f"no such {kind} repo, or it is private to another account", \
            "check NAMESPACE/NAME; for a private repo set HF_TOKEN or run `hf auth login`"
    if isinstance(error, errors.RevisionNotFoundError):
        return "the Hub has no such revision", "check the revision or tag"
    if isinstance(error, errors.EntryNotFoundError):
        return "the Hub has no such file at that revision", "check the file's path"
    if isinstance(error, errors.HfHubHTTPError) and error.response is not None:
        return _refused(error.response.status_code, describe(error), again)
    return None


def _refused(status: int, said: str, again: str) -> tuple[str, str]:
    """(what went wrong, what to do) for a server's answer `status`, which it `said`."""
    if status in (401, 403):
        return f"not allowed: {said}", TOKEN
    if status == 404:
        return f"not found: {said}", "check the repo, revision and path"
    return f"the Hub refused: {said}", again


def _network_cause(error: BaseException, endpoint: str, again: str
                   ) -> tuple[str, str] | None:
    """(what went wrong, what to do) for a connection that failed on the way: timed out, no
    route, a name that does not resolve, a TLS handshake refused; None for another error."""
    import ssl

    import httpx

    check = f"check the network and HF_ENDPOINT, then {again}"
    text = str(error).lower()
    if isinstance(error, httpx.HTTPStatusError):
        return _refused(error.response.status_code, f"HTTP {error.response.status_code}", again)
    if isinstance(error, httpx.TimeoutException | TimeoutError):
        return f"cannot reach {endpoint}: no answer in time ({type(error).__name__})", check
    if isinstance(error, ssl.SSLError) or (
            isinstance(error, httpx.ConnectError) and any(word in text for word in _TLS)):
        return f"cannot reach {endpoint}: the TLS handshake failed ({_first(error)})", \
            f"check the system's certificates (SSL_CERT_FILE) and any proxy, then {again}"
    if isinstance(error, httpx.ConnectError | OSError) and any(word in text for word in _DNS):
        return f"cannot reach {endpoint}: its host name does not resolve (DNS)", check
    if isinstance(error, httpx.RequestError | ConnectionError):
        return f"cannot reach {endpoint}: {describe(error)}", check
    return None


def _first(error: BaseException) -> str:
    """The first line of what `error` says, token-free."""
    text = str(error).strip() or type(error).__name__
    return redact(text.splitlines()[0])


def _endpoint() -> str:
    """The Hub endpoint huggingface_hub is set to now."""
    from huggingface_hub import constants

    return constants.ENDPOINT
