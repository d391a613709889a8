"""A stand-in for Voyage AI's HTTP API on loopback: /v1/embeddings and /v1/rerank.

Embeddings are hashed bags of words, so texts sharing words are close, as with a real model."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GOOD_KEY = "test-key"


def bag_of_words(text: str, dimension: int) -> list[float]:
    vector = [0.0] * dimension
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dimension] += 1.0
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return [value / norm for value in vector]


class FakeVoyage:
    def __init__(self):
        self.requests: list[dict] = []
        self.fail_next: list[int] = []  # HTTP statuses to answer before succeeding
        self.fail_rerank = False
        self.hang = False  # accept the request and never answer
        self.echo_key_in_errors = False  # error bodies repeat the Authorization header, as some proxies do
        self.gate: threading.Event | None = None  # when set to an Event, questions wait for it before an answer
        self.latency = 0.0  # seconds each question's answer takes (a query's vector, a rerank), as over the internet
        self.waiting: list[str] = []  # the questions waiting at the gate now ("rerank: " before a rerank's)
        self._count = threading.Lock()
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def wait_at_gate(self, query: str) -> None:
        with self._count:
            self.waiting.append(query)
        self.gate.wait(20)
        with self._count:
            self.waiting.remove(query)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append({"path": self.path, **body})
                if fake.hang:
                    time.sleep(60)
                    return None
                if self.headers.get("Authorization") != f"Bearer {GOOD_KEY}":
                    return self._send(401, {"detail": "Provided API key is invalid."})
                if fake.fail_next:
                    detail = "try again"
                    if fake.echo_key_in_errors:
                        detail = f"bad request with headers Authorization: {self.headers.get('Authorization')}"
                    return self._send(fake.fail_next.pop(0), {"detail": detail})
                asking = (body["input"][0] if self.path.endswith("/embeddings") and body.get("input_type") == "query"
                          else "rerank: " + body["query"] if self.path.endswith("/rerank") else None)
                if asking is not None:  # a question: the time a distant service takes, and the gate
                    time.sleep(fake.latency)
                    if fake.gate:
                        fake.wait_at_gate(asking)
                if self.path.endswith("/embeddings"):
                    dimension = body.get("output_dimension") or 1024
                    data = []
                    for i, text in enumerate(body["input"]):
                        vector = bag_of_words(text, dimension)
                        if body.get("encoding_format") == "base64":
                            vector = base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode()
                        data.append({"object": "embedding", "embedding": vector, "index": i})
                    return self._send(200, {"object": "list", "data": data, "model": body["model"],
                                            "usage": {"total_tokens": 10 * len(data)}})
                if self.path.endswith("/rerank") and fake.fail_rerank:
                    return self._send(500, {"detail": "rerank is down"})
                if self.path.endswith("/rerank"):
                    query = set(re.findall(r"\w+", body["query"].lower()))
                    scored = [(len(query & set(re.findall(r"\w+", doc.lower()))) / (len(query) or 1), i)
                              for i, doc in enumerate(body["documents"])]
                    scored.sort(reverse=True)
                    return self._send(200, {"object": "list", "model": body["model"], "usage": {"total_tokens": 5},
                                            "data": [{"index": i, "relevance_score": s} for s, i in scored]})
                return self._send(404, {"detail": "not found"})

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
