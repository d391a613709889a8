"""The warm helper: a per-user process that keeps the model and the database connection loaded.

search.py sends it one JSON line over a Unix socket in a 0700 folder and reads one JSON line
back. The first call starts it and searches in-process meanwhile; a helper that is absent,
broken, of another code version or disabled is bypassed, with the same results."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

IDLE_SECONDS = 15 * 60
CONNECT_TIMEOUT = 0.5
REPLY_TIMEOUT = 120.0
PACKAGE = Path(__file__).resolve().parent


def runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    if not base:
        import tempfile  # only without XDG_RUNTIME_DIR: keep the warm path's imports small

        base = tempfile.gettempdir()
    return Path(base) / f"memory-search-{os.getuid()}"


def socket_path() -> Path:
    return runtime_dir() / "helper.sock"


def code_version() -> str:
    """Changes whenever a module of the package changes, so an old helper is never used."""
    digest = hashlib.sha1()
    for path in sorted(PACKAGE.glob("*.py")):
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


# --- client ---------------------------------------------------------------------------------------

class Unavailable(Exception):
    """The helper cannot answer; search in-process instead."""


def ask(settings, request) -> tuple[list, list[str]]:
    """(hits, warnings) from the helper. Raises Unavailable, or the error the search raised."""
    from . import errors

    message = {"version": code_version(), "settings": _settings_dict(settings), "request": _request_dict(request)}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(CONNECT_TIMEOUT)
            connection.connect(str(socket_path()))
            connection.settimeout(REPLY_TIMEOUT)
            connection.sendall(json.dumps(message).encode() + b"\n")
            reply = _read_line(connection)
    except OSError as error:
        raise Unavailable(str(error)) from None
    try:
        answer = json.loads(reply)
    except ValueError:
        raise Unavailable("unreadable reply") from None
    if answer.get("stale"):
        raise Unavailable("another code version")
    if "error" in answer:
        kind = getattr(errors, answer.get("type", ""), None)
        if isinstance(kind, type) and issubclass(kind, errors.MemorySearchError):
            raise kind(answer["error"])
        raise Unavailable(answer["error"])
    try:
        return [hit_from_wire(hit) for hit in answer["hits"]], answer.get("warnings", [])
    except (KeyError, TypeError, ValueError):
        raise Unavailable("unexpected reply") from None


def start_in_background() -> None:
    """Start a helper detached from this process; it gives up at once if another one runs."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE.parent), environment.get("PYTHONPATH")]))
    try:
        subprocess.Popen([sys.executable, "-m", "memory_search.daemon"], env=environment, cwd="/",
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    except OSError:
        pass


def stop() -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(CONNECT_TIMEOUT)
            connection.connect(str(socket_path()))
            connection.sendall(b'{"stop": true}\n')
            _read_line(connection)
        return True
    except OSError:
        return False


def _read_line(connection) -> bytes:
    chunks = []
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


def _settings_dict(settings) -> dict:
    """Settings as JSON, paths made absolute: the helper runs in another working directory."""
    data = dataclasses.asdict(settings)
    for key in ("memories_dir", "data_dir"):
        data[key] = os.path.abspath(data[key])
    return data


def _request_dict(request) -> dict:
    data = dataclasses.asdict(request)
    filters = data["filters"]
    for key in ("since", "until"):
        filters[key] = filters[key].isoformat() if filters[key] else None
    filters["where"] = [[condition["field"], condition["operator"], condition["value"]]
                        for condition in filters["where"]]
    return data


_HIT_FIELDS = ("score", "snippet", "start_line", "end_line", "chunk_text", "chunk_index", "legs", "stale")
_RECORD_FIELDS = ("path", "relpath", "kind", "title", "status", "tags", "project", "date", "time", "frontmatter")


def hit_to_wire(hit) -> dict:
    """A hit as plain JSON values, field by field."""
    record = {key: getattr(hit.record, key) for key in _RECORD_FIELDS}
    record["tags"] = list(record["tags"])
    record["date"] = record["date"].isoformat() if record["date"] else None
    return {"record": record, **{key: getattr(hit, key) for key in _HIT_FIELDS}}


def hit_from_wire(data: dict):
    import datetime as dt

    from .records import Record
    from .retrieval import Hit

    record = dict(data["record"])
    record["tags"] = tuple(record["tags"])
    record["date"] = dt.date.fromisoformat(record["date"]) if record["date"] else None
    return Hit(record=Record(**{key: record[key] for key in _RECORD_FIELDS}),
               **{key: data[key] for key in _HIT_FIELDS})


# --- server ---------------------------------------------------------------------------------------

def serve(idle_seconds: float = IDLE_SECONDS) -> None:
    import fcntl

    folder = runtime_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    lock = open(folder / "helper.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another helper runs
    path = socket_path()
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    os.umask(0o077)
    server.bind(str(path))
    server.listen(16)
    server.settimeout(idle_seconds)
    version = code_version()
    state = _State()
    try:
        while True:
            try:
                connection, _ = server.accept()
            except socket.timeout:
                return
            with connection:
                connection.settimeout(REPLY_TIMEOUT)
                try:
                    message = json.loads(_read_line(connection) or b"null")
                except (OSError, ValueError):
                    continue
                if not isinstance(message, dict):
                    continue
                if message.get("stop"):
                    connection.sendall(b'{"stopped": true}\n')
                    return
                if message.get("version") != version:
                    connection.sendall(b'{"stale": true}\n')
                    return  # the caller starts a helper of its own version
                reply = state.answer(message)
                try:
                    connection.sendall(json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n")
                except OSError:
                    pass
    finally:
        server.close()
        if path.exists():
            path.unlink(missing_ok=True)
        state.close()


class _State:
    """A library object (connection and embedders) kept warm per distinct setting."""

    def __init__(self):
        self.libraries: dict[str, object] = {}

    def answer(self, message: dict) -> dict:
        from .errors import MemorySearchError

        warnings: list[str] = []
        try:
            hits = self._search(message["settings"], message["request"], warnings.append)
        except MemorySearchError as error:
            return {"error": str(error), "type": type(error).__name__}
        except Exception as error:  # a broken helper must not break the caller: it falls back
            self._forget(message["settings"])
            return {"error": f"{type(error).__name__}: {error}", "type": "Unavailable"}
        return {"hits": [hit_to_wire(hit) for hit in hits], "warnings": warnings}

    def _search(self, settings_data: dict, request_data: dict, warn) -> list:
        import datetime as dt

        from .api import Memories
        from .config import Settings
        from .filters import Condition, Filters
        from .retrieval import SearchRequest

        settings_data = dict(settings_data)
        for key in ("memories_dir", "data_dir"):
            settings_data[key] = Path(settings_data[key])
        settings = Settings(**settings_data)
        filters_data = dict(request_data["filters"])
        for key in ("since", "until"):
            filters_data[key] = dt.date.fromisoformat(filters_data[key]) if filters_data[key] else None
        filters_data["tags"] = tuple(filters_data["tags"])
        filters_data["where"] = tuple(Condition(field, operator, tuple(value) if isinstance(value, list) else value)
                                      for field, operator, value in filters_data["where"])
        request = SearchRequest(**{**request_data, "filters": Filters(**filters_data)})
        key = json.dumps(settings_data, sort_keys=True, default=str)
        memories = self.libraries.get(key)
        if memories is None:
            memories = self.libraries[key] = Memories(settings)
        memories.warn = warn
        return memories.run(request)

    def _forget(self, settings_data: dict) -> None:
        key = json.dumps(settings_data, sort_keys=True, default=str)
        memories = self.libraries.pop(key, None)
        if memories is not None:
            memories.close()

    def close(self) -> None:
        for memories in self.libraries.values():
            memories.close()


if __name__ == "__main__":
    serve(float(os.environ.get("MEMORIES_HELPER_IDLE", IDLE_SECONDS)))
