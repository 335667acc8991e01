"""The local web server of `labeler view` (the standard library's http.server): the page's
static files, a small JSON API over the views, and the verdicts a reviewer makes.

It binds to 127.0.0.1 only and serves no path it was not given: the page's files by name from
the package, a version folder's files only inside that folder.
"""

from __future__ import annotations

import json
import mimetypes
import signal
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Lock
from urllib.parse import parse_qs, unquote, urlsplit

from labeler.errors import LabelerError
from labeler.view.catalog import View, open_views
from labeler.view.submission import Scored, score_submissions
from labeler.view.verdicts import Verdicts

STATIC = Path(__file__).parent / "static"
HOST = "127.0.0.1"


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


def open_viewing(folders: list[str | Path], *, reviewer: str, out: Path | None,
                 submissions: list[str | Path] = ()) -> Viewing:
    """Open the folders; each utility version gets its verdicts, kept under `out` (default:
    the labels' own output folder, `<out>` of `<out>/utility/<dataset>/<llm>/v<N>`); each of
    `submissions` is scored against each folder (`labeler.view.submission`)."""
    views = open_views(folders)
    verdicts = {(i, j): Verdicts(v.folder, v.manifest, reviewer=reviewer,
                                 out=out or v.folder.parents[3])
                for i, view in enumerate(views) if view.kind == "utility"
                for j, v in enumerate(view.versions)}
    return Viewing(views, verdicts, Lock(), score_submissions(list(submissions), views))


def make_server(viewing: Viewing, *, port: int = 0) -> ThreadingHTTPServer:
    """A server for `viewing` on 127.0.0.1:`port` (0: a free port), not yet serving."""
    handler = type("Handler", (_Handler,), {"viewing": viewing})
    server = ThreadingHTTPServer((HOST, port), handler)
    server.daemon_threads = True
    return server


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
    viewing: Viewing

    def log_message(self, format, *args):
        """Quiet: the page asks many small things."""

    def do_GET(self):
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            if not parts:
                return self._file(STATIC, "index.html")
            if parts[0] == "static" and len(parts) == 2:
                return self._file(STATIC, parts[1])
            if parts[0] == "files" and len(parts) >= 4:
                view = self._view(parts[1])
                version = view.versions[int(parts[2])]
                return self._file(version.folder, "/".join(parts[3:]))
            if parts == ["api", "views"]:
                return self._json([v.describe() for v in self.viewing.views])
            if parts == ["api", "submissions"]:
                return self._json([s.describe(self.viewing.views)
                                   for s in self.viewing.submissions])
            if len(parts) == 3 and parts[:2] == ["api", "submissions"]:
                return self._json(self.viewing.submissions[int(parts[2])].page(
                    sort=query.get("sort", ""), descending=query.get("desc") == "1",
                    **self._window(query)))
            if len(parts) == 4 and parts[:1] == ["api"] and parts[3] == "queries":
                return self._json(self._view(parts[2]).page(
                    filter=query.get("filter", "all"), search=query.get("q", ""),
                    **self._window(query)))
            if len(parts) == 5 and parts[:1] == ["api"] and parts[3] == "query":
                return self._json(self._query(int(parts[2]), parts[4]))
        except (LabelerError, ValueError, IndexError) as exc:
            return self._error(HTTPStatus.BAD_REQUEST, str(exc))
        return self._error(HTTPStatus.NOT_FOUND, "no such page")

    def do_POST(self):
        parts = [p for p in urlsplit(self.path).path.split("/") if p]
        if len(parts) != 4 or parts[:1] != ["api"] or parts[3] != "verdict":
            return self._error(HTTPStatus.NOT_FOUND, "no such page")
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            verdicts = self.viewing.verdicts[(int(parts[2]), int(body["version"]))]
            with self.viewing.lock:
                record = verdicts.add(qid=str(body["qid"]), pid=body.get("pid"),
                                      verdict=str(body["verdict"]), note=str(body.get("note", "")))
        except (LabelerError, ValueError, KeyError, TypeError) as exc:
            return self._error(HTTPStatus.BAD_REQUEST, str(exc))
        return self._json(record)

    @staticmethod
    def _window(query: dict[str, str]) -> dict[str, int]:
        """A list page's offset and limit (at most 500 rows)."""
        return {"offset": int(query.get("offset", 0)),
                "limit": min(int(query.get("limit", 50)), 500)}

    def _view(self, index: str) -> View:
        return self.viewing.views[int(index)]

    def _query(self, view_index: int, key: str) -> dict:
        view = self.viewing.views[view_index]
        page = view.query(key)
        page["verdicts"] = [self.viewing.verdicts[(view_index, j)].of(key)
                            if (view_index, j) in self.viewing.verdicts else []
                            for j in range(len(view.versions))]
        return page

    def _file(self, root: Path, name: str) -> None:
        """Send `root/name`, refusing any name that leads outside `root`."""
        root = root.resolve()
        path = (root / name).resolve()
        if not path.is_relative_to(root) or path == root:
            return self._error(HTTPStatus.FORBIDDEN, "outside the folders being viewed")
        if not path.is_file():
            return self._error(HTTPStatus.NOT_FOUND, "no such file")
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        self._send(HTTPStatus.OK, path.read_bytes(), kind)

    def _json(self, payload) -> None:
        self._send(HTTPStatus.OK, json.dumps(payload, ensure_ascii=False).encode(),
                   "application/json")

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._send(status, json.dumps({"error": message}).encode(), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8" if kind.startswith(
            ("text/", "application/json", "application/javascript")) else kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)
