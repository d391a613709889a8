"""Settings, read in one place: environment variables, then ~/.config/cocoindex/.env."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import UsageError, first_line, quoted

DEFAULT_MEMORIES_DIR = "/Volumes/memory"

# Documented in the scripts' --help.
ENVIRONMENT_HELP = """\b
Environment:
  MEMORIES_DIR                  memories directory (default /Volumes/memory)
  MEMORIES_DATABASE_URL         PostgreSQL URL; also COCOINDEX_DATABASE_URL,
                                read from ~/.config/cocoindex/.env too.
                                Unset: the embedded server in MEMORIES_DATA_DIR
  MEMORIES_DATA_DIR             embedded server's home
                                (default $XDG_DATA_HOME/memory-search)
  MEMORIES_TABLE                read this table instead of the default one
  MEMORIES_EMBEDDING_PROVIDER   local | voyage (default: the model that built
                                the index; else voyage with a key, else local)
  MEMORIES_EMBEDDING_MODEL      Voyage model (default voyage-3-large)
  VOYAGE_API_KEY                Voyage AI key
  MEMORIES_VOYAGE_BASE_URL      Voyage API address (proxies, tests)
  MEMORIES_NO_DAEMON=1          never use the warm helper process
  MEMORIES_HELPER_IDLE          seconds before an idle helper exits (900)
  MEMORIES_DEBUG=1              show a traceback on unexpected errors
  MEMORIES_SEARCH_LOG=1         log every search (off by default) to
                                $XDG_STATE_HOME/memory-search/searches.jsonl
  MEMORIES_AUTO_INDEX=1         a search whose index is missing or behind
                                starts index.py in the background (the plugin
                                sets it)
  MEMORIES_CLAUDE_CODE=1        also index Claude Code's own memories (auto
                                memory, CLAUDE.md files) as kind claude, from
                                $CLAUDE_CONFIG_DIR or ~/.claude; or a list of
                                Claude folders, separated by :"""

RECENT_ENVIRONMENT_HELP = """\b
Environment:
  MEMORIES_DIR                  memories directory (default /Volumes/memory)"""

DATABASE_ENVIRONMENT_HELP = """\b
Environment:
  MEMORIES_DATA_DIR             embedded server's home
                                (default $XDG_DATA_HOME/memory-search)
  MEMORIES_DATABASE_URL         when set (or COCOINDEX_DATABASE_URL), the
                                scripts use that server, not the embedded one"""


@dataclass(frozen=True)
class Variable:
    """An environment variable the library or the scripts read (references/configuration.md is written from these)."""

    name: str
    default: str  # Markdown
    meaning: str  # Markdown


# Every environment variable read, in the order the configuration page lists them (a test holds the code to it).
ENVIRONMENT = (
    Variable("MEMORIES_DIR", "`/Volumes/memory`",
             "The memories directory. `--memories DIR` overrides it. `~` is expanded; the path is made absolute "
             "but symlinks are kept as given, because the managed index is named after this path."),
    Variable("MEMORIES_DATABASE_URL", "unset",
             "PostgreSQL URL (libpq form, e.g. `postgresql://user:pass@localhost:15432/cocoindex`). The server "
             "needs the `vector` extension (pgvector)."),
    Variable("COCOINDEX_DATABASE_URL", "unset",
             "Used when `MEMORIES_DATABASE_URL` is unset, so an existing CocoIndex setup works as it is. With "
             "neither set, the embedded server is used."),
    Variable("MEMORIES_TABLE", "unset",
             "search.py reads this table instead of looking for one (same as `--table`). A managed index can be "
             "named by its prefix (`<prefix>__chunks` is tried too). Letters, digits, `_`, `$`, and one optional "
             "`schema.` part. index.py and stats.py ignore it: they always use the managed tables of "
             "`MEMORIES_DIR`."),
    Variable("MEMORIES_EMBEDDING_PROVIDER", "chosen, see below",
             "`local` or `voyage`. Anything else is a usage error (exit 2)."),
    Variable("MEMORIES_EMBEDDING_MODEL", "`voyage-3-large`",
             "The Voyage model; set alone, it implies the voyage provider. The local provider has one model, "
             "`multilingual-e5-small`; naming another one together with `MEMORIES_EMBEDDING_PROVIDER=local` is a "
             "usage error."),
    Variable("VOYAGE_API_KEY", "unset",
             "Voyage AI key. When set: a new index uses Voyage, and search.py reranks with `rerank-2.5` unless "
             "`--no-rerank`."),
    Variable("MEMORIES_VOYAGE_BASE_URL", "Voyage's public API",
             "Another endpoint for the Voyage client (a proxy, a gateway, a test server); used for embeddings and "
             "reranking."),
    Variable("MEMORIES_DATA_DIR", "`$XDG_DATA_HOME/memory-search`",
             "Where the embedded PostgreSQL keeps its data (`<dir>/postgres`)."),
    Variable("XDG_DATA_HOME", "`~/.local/share`",
             "Base of the default data dir."),
    Variable("XDG_CONFIG_HOME", "`~/.config`",
             "serve.py writes its base URL to `memory-search/endpoint` there and reads more named indexes from "
             "`memory-search/databases.json` (http-api.md)."),
    Variable("MEMORIES_NO_DAEMON", "unset",
             "Any value but `0`/`false`/`no`/`off`: search.py, similar.py, recent.py and stats.py never use the "
             "warm helper process (for search.py the same as `--no-daemon`); every call loads what it needs "
             "itself."),
    Variable("MEMORIES_SEARCH_LOG", "unset",
             "Any value but `0`/`false`/`no`/`off`: every search, whichever face asks (search.py, the MCP tools "
             "`search` and `knowledge_search`, the HTTP API, the page), appends its query (query, filters, mode, top, "
             "result count, milliseconds, UTC timestamp) as one JSON line to "
             "`$XDG_STATE_HOME/memory-search/searches.jsonl` (mode 600). Off by default because queries can be "
             "private; never written into the memories directory; a log that cannot be written gives a warning, "
             "never a failed search. `stats.py --searches` summarizes it."),
    Variable("XDG_STATE_HOME", "`~/.local/state`",
             "Base of the search log's folder."),
    Variable("MEMORIES_HELPER_IDLE", "`900`",
             "Seconds an idle helper waits before it exits."),
    Variable("XDG_RUNTIME_DIR", "unset",
             "The warm helpers' sockets and pids go to `memory-search-<uid>/` there (else under `$TMPDIR` or "
             "`/tmp`)."),
    Variable("MEMORIES_AUTO_INDEX", "unset",
             "Any value but `0`/`false`/`no`/`off` (the plugin sets `1`): a search (any face's: search.py, the MCP"
             " `search` tool, the HTTP API, the page, a Python caller of `Memories.search`) whose index is missing"
             " starts an index run in the background (`python -m memory_search.indexing.auto DIR`, its output in "
             "`$XDG_STATE_HOME/memory-search/indexing/<hash>.log`), waits up to 8 s for the first files and "
             "answers with what is searchable, saying how many files are still waiting; a search that finds one of"
             " the newest records missing from the index, or older there, starts a catch-up run. At most one start"
             " per memories directory a minute."),
    Variable("MEMORIES_CLAUDE_CODE", "unset",
             "`1` (or `true`/`yes`/`on`; the plugin's `claude_code_memories` option): index Claude Code's own "
             "memories beside the memories directory, from `$CLAUDE_CONFIG_DIR`, else `~/.claude`; another value:"
             " the Claude Code folders to read, separated by `:`. Unset or `0`/`false`/`no`/`off`: not indexed "
             "(the next index run removes what an earlier one took in). See "
             "[Claude Code's own memories](#claude-codes-own-memories)."),
    Variable("MEMORIES_SETUP_HINT", "unset",
             "What an error says after `no memories folder is set:` or `memories directory ... not found:` instead"
             " of `set MEMORIES_DIR to your memories folder` (the plugin's says `set it with /plugin configure "
             "memory-search@memory-search ...`)."),
    Variable("MEMORIES_DEBUG", "unset",
             "Environment only. Any value but `0`: an unexpected error prints a Python traceback instead of the "
             "one-line `unexpected <Type>: ...` message."),
    Variable("MEMORIES_VENV", "`<skill>/.venv`",
             "Environment only. The virtual environment whose packages the scripts use (made by `make install`; "
             "the plugin sets `${CLAUDE_PLUGIN_DATA}/venv`): in place when the calling `python3` is the version it"
             " was built with, else by re-running under it. Set and missing, or built for another `pyproject.toml`"
             " or lock, it is built on first use from the lock `requirements/plugin.txt` (hash-checked; with uv "
             "when it can be had, else pip; log `memory-search-setup.log` beside it)."),
)


@dataclass(frozen=True)
class Settings:
    memories_dir: Path
    database_url: str | None  # None: the embedded server
    table: str | None
    provider: str | None  # None: decided by the index, then by the key
    model: str | None
    voyage_api_key: str | None
    voyage_base_url: str | None
    data_dir: Path
    daemon: bool = True
    search_log: Path | None = None  # where every face's searches are logged; None: not logged
    state_dir: Path | None = None  # $XDG_STATE_HOME/memory-search
    memories_dir_given: bool = True  # False: MEMORIES_DIR unset or empty, the default is in use
    setup_hint: str | None = None  # how to set the memories folder where these settings come from (a plugin's)
    auto_index: bool = False  # searches start index.py in the background when the index is missing or behind
    remote: bool = False  # the memories are on another machine: answer from the index alone (a team server)
    claude_code: tuple[Path, ...] = ()  # Claude Code folders whose memories are indexed too (directory/sources.py)

    @classmethod
    def from_env(cls, env=None, cwd: str | None = None) -> "Settings":
        """Settings from an environment (default: this process's); relative paths are taken from `cwd`
        (default: the working directory)."""
        env = dict(os.environ if env is None else env)
        cwd = cwd or os.getcwd()
        home = env.get("HOME") or str(Path.home())
        dotenv = _read_dotenv(Path(cwd, home, ".config/cocoindex/.env"))

        def get(name: str) -> str | None:
            value = env.get(name) or dotenv.get(name)
            return value.strip() if value and value.strip() else None

        def path(value: str | Path) -> Path:
            text = str(value)
            if text == "~" or text.startswith("~/"):
                text = home + text[1:]
            return Path(os.path.normpath(os.path.join(cwd, text)))

        data_home = get("XDG_DATA_HOME") or str(Path(home) / ".local/share")
        state_home = get("XDG_STATE_HOME") or str(Path(home) / ".local/state")
        state_dir = path(state_home) / "memory-search"
        return cls(
            memories_dir=path(get("MEMORIES_DIR") or DEFAULT_MEMORIES_DIR),
            memories_dir_given=get("MEMORIES_DIR") is not None,
            setup_hint=get("MEMORIES_SETUP_HINT"),
            auto_index=_truthy(get("MEMORIES_AUTO_INDEX")),
            database_url=get("MEMORIES_DATABASE_URL") or get("COCOINDEX_DATABASE_URL"),
            table=get("MEMORIES_TABLE"),
            provider=get("MEMORIES_EMBEDDING_PROVIDER"),
            model=get("MEMORIES_EMBEDDING_MODEL"),
            voyage_api_key=get("VOYAGE_API_KEY"),
            voyage_base_url=get("MEMORIES_VOYAGE_BASE_URL"),
            data_dir=path(get("MEMORIES_DATA_DIR") or Path(data_home) / "memory-search"),
            daemon=not _truthy(get("MEMORIES_NO_DAEMON")),
            search_log=state_dir / "searches.jsonl" if _truthy(get("MEMORIES_SEARCH_LOG")) else None,
            state_dir=state_dir,
            claude_code=tuple(path(folder) for folder in _claude_folders(get("MEMORIES_CLAUDE_CODE"),
                                                                          get("CLAUDE_CONFIG_DIR"))),
        )

    def with_overrides(self, **changes) -> "Settings":
        """Settings with command-line values on top; None leaves a value as it is. A relative memories_dir
        is taken from the working directory."""
        changes = {key: value for key, value in changes.items() if value is not None}
        if "memories_dir" in changes:
            changes["memories_dir"] = Path(os.path.abspath(Path(changes["memories_dir"]).expanduser()))
        return replace(self, **changes)

    def missing_memories(self) -> str:
        """What to say when the memories directory is not there."""
        if not self.memories_dir_given and self.setup_hint:
            return f"no memories folder is set: {self.setup_hint}"
        if self.setup_hint:
            return f"memories directory {self.memories_root} not found: {self.setup_hint}"
        if str(self.memories_root) == DEFAULT_MEMORIES_DIR:  # the original skill's macOS volume: say what else
            return (f"memories directory {DEFAULT_MEMORIES_DIR} (the default, a macOS volume) not found: set "
                    "MEMORIES_DIR to your memories folder, e.g. `export MEMORIES_DIR=~/memories` on Linux")
        return f"memories directory {self.memories_root} not found: set MEMORIES_DIR to your memories folder"

    @property
    def memories_root(self) -> Path:
        """The memories directory as an absolute path, as given (symlinks kept, like the recording side)."""
        return Path(os.path.abspath(self.memories_dir))


def _claude_folders(value: str | None, config_dir: str | None) -> list[str]:
    """The Claude Code folders MEMORIES_CLAUDE_CODE asks for: none when unset or off; Claude Code's own folder
    ($CLAUDE_CONFIG_DIR, else ~/.claude) for 1, true, yes or on; else the folders it lists, separated by the
    system's path separator (: or ;)."""
    if not value or not _truthy(value):
        return []
    if value.lower() in ("1", "true", "yes", "on"):
        return [config_dir or "~/.claude"]
    return [folder.strip() for folder in value.split(os.pathsep) if folder.strip()]


def _truthy(value: str | None) -> bool:
    return value is not None and value != "" and value.lower() not in ("0", "false", "no", "off")


def _read_dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of ~/.config/cocoindex/.env (as the original read it), parsed by python-dotenv:
    quotes, `export` and trailing comments as shells treat them."""
    if not path.is_file():
        return {}
    try:
        from dotenv import dotenv_values

        return {key: value for key, value in dotenv_values(path, encoding="utf-8").items() if value is not None}
    except (OSError, UnicodeDecodeError, ValueError):
        return {}


# --- the named indexes a server serves ----------------------------------------------------------

def config_dir(env=None) -> Path:
    """The configuration folder: $XDG_CONFIG_HOME/memory-search (databases.json, the server's endpoint)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".config")
    return Path(base) / "memory-search"


def now() -> str:
    """The time now, ISO 8601 UTC, to the second: when a db was registered."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Database:
    """A named index a server serves (a "db"): a memories directory's, or one another machine builds."""

    name: str
    memories_dir: Path | None  # None: an index whose memories are on another machine (`index`)
    created_at: str  # when it was registered, ISO 8601 UTC
    settings: Settings | None = None  # set when loaded
    index: str | None = None  # the prefix of an index another machine builds (db.py indexes lists them)

    @classmethod
    def of(cls, name: str, index: str, directory: str, created: str) -> "Database":
        if index:
            return cls(name, None, created, index=index)
        return cls(name, Path(os.path.abspath(os.path.expanduser(directory))), created)


DEFAULT_DB = "default"  # MEMORIES_DIR's db, which a server always registers


def chosen_db(loaded: Mapping[str, Settings], name: str | None, api: bool = False) -> tuple[str, Settings]:
    """The loaded db a request's `db` parameter names, as (its name, its settings). Without a name, DEFAULT_DB
    when it is loaded, else the first loaded one. api: the /api/ routes' way instead, the seed's contract
    (references/http-api.md): the name is required, and the errors are the seed's words."""
    if not name:
        if api:
            raise UsageError("db is required")
        name = DEFAULT_DB if DEFAULT_DB in loaded else next(iter(loaded), "")
    if name not in loaded:
        if api:
            raise UsageError(f'"{name}" not exist')
        raise UsageError(f"unknown db {quoted(name)}: use one of {', '.join(loaded) or 'none'}")
    return name, loaded[name]


def databases_file(path: Path, started: str) -> dict[str, Database]:
    """The dbs databases.json registers, by name: {"databases": [{"db": NAME, "memories_dir": DIR | "index":
    PREFIX, "createAt": WHEN}, ...]}; none when the file is missing, UsageError when it cannot be used."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        document = {}
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot read {path} ({first_line(error)}): fix or remove it") from None
    entries = document.get("databases", []) if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise UsageError(f'{path}: expected {{"databases": [{{"db": NAME, "memories_dir": DIR}}, ...]}}')
    databases = {}
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("db") or not (entry.get("memories_dir") or entry.get("index")):
            raise UsageError(f"{path}: every entry needs db and memories_dir or index (got {quoted(entry)})")
        databases[str(entry["db"])] = Database.of(str(entry["db"]), str(entry.get("index") or ""),
                                                  str(entry.get("memories_dir") or ""),
                                                  str(entry.get("createAt") or started))
    return databases
