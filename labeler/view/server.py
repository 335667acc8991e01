"""The local web server of `labeler view` (the standard library's http.server): the page's
static files, a small JSON API over the views, and the verdicts a reviewer makes.

It binds to 127.0.0.1 only, answers only its own page (`guard`: Host, token, JSON writes,
security headers) and serves no file but the page's own; a verdict is checked against the
version it judges (`subjects`) before it is kept.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Lock
from urllib.parse import parse_qs, quote, unquote, urlsplit

from labeler.artifacts.manifest import layout_root
from labeler.errors import InputError, LabelerError
from labeler.view.catalog import View, open_views
from labeler.view.guard import (
    SECURITY_HEADERS,
    TOKEN_HEADER,
    Refused,
    check_host,
    check_token,
    check_write,
    new_token,
)
from labeler.view.subjects import JUDGED, check_subject, read_request
from labeler.view.submission import Scored, score_submissions
from labeler.view.texts import candidate_texts
from labeler.view.verdicts import Verdicts

STATIC = Path(__file__).parent / "static"
HOST = "127.0.0.1"
#: the page's files other than index.html, and their types
FILES = {"app.js": "text/javascript", "review.js": "text/javascript", "style.css": "text/css"}
#: the largest request body read (a verdict with a 4 KB note is far smaller)
BODY_BYTES = 65536


@dataclass
class Viewing:
    """What one server shows: its views, per (view, version) the verdicts kept, and the
    submissions scored against its versions."""

    views: list[View]
    verdicts: dict[tuple[int, int], Verdicts]
    lock: Lock
    submissions: list[Scored]

    def seal(self) -> list[Path]:
        """Write every labels version's new verdicts as a review version; their folders."""
        with self.lock:
            return [folder for v in self.verdicts.values() if (folder := v.seal())]

    def judged(self, view: int) -> set[str]:
        """The queries of view `view` its reviewer has given a verdict, in any version."""
        with self.lock:
            return {qid for (i, _), v in self.verdicts.items() if i == view
                    for qid in v.judged()}


def open_viewing(folders: list[str | Path], *, reviewer: str, out: Path | None,
                 submissions: list[str | Path] = ()) -> Viewing:
    """Open the folders; each utility, seer and rubric version gets its verdicts, kept under
    `out` (default: the labels' own output folder, `<out>` of
    `<out>/<kind>/<dataset>/<llm>/v<N>`); each of `submissions` is scored against each folder
    (`labeler.view.submission`)."""
    views = open_views(folders)
    verdicts = {(i, j): Verdicts(v.folder, v.manifest, reviewer=reviewer,
                                 out=out or _labels_out(v.folder, v.manifest))
                for i, view in enumerate(views) if view.kind in JUDGED
                for j, v in enumerate(view.versions)}
    return Viewing(views, verdicts, Lock(), score_submissions(list(submissions), views))


def _labels_out(folder: Path, manifest: dict) -> Path:
    """The `<out>` a labels version sits in, where its review versions go by default;
    InputError for a folder moved out of that layout (a copy, a download)."""
    root = layout_root(folder, *(manifest[k] for k in ("artifact", "dataset", "llm", "version")))
    if root is None:
        raise InputError("not at <out>/<artifact>/<dataset>/<llm>/v<N>/, so its review versions "
                         "have no default place", path=str(folder),
                         hint="pass --out: the folder that holds review/")
    return root


