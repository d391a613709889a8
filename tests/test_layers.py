"""The tree shows the layers: no import cycle between modules, and faces that go through the library's door.

Every import is read from the source (function-local ones included, as they would run). The library's
public modules, the only ones a face (memory_search.faces.*, scripts/*, hooks/*, integrations/*) may import:

  memory_search          the package (open, Memories, Filters, Settings, Record, Hit, MemorySearchError)
  api                    Memories: search, read, list, export, verify and index one memories directory
  knowledge_base         the same for documents a host hands over (LangBot)
  errors                 the errors a face maps to its exit codes, JSON-RPC errors and HTTP statuses
  config                 Settings and the environment the scripts document
  params                 the request parameters every face accepts, and their checks
  render                 hits, records, runs and status as text and JSON
  resources              what a long-running face shares between calls
  hints                  the commands a message tells the user to run
  processes              starting a process that outlives this one (the warm path's too)

The faces among themselves: memory_search.faces.* is one face package (the command line and its plumbing,
the warm helper, MCP, HTTP); scripts/*, hooks/* and integrations/* import it or the public modules only.

The parts, in the order they may import one another (a module imports its own part and the parts before
it, never one after it; parts of one step do not import each other):

  ground      errors, hints, config, processes: what every part may use
  text        text/: keyword terms, chunks, link syntax; no database, no files
  directory   directory/: the memories directory on disk
  embedding   embedding/: the models
  storage     storage/: PostgreSQL: connecting, the index's tables, writing them
  indexing    indexing/: building the index  |  search  search/: searching it (indexing and search apart)
  library     api, knowledge_base, params, render, resources, the package: the door the faces use
  faces       faces/ (and scripts/, hooks/, integrations/)

The warm path (what a shell-called script runs before the warm helper answers it, and what the plugin's
hooks and the MCP stand-in run before the environment exists) imports the standard library only, at import
time: faces.launch, client, helper_processes, environment, plugin, mcp_relay and mcp_tools, and every
memory_search module they import at their top level."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from conftest import ROOT

PUBLIC = {"memory_search", *(f"memory_search.{name}" for name in (
    "api", "knowledge_base", "errors", "config", "params", "render", "resources", "hints", "processes"))}
FACES = "memory_search.faces"

# The parts, first to last; a tuple holds parts of one step, which do not import each other.
ORDER = (("ground",), ("text",), ("directory",), ("embedding",), ("storage",), ("indexing", "search"), ("library",),
         ("faces",))
GROUND = {"errors", "hints", "config", "processes"}
LIBRARY = {"", "api", "knowledge_base", "params", "render", "resources"}
# Imports against the order that stay for now, each with its reason.
AGAINST_THE_ORDER = {
    ("memory_search.indexing.auto", "memory_search.render"):
        "`python -m memory_search.indexing.auto` is a background index run's entry point: it prints the run's "
        "summary as index.py does (a face in all but its place)",
}
WARM_PATH = {f"{FACES}.{name}" for name in (
    "launch", "client", "helper_processes", "environment", "plugin", "mcp_relay", "mcp_tools")}


def _modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "src").rglob("*.py"):
        parts = list(path.relative_to(ROOT / "src").with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imports(path: Path, name: str | None) -> set[str]:
    """The memory_search modules `path` imports anywhere in it (`name`: its module name, for relative imports);
    `from package import module` counts as the module."""
    package = None
    if name is not None:
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                       for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target.split(".")[0] == "memory_search")
    return found


def _graph() -> dict[str, set[str]]:
    return {name: _imports(path, name) - {name} for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of modules that import one another in a circle (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for following in sorted(graph.get(node, ())):
            if following not in index:
                visit(following)
                low[node] = min(low[node], low[following])
            elif following in stack:
                low[node] = min(low[node], index[following])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_every_module_is_found_and_read():
    assert {"memory_search.api", "memory_search.faces.cli", "memory_search.search.retrieval",
            "memory_search.storage.database", "memory_search.indexing.indexer"} <= set(MODULES)
    assert PUBLIC <= set(MODULES), PUBLIC - set(MODULES)
    graph = _graph()
    assert "memory_search.search.retrieval" in graph["memory_search.api"]  # a function-local import counts


def test_no_module_imports_itself_through_others():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(group) for group in cycles)


def _face_files() -> dict[str, tuple[Path, str | None]]:
    faces = {name: (path, name) for name, path in MODULES.items() if name.startswith(FACES)}
    for folder in ("scripts", "hooks", "integrations"):
        for path in (ROOT / folder).rglob("*.py"):
            faces[str(path.relative_to(ROOT))] = (path, None)
    return faces


def test_faces_import_only_the_librarys_public_modules():
    beyond = {face: sorted(target for target in _imports(path, name)
                           if target not in PUBLIC and not target.startswith(FACES))
              for face, (path, name) in _face_files().items()}
    beyond = {face: targets for face, targets in beyond.items() if targets}
    assert not beyond, "faces reaching past the library's public modules: " + "; ".join(
        f"{face} imports {', '.join(targets)}" for face, targets in sorted(beyond.items()))


def test_the_library_imports_no_face():
    library = {name: sorted(target for target in targets if target.startswith(FACES))
               for name, targets in _graph().items() if not name.startswith(FACES)}
    library = {name: targets for name, targets in library.items() if targets}
    assert not library, f"library modules importing faces: {library}"


def part(module: str) -> str:
    """The part a memory_search module belongs to."""
    first = module.removeprefix("memory_search").removeprefix(".").split(".")[0]
    if first in GROUND:
        return "ground"
    if first in LIBRARY:
        return "library"
    return first


STEP = {name: step for step, names in enumerate(ORDER) for name in names}


def test_every_module_belongs_to_a_part_of_the_order():
    assert {name: part(name) for name in MODULES if part(name) not in STEP} == {}


def test_parts_import_only_their_own_and_earlier_parts():
    assert all((target in _graph()[name]) for name, target in AGAINST_THE_ORDER), "an exception no longer needed"
    against = sorted(f"{name} ({part(name)}) imports {target} ({part(target)})"
                     for name, targets in _graph().items() for target in targets
                     if part(target) != part(name) and STEP[part(target)] >= STEP[part(name)]
                     and (name, target) not in AGAINST_THE_ORDER)
    assert not against, "imports against the order of parts:\n  " + "\n  ".join(against)


def _top_level_imports(path: Path, name: str) -> set[str]:
    """What importing the module runs: the imports outside functions and classes (module names, any package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                found.update(f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                             for alias in node.names)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                              *(handler.body for handler in getattr(node, "handlers", []))):
                    visit(block)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def test_the_warm_path_imports_the_standard_library_only():
    beyond = {}
    for start in sorted(WARM_PATH):
        seen: set[str] = set()
        waiting = [start]
        while waiting:
            module = waiting.pop()
            parents = [".".join(module.split(".")[:end]) for end in range(1, module.count(".") + 1)]
            for name in [module, *parents]:
                if name in seen or name not in MODULES:
                    continue
                seen.add(name)
                for target in _top_level_imports(MODULES[name], name):
                    if target.split(".")[0] == "memory_search":
                        waiting.append(target)
                    elif target.split(".")[0] not in sys.stdlib_module_names and target != "__future__":
                        beyond.setdefault(start, set()).add(f"{target} (by {name})")
    assert WARM_PATH <= set(MODULES)
    assert not beyond, f"warm-path modules importing beyond the standard library: {beyond}"


def test_the_layout_in_docs_design_names_every_module():
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    listed, folder = set(), ""
    for line in block.splitlines():
        entry = line.strip().split(" ")[0]
        if not entry.endswith((".py", "/")) or entry == "src/memory_search/":
            continue
        if line.startswith("    "):
            listed.add(folder + entry)
        elif entry.endswith("/"):
            folder = entry
        else:
            folder = ""
            listed.add(entry)
    present = {str(path.relative_to(ROOT / "src" / "memory_search")) for path in MODULES.values()}
    present = {name for name in present if not (name.endswith("/__init__.py"))}
    assert listed == present, f"docs/design.md's layout lacks {sorted(present - listed)}, " \
                              f"names what is not there: {sorted(listed - present)}"
