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

The faces among themselves: memory_search.faces.* is one face package (the command line and its plumbing,
the warm helper, MCP, HTTP); scripts/*, hooks/* and integrations/* import it or the public modules only."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PUBLIC = {"memory_search", *(f"memory_search.{name}" for name in (
    "api", "knowledge_base", "errors", "config", "params", "render", "resources", "hints"))}
FACES = "memory_search.faces"


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
