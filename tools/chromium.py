"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe): Debian's browser
itself, no driver program, no debugging port, standard library only. Used by the page's tests
(tests/test_page.py) and by tools/bench/page.py.

    with Browser() as browser:
        page = browser.page(width=1280, height=800, language="ja")
        page.goto(url, until="document.body.dataset.ready === '1'")
        page.type("#q", "HNSW"); page.press("Enter")
        page.screenshot("shot.png")
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-default-apps",
         "--mute-audio", "--hide-scrollbars", "--remote-debugging-pipe"]
KEYS = {"Enter": 13, "Tab": 9, "Escape": 27, "ArrowDown": 40, "ArrowUp": 38, "/": 191}


def available() -> bool:
    return os.path.exists(CHROMIUM)


class BrowserError(Exception):
    pass


class Browser:
    """One Chromium process; its pages share nothing but the process (each has its own browser context)."""

    def __init__(self, executable: str = CHROMIUM, timeout: float = 30):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="memory-search-chromium-")
        commands, self._commands = os.pipe()  # we write, Chromium reads (its fd 3)
        self._answers, answers = os.pipe()  # Chromium writes (its fd 4), we read

        def descriptors():  # in the child: the pipe's ends at 3 and 4, inherited across exec
            read_end, write_end = os.dup(commands), os.dup(answers)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                        preexec_fn=descriptors, close_fds=False, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands)
        os.close(answers)
        self._next = 0
        self._lock = threading.Lock()
        self._waiting: dict[int, list] = {}
        self.events: list[dict] = []
        self._listeners: list = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.send("Browser.getVersion")

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                block = os.read(self._answers, 1 << 16)
            except OSError:
                block = b""
            if not block:
                for slot in self._waiting.values():
                    slot.append({"error": {"message": "the browser went away"}})
                return
            buffer += block
            while b"\0" in buffer:
                message, _, buffer = buffer.partition(b"\0")
                item = json.loads(message)
                if "id" in item and item["id"] in self._waiting:
                    self._waiting[item["id"]].append(item)
                else:
                    self.events.append(item)
                    for listener in list(self._listeners):
                        listener(item)

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float | None = None) -> dict:
        with self._lock:
            self._next += 1
            number = self._next
            slot: list = []
            self._waiting[number] = slot
            message = {"id": number, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while not slot:
            if time.monotonic() > deadline:
                raise BrowserError(f"{method}: no answer within {timeout or self.timeout} s")
            time.sleep(0.005)
        del self._waiting[number]
        if "error" in slot[0]:
            raise BrowserError(f"{method}: {slot[0]['error'].get('message')}")
        return slot[0].get("result", {})

    def page(self, width: int = 1280, height: int = 800, language: str = "en-US", mobile: bool = False) -> "Page":
        return Page(self, width, height, language, mobile)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except BrowserError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for descriptor in (self._commands, self._answers):
            try:
                os.close(descriptor)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Page:
    """A tab of its own browser context, at a given size and language; what its scripts say to the console,
    their uncaught errors and the browser's own complaints (a Content-Security-Policy refusal) are kept."""

    def __init__(self, browser: Browser, width: int, height: int, language: str, mobile: bool):
        self.browser = browser
        self.context = browser.send("Target.createBrowserContext")["browserContextId"]
        self.target = browser.send("Target.createTarget", {"url": "about:blank",
                                                           "browserContextId": self.context})["targetId"]
        self.session = browser.send("Target.attachToTarget", {"targetId": self.target, "flatten": True})["sessionId"]
        self.console: list[str] = []
        self.exceptions: list[str] = []
        browser._listeners.append(self._event)
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.resize(width, height, mobile)
        self.send("Emulation.setUserAgentOverride", {"userAgent": browser.send("Browser.getVersion")["userAgent"],
                                                    "acceptLanguage": language})
        self.send("Emulation.setLocaleOverride", {"locale": language})

    def _event(self, item: dict) -> None:
        if item.get("sessionId") != self.session:
            return
        method, params = item.get("method"), item.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.exceptions.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Log.entryAdded":
            self.console.append(f"{params['entry']['source']}: {params['entry']['text']}")

    def send(self, method: str, params: dict | None = None, timeout: float | None = None) -> dict:
        return self.browser.send(method, params, self.session, timeout)

    def close(self) -> None:
        self.browser._listeners.remove(self._event)
        self.browser.send("Target.closeTarget", {"targetId": self.target})
        self.browser.send("Target.disposeBrowserContext", {"browserContextId": self.context})

    def resize(self, width: int, height: int, mobile: bool = False) -> None:
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": mobile})

    def goto(self, url: str, until: str = "document.readyState === 'complete'", timeout: float = 30) -> None:
        self.send("Page.navigate", {"url": url})
        time.sleep(0.05)
        self.wait(until, timeout)

    def evaluate(self, expression: str, timeout: float | None = None):
        """The value of a JavaScript expression (a promise is awaited)."""
        answer = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, timeout)
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise BrowserError(details.get("exception", {}).get("description") or details.get("text"))
        return answer["result"].get("value")

    def wait(self, condition: str, timeout: float = 30) -> None:
        """Until the expression is true."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.evaluate(f"!!({condition})"):
                    return
            except BrowserError:
                pass  # the page is between two documents
            if time.monotonic() > deadline:
                raise BrowserError(f"waited {timeout} s for {condition}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the first element the selector finds (scrolled into view; a link
        that wraps, on its first line)."""
        box = self.evaluate(f"""(() => {{ const found = document.querySelector({json.dumps(selector)});
            if (!found) return null; found.scrollIntoView({{block: "center"}});
            const box = found.getClientRects()[0] || found.getBoundingClientRect();  // a wrapped link's first line
            return [box.x + box.width / 2, box.y + box.height / 2]; }})()""")
        if box is None:
            raise BrowserError(f"nothing on the page matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def focus(self, selector: str) -> None:
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")

    def type(self, text: str) -> None:
        """Text typed into whatever has the focus."""
        self.send("Input.insertText", {"text": text})

    def press(self, key: str, shift: bool = False) -> None:
        code = KEYS[key]
        common = {"key": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code,
                  "code": {"/": "Slash"}.get(key, key), "modifiers": 8 if shift else 0}
        text = {"Enter": "\r", "/": "/"}.get(key)
        self.send("Input.dispatchKeyEvent", {"type": "keyDown" if text else "rawKeyDown", **common,
                                             **({"text": text} if text else {})})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **common})

    def active(self) -> str:
        """What has the focus: tag#id.class, and its text's start."""
        return self.evaluate("""(() => { const at = document.activeElement; if (!at) return "";
            return at.tagName.toLowerCase() + (at.id ? "#" + at.id : "") + (at.className ? "." + at.className : "")
                + " " + (at.textContent || "").trim().slice(0, 60); })()""")

    def screenshot(self, path, full: bool = False) -> None:
        params = {"format": "png"}
        if full:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": size[0], "height": size[1],
                                                             "scale": 1})
        data = self.send("Page.captureScreenshot", params, timeout=60)["data"]
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))