class ViewServer(ThreadingHTTPServer):
    """The server of one viewing, with its secret token."""

    daemon_threads = True

    def __init__(self, viewing: Viewing, port: int):
        self.viewing, self.token = viewing, new_token()
        super().__init__((HOST, port), _Handler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        """The page's address, carrying the token (as `labeler view` prints it)."""
        return f"http://{HOST}:{self.port}/?token={quote(self.token)}"


def make_server(viewing: Viewing, *, port: int = 0) -> ViewServer:
    """A server for `viewing` on 127.0.0.1:`port` (0: a free port), not yet serving;
    InputError in one line where the port cannot be had."""
    try:
        return ViewServer(viewing, port)
    except OSError as exc:
        raise InputError(f"cannot serve on {HOST}:{port}: {exc.strerror or exc}",
                         field_name="port", hint="pass another --port, or 0 for a free one"
                         ) from None


def serve_until_stopped(server: ThreadingHTTPServer, viewing: Viewing) -> list[Path]:
    """Serve until Ctrl-C or SIGTERM, then seal the verdicts; the review versions written."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.server_close()
    return viewing.seal()


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer

    def log_message(self, format, *args):
        """Quiet: the page asks many small things."""

    def do_GET(self):
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            check_host(self.headers, self.server.port)
            if not parts:
                check_token(query.get("token"), self.server.token)
                return self._page()
            if parts[0] == "static" and len(parts) == 2 and parts[1] in FILES:
                return self._send(HTTPStatus.OK, (STATIC / parts[1]).read_bytes(),
                                  FILES[parts[1]])
            if parts[0] == "api":
                check_token(self.headers.get(TOKEN_HEADER), self.server.token)
                if (answer := self._api(parts[1:], query)) is not None:
                    return self._json(answer)
        except Refused as refused:
            return self._error(refused.status, str(refused))
        except (LabelerError, ValueError, IndexError) as exc:
            return self._error(HTTPStatus.BAD_REQUEST, _one_line(exc))
        except OSError as exc:
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, _one_line(exc))
        return self._error(HTTPStatus.NOT_FOUND, "no such page")

    def _api(self, parts: list[str], query: dict[str, str]):
        """The answer to GET /api/<parts>, or None for no such call."""
        viewing = self.server.viewing
        if parts == ["views"]:
            return [v.describe() for v in viewing.views]
        if parts == ["submissions"]:
            return [s.describe(viewing.views) for s in viewing.submissions]
        if len(parts) == 2 and parts[0] == "submissions":
            return viewing.submissions[_index(parts[1], viewing.submissions, "submission")].page(
                sort=query.get("sort", ""), descending=query.get("desc") == "1",
                **self._window(query))
        if len(parts) < 3 or parts[0] != "views":
            return None
        index = _index(parts[1], viewing.views, "view")
        view, judged = viewing.views[index], viewing.judged(index)
        listing = {"filter": query.get("filter", "all"), "search": query.get("q", ""),
                   "judged": judged}
        if parts[2:] == ["queries"]:
            return view.page(**listing, **self._window(query))
        if len(parts) == 4 and parts[2] == "query":
            return self._query(index, parts[3])
        if len(parts) == 4 and parts[2] == "neighbours":
            return view.neighbours(parts[3], **listing)
        return None

    def do_POST(self):
        parts = [p for p in urlsplit(self.path).path.split("/") if p]
        try:
            check_host(self.headers, self.server.port)
            if len(parts) != 4 or parts[:2] != ["api", "views"] or parts[3] != "verdict":
                raise Refused(HTTPStatus.NOT_FOUND, "no such page")
            check_write(self.headers, self.server.port, self.server.token)
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0:
                raise InputError("Content-Length is negative")
            if length > BODY_BYTES:
                raise Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                              f"a verdict request holds at most {BODY_BYTES} bytes")
            record = self._verdict(_index(parts[2], self.server.viewing.views, "view"),
                                   read_request(self.rfile.read(length)))
        except Refused as refused:
            return self._error(refused.status, str(refused))
        except (LabelerError, ValueError, IndexError) as exc:
            return self._error(HTTPStatus.BAD_REQUEST, _one_line(exc))
        except OSError as exc:  # the journal cannot be written: the page says "not saved"
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, _one_line(exc))
        return self._json(record)

    def _verdict(self, view_index: int, request: dict) -> dict:
        """Check `request` against the version it judges, then keep it; its record."""
        viewing = self.server.viewing
        view = viewing.views[view_index]
        if view.kind not in JUDGED:
            raise InputError(f"a {view.kind} version takes no verdicts", field_name="version")
        if not 0 <= request["version"] < len(view.versions):
            raise InputError(f"no version {request['version']} in this view",
                             field_name="version")
        version = view.versions[request["version"]]
        position = version.position(request["qid"])
        record = None if position is None else version.record(position)
        check_subject(request, view.kind, record, version.table_records(request["qid"]))
        with viewing.lock:
            return viewing.verdicts[(view_index, request["version"])].add(
                qid=request["qid"], about=request["about"], pid=request["pid"],
                verdict=request["verdict"], note=request["note"])

    @staticmethod
    def _window(query: dict[str, str]) -> dict[str, int]:
        """A list page's offset and limit (at most 500 rows); ValueError for a negative one."""
        offset, limit = int(query.get("offset", 0)), int(query.get("limit", 50))
        if offset < 0 or limit < 0:
            raise ValueError("offset and limit are counts of rows, not negative")
        return {"offset": min(offset, 2 ** 62), "limit": min(limit, 500)}

    def _query(self, view_index: int, key: str) -> dict:
        viewing = self.server.viewing
        view = viewing.views[view_index]
        page = view.query(key)
        if view.kind == "rubric":
            page["texts"] = [candidate_texts(version.manifest, [
                c["pid"] for c in tables.get("candidates", [])])
                for version, tables in zip(view.versions, page["tables"], strict=True)]
        with viewing.lock:
            page["verdicts"] = [viewing.verdicts[(view_index, j)].of(key)
                                if (view_index, j) in viewing.verdicts else []
                                for j in range(len(view.versions))]
        return page

    def _page(self) -> None:
        """index.html, carrying the token the page sends back with each API call."""
        html = (STATIC / "index.html").read_text(encoding="utf-8")
        self._send(HTTPStatus.OK, html.replace("{{token}}", self.server.token).encode(),
                   "text/html")

    def _json(self, payload) -> None:
        self._send(HTTPStatus.OK, json.dumps(payload, ensure_ascii=False).encode(),
                   "application/json")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None):
        """What http.server answers itself (a malformed request, a method not served) as
        this server's one-line JSON with the security headers, never its HTML page."""
        self.close_connection = True
        self._error(HTTPStatus(code), message or HTTPStatus(code).phrase)

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._send(status, json.dumps({"error": message}).encode(), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":  # a HEAD answer has no body (Content-Length still says)
            self.wfile.write(body)


def _index(text: str, items: list, what: str) -> int:
    """The position `text` names in `items` (a view or submission number); ValueError for
    one out of range (a negative one too: not counted from the end)."""
    index = int(text)
    if not 0 <= index < len(items):
        raise ValueError(f"no {what} {text[:20]}")
    return index


def _one_line(error: Exception) -> str:
    """What `error` says, on one line (a LabelerError with its hint)."""
    text = error.line() if isinstance(error, LabelerError) else str(error)
    return " ".join(text.split())[:300] or type(error).__name__
