"""The parts of the reference pages that the code defines, written by cog (`make docs` writes them, `make lint`
checks them): each script's options as its --help gives them (references/commands.md) and the environment
variables (references/configuration.md, from config.ENVIRONMENT).

    .venv/bin/cog -r -I tools references/commands.md references/configuration.md
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(ROOT / "src"))

import click  # noqa: E402

from memory_search.config import ENVIRONMENT  # noqa: E402


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _usage(command: click.Command, prog: str) -> str:
    context = click.Context(command, info_name=prog)
    pieces = command.collect_usage_pieces(context)
    return " ".join([prog, *pieces])


def _summary(command: click.Command) -> str:
    text = (command.help or "").split("\n\n")[0]
    return " ".join(text.split())


def _metavar(option: click.Option, context: click.Context) -> str:
    """How the table names an option's value: its metavar, else a word for its type."""
    if option.is_flag:
        return ""
    if option.metavar:
        return option.metavar
    if isinstance(option.type, click.Choice):
        return (option.name or "").upper()
    if isinstance(option.type, click.IntRange):
        return "N"
    if option.type is click.FLOAT or isinstance(option.type, click.types.FloatParamType):
        return "X"
    return option.make_metavar(context)


def _options(command: click.Command, prog: str) -> list[str]:
    context = click.Context(command, info_name=prog)
    rows = []
    for option in command.get_params(context):
        if not isinstance(option, click.Option) or option.hidden or "--help" in option.opts:
            continue
        metavar = _metavar(option, context)
        names = " / ".join(f"`{name}{' ' + metavar if metavar else ''}`"
                           for name in [", ".join(option.opts), *option.secondary_opts])
        help_text = " ".join((option.help or "").split())
        if isinstance(option.type, click.Choice):
            choices = "one of " + ", ".join(str(choice) for choice in option.type.choices)
            help_text = f"{choices}; {help_text}" if help_text else choices
        if option.show_default and option.default is not None and not option.is_flag:
            help_text += f" (default: {option.default})"
        rows.append(f"| {_cell(names)} | {_cell(help_text)} |")
    if not rows:
        return []
    return ["| option | what it does |", "|---|---|", *rows]


def _section(command: click.Command, prog: str, heading: str) -> list[str]:
    lines = [f"{heading} {prog}", "", f"`{_usage(command, prog)}`: {_summary(command)}", ""]
    table = _options(command, prog)
    if table:
        lines += [*table, ""]
    if isinstance(command, click.Group):
        for name in command.commands:  # in the order they are defined
            lines += _section(command.commands[name], f"{prog} {name}", heading + "#")
    return lines


def commands() -> None:
    """Write a section per script: its usage, what it does, and a table of its options."""
    import cog

    from memory_search.faces.cli import COMMANDS
    from memory_search.faces.serve_command import serve_command

    scripts = {**COMMANDS, "serve": serve_command}
    order = ["search", "similar", "recent", "index", "related", "export", "stats", "db", "serve"]
    assert set(order) == set(scripts), f"a script is missing from the order: {set(scripts) ^ set(order)}"
    lines: list[str] = []
    for name in order:
        lines += _section(scripts[name], f"{name}.py", "##")
    cog.out("\n".join(lines))


def environment() -> None:
    """Write the table of environment variables."""
    import cog

    lines = ["| Variable | Default | Meaning |", "|---|---|---|"]
    lines += [f"| `{variable.name}` | {variable.default} | {variable.meaning} |" for variable in ENVIRONMENT]
    cog.out("\n".join(lines) + "\n")
