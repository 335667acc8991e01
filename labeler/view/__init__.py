"""`labeler view`: a local web page over artifact versions, and people's verdicts on them.

`open_viewing` opens version folders (read lazily, `index`), `make_server` serves them on
127.0.0.1 (`server`), verdicts are kept as `review` versions (`verdicts`, `review`).
"""

from labeler.view.server import make_server, open_viewing, serve_until_stopped

__all__ = ["make_server", "open_viewing", "serve_until_stopped"]
