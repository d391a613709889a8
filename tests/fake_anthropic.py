"""A stand-in for the Claude Messages API on loopback: asks for tools, then ends the turn.

The first request of a conversation is answered with one tool_use block per planned tool input;
the request that carries their tool_result blocks is answered with a closing text."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeMessages:
    def __init__(self, tool_name: str, tool_inputs: list[dict]):
        self.tool_name = tool_name
        self.tool_inputs = tool_inputs
        self.requests: list[dict] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def tool_results(self) -> list[dict]:
        """The tool_result blocks the client sent back, in order."""
        return [block for request in self.requests for message in request["messages"] if message["role"] == "user"
                and isinstance(message["content"], list) for block in message["content"]
                if block.get("type") == "tool_result"]

    def _reply(self, body: dict) -> dict:
        last = body["messages"][-1]
        answered = isinstance(last["content"], list) and any(
            block.get("type") == "tool_result" for block in last["content"])
        if answered:
            content, stop = [{"type": "text", "text": "Answered from the memories."}], "end_turn"
        else:
            content = [{"type": "tool_use", "id": f"toolu_{number}", "name": self.tool_name, "input": tool_input}
                       for number, tool_input in enumerate(self.tool_inputs)]
            stop = "tool_use"
        return {"id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 10}}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path.split("?")[0] != "/v1/messages":
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}})
                fake.requests.append(body)
                self._send(200, fake._reply(body))

            def _send(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
