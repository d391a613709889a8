"""The MCP server's stand-in while the Python environment is being built, standard library only.

A client connects to a server that must answer within seconds, and the first build of the environment
takes a minute or two. So until the environment is ready this stand-in speaks MCP itself: it answers
`initialize`, `tools/list` and `ping` at once (the tools are those of the real server, mcp_tools.py),
starts the build if nobody has, and holds tool calls. As soon as the environment is ready it starts the
real server, opens the session with it as the client opened it, and from then on passes every line
through unchanged, both ways. A tool call that waited WAIT seconds is answered with a tool error that
says when to try again.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import IO

from . import environment
from .mcp_tools import INSTRUCTIONS, SERVER_NAME, TOOLS, schema

WAIT = 20.0  # seconds a tool call is held for the environment before it is answered "try again"
POLL = 0.5
BUILD_SECONDS = 90  # what a first build takes on two cores, for the "try again" estimate


class Relay:
    def __init__(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.stdin, self.stdout = stdin, stdout
        self.lines: queue.Queue = queue.Queue()
        self.write_lock = threading.Lock()
        self.opened: dict | None = None  # the client's initialize params
        self.held: list[tuple[float, dict, bytes]] = []  # (when, message, line) of calls waiting for the server
        self.child: subprocess.Popen[bytes] | None = None  # the real server, once the environment is ready
        self.started = time.monotonic()

    # --- the stand-in ------------------------------------------------------------------------------

    def run(self) -> int:
        threading.Thread(target=self._read, daemon=True).start()
        self._start_build()
        while self.child is None:
            try:
                line = self.lines.get(timeout=POLL)
            except queue.Empty:
                line = b""
            if line is None:
                return 0  # the client hung up
            if line.strip():
                self._answer(line)
            if environment.ready(("mcp",)):
                if not self._hand_over():
                    return 1
            else:
                self._expire()
        return self._pass_through(self.child)

    def _read(self) -> None:
        for line in self.stdin:
            self.lines.put(line)
        self.lines.put(None)

    def _start_build(self) -> None:
        if not environment.ready(("mcp",)) and not environment.building():
            environment.start_preparing()

    def _answer(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return self._send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "not JSON"}})
        if not isinstance(message, dict):
            return self._send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "not a request"}})
        method, identifier = message.get("method"), message.get("id")
        if method == "initialize":
            self.opened = message.get("params") or {}
            return self._send({"jsonrpc": "2.0", "id": identifier, "result": self._initialized()})
        if "id" not in message or method is None:
            return None  # a notification (initialized, cancelled) or a reply: nothing to answer
        if method == "ping":
            return self._send({"jsonrpc": "2.0", "id": identifier, "result": {}})
        if method == "tools/list":
            return self._send({"jsonrpc": "2.0", "id": identifier, "result": {"tools": [
                {"name": name, "description": spec["description"], "inputSchema": schema(name),
                 "annotations": {"readOnlyHint": name != "refresh_index", "openWorldHint": False}}
                for name, spec in TOOLS.items()]}})
        self.held.append((time.monotonic(), message, line))  # tools/call and the rest: for the real server
        return None

    def _initialized(self) -> dict:
        version = (self.opened or {}).get("protocolVersion") or "2025-06-18"
        return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": SERVER_NAME, "version": "0"}, "instructions": INSTRUCTIONS}

    def _expire(self) -> None:
        now = time.monotonic()
        while self.held and now - self.held[0][0] >= WAIT:
            _, message, _ = self.held.pop(0)
            left = max(10, int(BUILD_SECONDS - (now - self.started)))
            text = (f"memory-search is setting up its Python environment (first use only; log: "
                    f"{environment.log_path()}): try again in about {left} s")
            if message.get("method") == "tools/call":
                self._send({"jsonrpc": "2.0", "id": message.get("id"),
                            "result": {"content": [{"type": "text", "text": text}], "isError": True}})
            else:
                self._send({"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32603, "message": text}})

    def _send(self, message: dict) -> None:
        self._write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    def _write(self, data: bytes) -> None:
        with self.write_lock:
            self.stdout.write(data)
            self.stdout.flush()

    # --- the hand-over -----------------------------------------------------------------------------

    def _hand_over(self) -> bool:
        """Start the real server and open its session as the client opened this one; False when it failed."""
        python = os.path.join(environment.venv_path(), "bin", "python")
        script = os.path.join(environment.ROOT, "scripts", "mcp_server.py")
        try:
            self.child = subprocess.Popen([python, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError as error:
            self._fail_held(f"cannot start the MCP server ({error.strerror})")
            return False
        to_child, from_child = _pipes(self.child)
        if self.opened is not None:
            _write_message(to_child, {"jsonrpc": "2.0", "id": "memory-search-relay", "method": "initialize",
                                      "params": self.opened})
            reply = from_child.readline()  # the real server's answer, kept to itself
            if not reply:
                self._fail_held("the MCP server stopped while starting: see its messages on stderr")
                return False
            _write_message(to_child, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for _, _, line in self.held:
            to_child.write(line if line.endswith(b"\n") else line + b"\n")
        to_child.flush()
        self.held = []
        return True

    def _fail_held(self, text: str) -> None:
        for _, message, _ in self.held:
            self._send({"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32603, "message": text}})
        self.held = []

    def _pass_through(self, child: subprocess.Popen[bytes]) -> int:
        to_child, from_child = _pipes(child)

        def replies():
            for line in from_child:
                self._write(line)

        pump = threading.Thread(target=replies, daemon=True)
        pump.start()
        try:
            while True:
                line = self.lines.get()
                if line is None:
                    break
                to_child.write(line)
                to_child.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            to_child.close()
        except OSError:
            pass
        code = child.wait()
        pump.join(timeout=5)
        return code


def _pipes(child: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    """The child's stdin and stdout: Popen opens both when both are asked for as pipes."""
    assert child.stdin is not None and child.stdout is not None
    return child.stdin, child.stdout


def _write_message(pipe: IO[bytes], message: dict) -> None:
    pipe.write(json.dumps(message).encode() + b"\n")
    pipe.flush()


def relay() -> int:
    """Serve MCP on this process's stdin and stdout until the client hangs up."""
    return Relay(sys.stdin.buffer, sys.stdout.buffer).run()
