"""The click plumbing every command-line face shares: the Console a command reads and writes through, the
command decorator whose --help ends with examples, environment and exit codes, options generated from the
request parameters (params.py), and run(), which turns errors into one line and a documented exit code.

Every command writes through the Console it is given (click's ctx.obj): the process's own streams,
environment and working directory, or those of a request the warm helper runs (faces/helper.py). So
the same command runs in a script's process or in the helper, and the library never reads either."""

from __future__ import annotations

import gc
import os
import sys
from dataclasses import dataclass
from typing import Mapping, TextIO

import click

from .. import params
from ..config import ENVIRONMENT_HELP, Settings
from ..errors import (
    MemorySearchError,
    ParameterError,
    UsageError,
    first_line,
    mask_secrets,
    require_text,
    shorten_quotes,
)
from ..hints import command as hint
from .outcomes import EXIT_FAILURE, EXIT_USAGE, exit_code


def exit_codes_help(usage: str = "bad flag or value", missing: str | None = "the memories directory or the index is "
                    "missing", failure: str = "database, embedding service, index mismatch", *more: str,
                    success: str = "success, also when nothing matched") -> str:
    """The Exit codes paragraph of a script's --help: what 0 to 3 mean for it, then `more` lines."""
    lines = [f"  0  {success}", f"  1  runtime failure ({failure})", f"  2  usage error ({usage})"]
    lines += [f"  3  {missing}"] if missing else []
    return "\b\nExit codes:\n" + "\n".join([*lines, *more, "  130  interrupted"])


EXIT_CODES_HELP = exit_codes_help("bad flag, empty query, --top outside 1..100")
PATH_EXIT_CODES_HELP = exit_codes_help("bad flag, a path outside the memories directory",
                                       "the memories directory or the index is missing, or the memory is not indexed")


@dataclass
class Console:
    """Where one run of a command reads and writes: this process's streams, environment and working
    directory, or a helper request's."""

    stdout: TextIO
    stderr: TextIO
    environ: Mapping[str, str]
    cwd: str
    resources: object | None = None  # resources.Resources shared by the helper's requests
    prog: str = "memory-search"
    columns: int | None = None  # the terminal's width, for --help

    @classmethod
    def of_process(cls, prog: str) -> "Console":
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = "/"
        return cls(sys.stdout, sys.stderr, os.environ, cwd, prog=prog)

    def out(self, text: str = "") -> None:
        try:
            self.stdout.write(text + "\n")
        except BrokenPipeError:
            raise
        except OSError as error:  # a full disk under a redirected output
            raise MemorySearchError(f"cannot write the output ({error.strerror or first_line(error)})") from None

    def flush(self) -> None:
        """Write out what is buffered, where a failure can still be reported."""
        try:
            self.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise MemorySearchError(f"cannot write the output ({error.strerror or first_line(error)})") from None

    def err(self, text: str) -> None:
        self.stderr.write(text + "\n")
        self.stderr.flush()

    def warn(self, message: str) -> None:
        self.err(f"{self.prog}: warning: {message}")

    def absolute(self, path: str) -> str:
        """A path given on the command line, relative to this run's working directory."""
        return os.path.normpath(os.path.join(self.cwd, os.path.expanduser(path)))

    def settings(self, memories: str | None = None, table: str | None = None, daemon: bool | None = None) -> Settings:
        if memories is not None and not memories.strip():
            raise UsageError("--memories is empty: give the memories directory")
        require_text(memories, "--memories")
        settings = Settings.from_env(self.environ, self.cwd)
        settings = settings.with_overrides(memories_dir=self.absolute(memories) if memories else None, table=table)
        return settings if daemon is None else settings.with_overrides(daemon=daemon)

    def open(self, settings: Settings, warn=None):
        """The library object a command works with: over the helper's shared resources when there are some."""
        from ..api import Memories

        return Memories(settings, warn=warn, resources=self.resources)

    def memory_path(self, path: str, settings: Settings) -> str:
        """A memory's path as the user gave it: relative to the working directory when it exists there, else
        to the memories directory."""
        if path.strip() and not os.path.isabs(os.path.expanduser(path)):
            here = self.absolute(path)
            if os.path.exists(here):
                return here
        return path

    @property
    def debug(self) -> bool:
        return (self.environ.get("MEMORIES_DEBUG") or "0").strip() not in ("", "0")


class _HelpToConsole:
    """--help written to the run's Console rather than to the process's stdout."""

    def get_help_option(self, ctx):
        names = self.get_help_option_names(ctx)
        if not names or not self.add_help_option:
            return None
        if self._help_option is None:
            def show(ctx, param, value):
                if value and not ctx.resilient_parsing:
                    console = ctx.find_object(Console)
                    (console.stdout if console else sys.stdout).write(ctx.get_help() + "\n")
                    ctx.exit()

            self._help_option = click.Option(names, is_flag=True, expose_value=False, is_eager=True,
                                             help="Show this message and exit.", callback=show)
        return self._help_option


class Command(_HelpToConsole, click.Command):
    pass


class Group(_HelpToConsole, click.Group):
    pass


def command(examples: str, environment: str = ENVIRONMENT_HELP, exit_codes: str = EXIT_CODES_HELP):
    """A click command whose --help ends with examples, environment variables and exit codes."""
    epilog = "\b\nExamples:\n" + examples + "\n\n" + environment + "\n\n" + exit_codes
    return click.command(cls=Command, epilog=epilog, context_settings={"help_option_names": ["-h", "--help"]})


