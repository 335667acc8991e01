"""`--max-rps` and `--max-tpm` hold requests back: the limiter on a clock of the test's own
(its sleep moves the clock), so what is asserted is when each request may go, not how long a
test took; and a served client waits on it before each request, counting its answers'
tokens (a stdlib server on 127.0.0.1 answers them)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from labeler.llm.served import Server
from labeler.llm.served_limits import Limits


class Clock:
    """Monotonic seconds that pass only when slept."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def sent_at(limits: Limits, clock: Clock, requests: int, tokens: int = 0) -> list[float]:
    """When each of `requests` went, each answered at once with `tokens` tokens."""
    times = []
    for _ in range(requests):
        limits.wait()
        times.append(clock.now)
        limits.spent(tokens)
    return times


def test_max_rps_lets_no_more_requests_go_in_any_second():
    clock = Clock()
    times = sent_at(Limits(max_rps=4, clock=clock, sleep=clock.sleep), clock, 20)
    assert times == pytest.approx([i / 4 for i in range(20)])
    assert all(later - first >= 1 - 1e-9 for first, later in zip(times, times[4:]))


def test_max_tpm_holds_requests_until_the_minute_has_room():
    """Requests go while the last minute's answers hold fewer than max_tpm tokens; the next
    waits until the oldest of them is a minute old."""
    clock = Clock()
    times = sent_at(Limits(max_tpm=100, clock=clock, sleep=clock.sleep), clock, 10, tokens=30)
    assert times == [0.0] * 4 + [60.0] * 4 + [120.0] * 2


def test_no_limit_holds_nothing():
    clock = Clock()
    assert sent_at(Limits(clock=clock, sleep=clock.sleep), clock, 50, tokens=10**6) == [0.0] * 50


class _Answers(BaseHTTPRequestHandler):
    """Every POST: one choice, its usage 60 tokens."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        data = json.dumps({"choices": [{"index": 0, "text": "ok"}], "usage": {
            "prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_served_client_waits_on_its_limits_and_counts_the_tokens_answered():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    clock = Clock()
    server = Server(f"http://127.0.0.1:{httpd.server_address[1]}/v1", None, concurrency=1,
                    limits=Limits(max_rps=2, max_tpm=100, clock=clock, sleep=clock.sleep))
    try:
        times = []
        for _ in range(4):
            server.post("/completions", {"prompt": "hi"})
            times.append(clock.now)
    finally:
        server.close()
        httpd.shutdown()
        httpd.server_close()
    # two answers (120 tokens) fill the minute: the third waits until the first is 60 s old
    assert times == pytest.approx([0.0, 0.5, 60.0, 60.5])
    assert server.usage.snapshot() == {"requests": 4, "prompt_tokens": 200,
                                       "completion_tokens": 40}
