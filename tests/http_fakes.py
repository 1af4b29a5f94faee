"""A tiny HTTP server for tests: 127.0.0.1, a free port, a handler function, every request recorded.

    with FakeServer(lambda req: Reply.json({"ok": True})) as server:
        requests.get(server.url + "/x")
    assert server.requests[0].path == "/x"

The server runs on daemon threads and shuts itself down after `lifetime_s` even if a test hangs.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # sleep before answering (to provoke client timeouts)

    @classmethod
    def json(cls, obj: Any, status: int = 200, headers: dict[str, str] | None = None, delay_s: float = 0.0) -> "Reply":
        return cls(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"),
                   {"Content-Type": "application/json", **(headers or {})}, delay_s)


def chat_reply(text: str) -> Reply:
    """An OpenAI chat-completions answer."""
    return Reply.json({"id": "chatcmpl-test", "object": "chat.completion", "model": "fake",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}]})


class FakeServer:
    def __init__(self, handler: Callable[[Request], Reply], *, lifetime_s: float = 60.0):
        self.handler = handler
        self.lifetime_s = lifetime_s
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(self.command, self.path, dict(self.headers.items()), body)
                with fake._lock:
                    fake.requests.append(req)
                try:
                    reply = fake.handler(req)
                except Exception as exc:  # a bug in the test's handler shows up as a 599
                    reply = Reply(599, repr(exc).encode())
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._timer = threading.Timer(lifetime_s, self._server.shutdown)
        self._timer.daemon = True

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeServer":
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def paths(self, method: str | None = None) -> list[str]:
        return [r.path for r in self.requests if method is None or r.method == method]


def scripted(*replies: Reply | Callable[[Request], Reply]) -> Callable[[Request], Reply]:
    """A handler answering with `replies` in order, then repeating the last one."""
    queue = list(replies)
    lock = threading.Lock()

    def handle(req: Request) -> Reply:
        with lock:
            reply = queue.pop(0) if len(queue) > 1 else queue[0]
        return reply(req) if callable(reply) else reply

    return handle
