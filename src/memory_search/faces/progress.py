"""A progress bar on stderr, drawn only when stderr is a terminal; or, asked for, a plain line every few seconds
(logs, CI, `make demo` behind a pipe)."""

from __future__ import annotations

import sys
import time


class Progress:
    LINE_EVERY = 3.0  # seconds between plain lines

    def __init__(self, stream=None, label: str = "indexing", lines: bool = False):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.lines = lines and not self.enabled
        self._last_line: tuple[str, str] | None = None
        self.label = label
        self.total = self.files = self.chunks = 0
        self.unit = "files"
        self.started = time.monotonic()
        self._drawn = 0.0

    def start(self, total: int, label: str | None = None, unit: str = "files") -> None:
        """Count `total` units (files, or chunks while embedding)."""
        self.label, self.unit = label or self.label, unit
        self.total, self.files, self.chunks = total, 0, 0
        self.started = time.monotonic()
        self._draw(force=True)

    def advance(self, files: int, chunks: int) -> None:
        self.files += files
        self.chunks += chunks
        self._draw()

    def note(self, message: str) -> None:
        """A line of news, on a terminal or not."""
        if self.enabled:
            self.stream.write("\r\033[K")
        self.stream.write(message + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.lines and self.total:
            self._line(time.monotonic())
        if self.enabled and self.total:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.lines and self.total and (force or now - self._drawn >= self.LINE_EVERY):
            self._drawn = now
            self._line(now)
            return
        if not self.enabled or not self.total or (not force and now - self._drawn < 0.1):
            return
        self._drawn = now
        done = self.files / self.total
        width = 30
        bar = "#" * int(done * width) + "-" * (width - int(done * width))
        elapsed = now - self.started
        eta = f"{elapsed / done - elapsed:4.0f}s left" if 0 < done < 1 else f"{elapsed:4.0f}s"
        counts = (f"{self.files}/{self.total} files, {self.chunks} chunks" if self.unit == "files"
                  else f"{self.files}/{self.total} {self.unit}")
        self.stream.write(f"\r\033[K{self.label} [{bar}] {counts}, {eta}")
        self.stream.flush()

    def _line(self, now: float) -> None:
        done = f"{self.files}/{self.total} {self.unit}" + (f", {self.chunks} chunks" if self.unit == "files" else "")
        if (self.label, done) == self._last_line:  # finish() right after the last step's line
            return
        self._last_line = (self.label, done)
        self.stream.write(f"{self.label}: {done}, {now - self.started:.0f} s\n")
        self.stream.flush()