def option(name: str, **overrides):
    """The click option of a request parameter (params.PARAMETERS), with its help in this command's words."""
    parameter = params.PARAMETERS[name]
    settings: dict = {"help": overrides.pop("help", parameter.help)}
    if parameter.metavar:
        settings["metavar"] = parameter.metavar
    if parameter.kind == "choice":
        settings.update(type=click.Choice(list(parameter.choices)))
        if parameter.default is not None:
            settings.update(default=parameter.default, show_default=True)
    elif parameter.kind == "integer":
        settings["type"] = click.IntRange(parameter.minimum, parameter.maximum)
        if parameter.default is not None and name != "start_line":
            settings.update(default=parameter.default, show_default=True)
    elif parameter.kind == "number":
        settings["type"] = float
    elif parameter.kind == "boolean" and parameter.default:
        settings.update(default=True)
        return click.option(f"{parameter.cli}/--no-{parameter.cli[2:]}", name, **{**settings, **overrides})
    elif parameter.kind == "boolean":
        settings["is_flag"] = True
    elif parameter.kind == "texts":
        settings["multiple"] = True
    settings.update(overrides)
    return click.option(parameter.cli, name, **settings)


def options(*decorators):
    """Several click options as one decorator, listed in --help in the order given."""
    def apply(function):
        for decorator in reversed(decorators):
            function = decorator(function)
        return function
    return apply


def checked(values: dict, names) -> dict:
    """The parameters' values as params checks them; a bad one is a usage error naming the option."""
    try:
        return params.check({name: values.get(name) for name in names}, names)
    except ParameterError as error:
        raise UsageError(error.spelled(params.PARAMETERS[error.parameter].cli)) from None


def run(command: click.Command, prog: str, args=None, console: Console | None = None, exits: bool = True,
        after=None) -> int:
    """Run a click command with one-line errors and the documented exit codes.

    exits: end the process with the exit code (False in the helper and in tests, which run many).
    after(code): called once the output is written, before the process ends (launch.py starts a warm helper
    there, so its start-up does not slow this call)."""
    console = console or Console.of_process(prog)
    console.prog = prog
    code = EXIT_FAILURE
    try:
        code = command.main(args=args, prog_name=prog, standalone_mode=False, obj=console,
                            terminal_width=console.columns)
        console.flush()
    except click.exceptions.Exit as done:
        code = done.exit_code
    except click.UsageError as error:
        code = _fail(console, f"{shorten_quotes(error.format_message())} (see {prog} --help)", EXIT_USAGE)
    except ParameterError as error:
        known = params.PARAMETERS.get(error.parameter)
        code = _fail(console, error.spelled(known.cli) if known else str(error), EXIT_USAGE)
    except MemorySearchError as error:
        code = _fail(console, str(error), exit_code(error))
    except (KeyboardInterrupt, click.Abort):
        code = _fail(console, "interrupted", 130)
    except BrokenPipeError:
        code = 0
        if exits:
            sys.stderr.close()
    except Exception as error:  # last resort: still one line, never a traceback
        if console.debug:
            raise
        code = _fail(console, _describe_unexpected(error), EXIT_FAILURE)
    code = code if isinstance(code, int) else 0
    if after is not None:
        after(code)
    if exits:
        _settle_output()
        gc.freeze()  # spare the collector its pass over every object at shutdown: 30 ms of a short search
        sys.exit(code)
    return code


def _settle_output() -> None:
    """Output that could not be written (a full disk) is dropped, so the interpreter's last flush does not fail
    again with a traceback and another exit code; the failure was reported."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass


def _describe_unexpected(error: Exception) -> str:
    if type(error).__module__.startswith("psycopg"):  # without importing psycopg on the way here
        from ..api import database_refusal as refusal

        if refusal(error) is not None:
            return str(refusal(error))
        if type(error).__name__ in ("OperationalError", "AdminShutdown", "ConnectionTimeout"):
            return (f"PostgreSQL went away ({first_line(error)}): check that it runs "
                    f"(`{hint('db', 'status')}`, or your MEMORIES_DATABASE_URL server) and try again")
        return f"PostgreSQL refused the request ({first_line(error)})"
    return f"unexpected {type(error).__name__}: {first_line(error)} (set MEMORIES_DEBUG=1 for a traceback)"


def _fail(console: Console, message: str, code: int) -> int:
    console.err(f"{console.prog}: error: {_masked(console, message)}")
    return code


def _masked(console: Console, message: str) -> str:
    """Never print a secret: the configured ones by value, any password, token or key by its shape."""
    try:
        settings = Settings.from_env(console.environ, console.cwd)
        known: tuple[str | None, ...] = (settings.voyage_api_key, settings.database_url)
    except Exception:  # masking must not fail; the shapes are still masked
        known = ()
    return mask_secrets(message, *known)


memories_option = click.option("--memories", "memories", metavar="DIR",
                               help="memories directory (default: $MEMORIES_DIR)")
table_option = click.option("--table", help="read this table (default: $MEMORIES_TABLE, the managed index, then "
                                            "CocoIndex's)")
format_option = click.option("--format", "output", type=click.Choice(["markdown", "json"]), default="markdown",
                             show_default=True)
