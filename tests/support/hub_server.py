"""A small Hugging Face Hub-compatible HTTP server for tests: the real `huggingface_hub` client
(and `datasets`) talk to it over real HTTP, with HF_ENDPOINT pointing at it.

It keeps repos in memory as real git-like histories: every commit has a sha, a parent and a full
snapshot of its files, so branches, tags and commit shas all resolve as revisions. It serves the
endpoints that `create_repo`, `repo_info`, `validate-yaml`, `preupload`, `create_commit`
(NDJSON, inline base64 files), `create_tag`, `list_repo_refs`, `list_repo_tree`,
`get_paths_info` and file downloads (`resolve`, HEAD and ranged GET) use in
huggingface_hub 1.33. Every upload is answered `regular` (inline content, no LFS or Xet).

Mirrors of real repos: `seed(repo_id, files, sha=...)` adds a commit with the given sha (a real
Hub commit a source pins) on a branch (`main`, or `refs/convert/parquet`); `gated=True` makes the
repo answer as a gated one whose licence the caller has not accepted, unless its token is one of
`accepted` (401 without a token, 403
with one, `X-Error-Code: GatedRepo`, as the Hub does). `static(path, content)` serves a plain file
outside any repo (a dataset's canonical download URL).

Faults: `inject(at=N, kind=...)` makes the Nth request from now fail with an HTTP error status
(`"500"`, `"503"`, `"429"`, ...), a connection closed before the request is handled (`"drop"`),
or one closed after it was handled, so its effect stays but the answer is lost
(`"drop-after"`), or an HTTP 400 whose message echoes the request's Authorization header, as a
careless proxy does (`"echo"`); `times=None` keeps failing every later request too (an outage).

    with HubServer(tokens={"hf_secret"}) as hub:
        os.environ["HF_ENDPOINT"] = hub.url
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from support.hub_repos import (
    BAD_REF,
    GITATTRIBUTES,
    Commit,
    HttpError,
    Repo,
    blob_oid,
    committed,
    yaml_errors,
)


class HubServer:
    """In-memory Hub on 127.0.0.1 (port 0 = any free port); use as a context manager."""

    def __init__(self, tokens: set[str] | frozenset[str] = frozenset({"hf_test_token"})):
        self.tokens = set(tokens)
        self.repos: dict[tuple[str, str], Repo] = {}
        self.statics: dict[str, bytes] = {}  # URL path -> content, outside any repo
        self.log: list[str] = []  # "METHOD path" of every request, in arrival order
        self.served: list[tuple[str, int]] = []  # (path, bytes of the body) of every response
        self._lock = threading.RLock()
        self._faults: list[tuple[int, str, int | None]] = []  # (request number, kind, times)
        self._counter = 0
        self._commits = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # ---- test controls ---------------------------------------------------------------------

    def inject(self, *, at: int, kind: str = "500", times: int | None = 1) -> None:
        """Fail the `at`-th request from now (1 = the next one), `times` times in a row
        (None = every request from then on)."""
        if not (kind in ("drop", "drop-after", "echo") or (kind.isdigit() and len(kind) == 3)):
            raise ValueError(f"unknown fault kind {kind!r}: an HTTP status, 'drop', 'drop-after' "
                             "or 'echo'")
        with self._lock:
            self._faults.append((self._counter + at, kind, times))

    def seed(self, repo_id: str, files: dict[str, bytes], *, sha: str, repo_type: str = "dataset",
             branch: str = "main", gated: bool = False, accepted=()) -> Repo:
        """A commit with sha `sha` holding `files` on `branch` of `repo_id` (created if new);
        a `gated` repo serves only the tokens in `accepted` (users who accepted its terms)."""
        with self._lock:
            repo = self.repos.setdefault((repo_type, repo_id), Repo(repo_id, repo_type, False))
            repo.gated = repo.gated or gated
            repo.accepted.update(accepted)
            date = datetime.fromtimestamp(1_600_000_000 + len(repo.commits), UTC).isoformat()
            repo.commits[sha] = Commit(sha, repo.branches.get(branch), f"seed {branch}",
                                       date.replace("+00:00", ".000Z"), dict(files))
            repo.branches[branch] = sha
            return repo

    def static(self, path: str, content: bytes) -> str:
        """Serve `content` at URL path `path`; returns its full URL."""
        self.statics["/" + path.lstrip("/")] = content
        return f"{self.url}/{path.lstrip('/')}"

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def request_count(self) -> int:
        return self._counter

    def repo(self, repo_id: str, repo_type: str = "dataset") -> Repo:
        return self.repos[(repo_type, repo_id)]

    def _fault_for(self, number: int) -> str | None:
        for start, kind, times in self._faults:
            if number >= start and (times is None or number < start + times):
                return kind
        return None

    # ---- request handling ------------------------------------------------------------------

    def handle(self, method: str, raw_path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        split = urlsplit(raw_path)
        parts = [unquote(p) for p in split.path.strip("/").split("/")]
        query = parse_qs(split.query)
        token = (headers.get("Authorization") or "").removeprefix("Bearer ").strip() or None
        if token is not None and token not in self.tokens:
            raise HttpError(401, "Invalid credentials in Authorization header")
        with self._lock:
            if split.path in self.statics and method in ("GET", "HEAD"):
                return self._content(self.statics[split.path], {}, headers)
            if parts[0] == "api":
                return self._api(method, parts[1:], query, token, headers, body)
            return self._resolve(method, parts, token, headers)

    def _api(self, method, parts, query, token, headers, body):
        if method == "POST" and parts == ["repos", "create"]:
            return self._create_repo(json.loads(body), token)
        if method == "POST" and parts == ["validate-yaml"]:
            errors = yaml_errors(json.loads(body)["content"])
            return _json(400 if errors else 200, {"errors": errors, "warnings": []})
        if len(parts) < 3 or parts[0] not in ("models", "datasets", "spaces"):
            raise HttpError(404, "Not found")
        repo = self._repo(parts[0][:-1], f"{parts[1]}/{parts[2]}", token)
        rest = parts[3:]
        if method == "GET" and (not rest or rest[0] == "revision"):
            commit = self._commit(repo, rest[1] if rest else "main")
            return _json(200, repo.info(commit, blobs=_flag(query, "blobs")))
        if method == "GET" and rest == ["auth-check"]:  # `_repo` let this token through
            return _json(200, {})
        if method == "GET" and rest == ["refs"]:
            return _json(200, repo.refs())
        if method == "GET" and rest and rest[0] == "tree":
            commit = self._commit(repo, rest[1])
            return self._tree(repo, commit, "/".join(rest[2:]), query)
        if method == "POST" and len(rest) == 2 and rest[0] == "paths-info":
            form = parse_qs(body.decode())
            expand = _flag(form, "expand")
            commit = self._commit(repo, rest[1])
            return _json(200, self._paths_info(repo, commit, form.get("paths", []), expand))
        if method == "POST" and len(rest) == 2 and rest[0] in ("preupload", "commit", "tag"):
            self._require_write(token)
            if rest[0] == "preupload":
                commit = self._commit(repo, rest[1])
                files = [
                    {
                        "path": f["path"],
                        "uploadMode": "regular",
                        "shouldIgnore": False,
                        "oid": blob_oid(commit.files[f["path"]])
                        if f["path"] in commit.files
                        else None,
                    }
                    for f in json.loads(body)["files"]
                ]
                return _json(200, {"files": files, "commitOid": commit.sha})
            if rest[0] == "commit":
                return self._commit_files(repo, rest[1], body)
            return self._tag(repo, rest[1], json.loads(body))
        raise HttpError(404, f"Not found: {method} /api/{'/'.join(parts)}")

    def _create_repo(self, payload: dict, token: str | None):
        self._require_write(token)
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization')}/{payload['name']}"
        url = f"{self.url}/{'' if repo_type == 'model' else repo_type + 's/'}{repo_id}"
        if (repo_type, repo_id) in self.repos:
            raise HttpError(409, "You already created this repo", extra={"url": url})
        repo = Repo(repo_id, repo_type, payload.get("visibility") == "private")
        self._new_commit(repo, None, "initial commit", {".gitattributes": GITATTRIBUTES})
        self.repos[(repo_type, repo_id)] = repo
        return _json(200, {"url": url, "name": repo_id, "id": repo_id})

    def _tree(self, repo: Repo, commit: Commit, path: str, query: dict):
        recursive = _flag(query, "recursive")
        expand = _flag(query, "expand")
        if path and repo.entry(commit, path, False) is None:
            raise HttpError(404, f"{path} does not exist", "EntryNotFound")
        prefix = f"{path}/" if path else ""
        names: set[str] = set()
        for p in commit.files:
            if not p.startswith(prefix):
                continue
            rel = p[len(prefix) :].split("/")
            depth = len(rel) if recursive else 1
            names.update(prefix + "/".join(rel[:i]) for i in range(1, depth + 1))
        return _json(200, [repo.entry(commit, n, expand) for n in sorted(names)])

    def _paths_info(self, repo: Repo, commit: Commit, paths: list[str], expand: bool) -> list[dict]:
        entries = (repo.entry(commit, p.strip("/"), expand) for p in paths)
        return [e for e in entries if e is not None]

    def _commit_files(self, repo: Repo, revision: str, body: bytes):
        if revision not in repo.branches:
            raise HttpError(404, f"branch {revision} not found", "RevisionNotFound")
        head = repo.commits[repo.branches[revision]]
        title, files = committed(head, body)
        commit = self._new_commit(repo, head.sha, title, files)
        repo.branches[revision] = commit.sha
        prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
        url = f"{self.url}/{prefix}{repo.repo_id}/commit/{commit.sha}"
        return _json(
            200, {"success": True, "commitOid": commit.sha, "commitUrl": url, "hookOutput": ""}
        )

    def _tag(self, repo: Repo, revision: str, payload: dict):
        commit = self._commit(repo, revision)
        tag = payload["tag"]
        if BAD_REF.search(tag) or not tag:
            raise HttpError(400, f"Invalid tag name '{tag}'")
        if tag in repo.tags or tag in repo.branches:
            raise HttpError(409, f"Tag {tag} already exists")
        repo.tags[tag] = commit.sha
        return _json(200, {})

    def _resolve(self, method: str, parts: list[str], token: str | None, headers):
        # /{datasets/|spaces/|}{namespace}/{name}/resolve/{revision}/{path...}
        repo_type = "model"
        if parts[0] in ("datasets", "spaces"):
            repo_type, parts = parts[0][:-1], parts[1:]
        if method not in ("GET", "HEAD") or len(parts) < 5 or parts[2] != "resolve":
            raise HttpError(404, "Not found")
        repo = self._repo(repo_type, f"{parts[0]}/{parts[1]}", token)
        commit = self._commit(repo, parts[3])
        path = "/".join(parts[4:])
        if path not in commit.files:
            raise HttpError(
                404,
                f"{path} does not exist",
                "EntryNotFound",
                extra_headers={"X-Repo-Commit": commit.sha},
            )
        return self._content(commit.files[path], {"X-Repo-Commit": commit.sha}, headers)

    def _content(self, content: bytes, extra: dict, headers):
        """A file's bytes, whole or the asked range."""
        out = {
            "ETag": f'"{blob_oid(content)}"',
            **extra,
            "Accept-Ranges": "bytes",
            "Content-Type": "text/plain; charset=utf-8",
        }
        status = 200
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", headers.get("Range") or "")
        if match and content:
            start = int(match[1]) if match[1] else max(len(content) - int(match[2]), 0)
            end = int(match[2]) if match[1] and match[2] else len(content) - 1
            if start >= len(content):
                raise HttpError(416, "Requested range not satisfiable")
            end = min(end, len(content) - 1)
            out["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
            content, status = content[start : end + 1], 206
        return status, out, content

    # ---- helpers ---------------------------------------------------------------------------

    def _repo(self, repo_type: str, repo_id: str, token: str | None) -> Repo:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None or (repo.private and token is None):
            raise HttpError(404, "Repository not found", "RepoNotFound")
        if repo.gated and token not in repo.accepted:
            raise HttpError(401 if token is None else 403,
                            f"Access to dataset {repo_id} is restricted. You must have access "
                            "to it and be authenticated to access it. Please log in.",
                            "GatedRepo")
        return repo

    def _commit(self, repo: Repo, revision: str) -> Commit:
        commit = repo.resolve(revision)
        if commit is None:
            raise HttpError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return commit

    def _require_write(self, token: str | None) -> None:
        if token is None:
            raise HttpError(401, "You must be authenticated to write")

    def _new_commit(
        self, repo: Repo, parent: str | None, title: str, files: dict[str, bytes]
    ) -> Commit:
        self._commits += 1
        date = datetime.fromtimestamp(1_700_000_000 + self._commits, UTC).isoformat()
        state = json.dumps(
            [parent, title, self._commits, sorted((p, blob_oid(b)) for p, b in files.items())]
        )
        commit = Commit(
            hashlib.sha1(state.encode()).hexdigest(),
            parent,
            title,
            date.replace("+00:00", ".000Z"),
            files,
        )
        repo.commits[commit.sha] = commit
        if parent is None:
            repo.branches["main"] = commit.sha
        return commit


def _json(status: int, payload, extra_headers: dict | None = None) -> tuple[int, dict, bytes]:
    return (
        status,
        {"Content-Type": "application/json", **(extra_headers or {})},
        json.dumps(payload).encode(),
    )


def _flag(params: dict[str, list[str]], name: str) -> bool:
    """A boolean query or form parameter, as the Hub reads it: "true" in any case."""
    return params.get(name, ["false"])[0].lower() == "true"


def _handler(server: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args) -> None:  # silence stderr access logs
            pass

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with server._lock:
                server._counter += 1
                server.log.append(f"{method} {self.path}")
                fault = server._fault_for(server._counter)
            if fault == "drop":
                self.close_connection = True
                return
            if fault is not None and fault.isdigit():
                status, headers, payload = _json(int(fault), {"error": f"injected HTTP {fault}"})
            elif fault == "echo":
                echo = f"bad request with Authorization: {self.headers.get('Authorization')}"
                status, headers, payload = _json(400, {"error": echo + "\nsee the logs"})
            else:
                try:
                    status, headers, payload = server.handle(method, self.path, self.headers, body)
                except HttpError as exc:
                    extra = {"X-Error-Message": exc.message, **exc.extra_headers}
                    if exc.code:
                        extra["X-Error-Code"] = exc.code
                    status, headers, payload = _json(
                        exc.status, {"error": exc.message, **exc.extra}, extra
                    )
            if fault == "drop-after":
                self.close_connection = True
                return
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(payload)
                with server._lock:
                    server.served.append((self.path, len(payload)))

        def do_GET(self) -> None:
            self._serve("GET")

        def do_HEAD(self) -> None:
            self._serve("HEAD")

        def do_POST(self) -> None:
            self._serve("POST")

    return Handler
