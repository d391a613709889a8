"""Links between memories: extracted while indexing, resolved like a vault, kept fresh as files change."""

from __future__ import annotations

import json
import shutil

import psycopg
from conftest import index, run_script

from memory_search.storage.links import edges
from memory_search.storage.schema import ManagedTables
from memory_search.text.links import extract_links


def test_extraction_reads_every_link_form_and_ignores_code_and_urls():
    body = "\n".join([
        "See [[Note]], [[Note|an alias]] and [[folder/Deep Note#Some heading]].",  # line 10
        "![[Embedded]] and [the page](../wiki/page.md#part) and [bare](other).",
        "Not links: [site](https://example.com/x.md), ![image](pic.png), `[[inline code]]`, [[#self heading]].",
        "```python",
        "x = '[[in a fence]]'  # [also](not-a-link.md)",
        "```",
        "~~~",
        "[[tilde fence]]",
        "~~~",
        "After the fence: [[After]] and [spaced](<my note.md> \"title\").",
    ])
    links = extract_links(body, "raw/session/2026-11-01/120000_x.md", first_line=10)
    found = [(link.kind, link.line, link.target, link.target_path, link.target_name) for link in links]
    assert found == [
        ("wikilink", 10, "Note", "note.md", "note"),
        ("wikilink", 10, "Note", "note.md", "note"),
        ("wikilink", 10, "folder/Deep Note", "folder/deep note.md", "deep note"),
        ("embed", 11, "Embedded", "embedded.md", "embedded"),
        ("markdown", 11, "../wiki/page.md#part", "raw/session/wiki/page.md", "page"),
        ("markdown", 11, "other", "raw/session/2026-11-01/other.md", "other"),
        ("wikilink", 19, "After", "after.md", "after"),
        ("markdown", 19, "my note.md", "raw/session/2026-11-01/my note.md", "my note"),
    ]


def test_indented_code_holds_no_links_but_indented_list_text_does():
    body = "\n".join([
        "# Setup",  # line 1
        "    [[after a heading]] is code",
        "",
        "Text before code:",
        "    a paragraph's [[lazy continuation]]",
        "",
        "    [[in indented code]] and [x](code.md)",
        "\t[[tab indented code]]",
        "",
        "- an item",  # line 10
        "",
        "    [[item continued]]",
        "",
        "Back at the margin: [[Margin]]",
        "",
        "    [[code again]]",
    ])
    assert [(link.line, link.target) for link in extract_links(body, "wiki/setup.md")] == [
        (5, "lazy continuation"), (12, "item continued"), (14, "Margin")]


def _edges(memories, source=None):
    """(source relpath, target relpath or None, kind, target as written) of the index's links."""
    root = memories.root
    with psycopg.connect(memories.url) as conn:
        found = edges(ManagedTables.of(root).on(conn), source=str(root / source) if source else None)
    rel = lambda path: None if path is None else str(path)[len(str(root)) + 1:]  # noqa: E731
    return sorted(((rel(edge.source), rel(edge.target_file), edge.kind, edge.target) for edge in found),
                  key=lambda edge: (edge[0], edge[1] or "", edge[2], edge[3]))


def _links(env, memories) -> dict:
    return json.loads(run_script("stats", "--json", env=env, memories=memories, check=True).stdout)["links"]


def test_links_resolve_by_path_then_unique_name_and_stay_fresh(env, memories, database):
    memories.url = database
    memories.write("wiki/hub.md", "\n".join([
        "# Hub",
        "",
        "Alias: [[Target Page|the target]]. Heading: [[target page#Usage]]. Embed: ![[TARGET PAGE]].",
        "By path: [[wiki/dup/one/Dup]]. Ambiguous: [[Dup]]. Missing: [[Nowhere]].",
        "Session: [the session](../raw/session/2026-11-01/120000_abcd1234_s1.md).",
        "",
        "```",
        "[[Target Page]] inside a fence is code, not a link",
        "```",
    ]), title="Hub")
    memories.write("wiki/topics/Target Page.md", "# Target\n\nThe target of several links.", title="Target")
    memories.write("wiki/dup/one/Dup.md", "# Dup one\n\nFirst of two notes named Dup.", title="Dup one")
    memories.write("wiki/dup/two/dup.md", "# Dup two\n\nSecond of two notes named dup.", title="Dup two")
    memories.write("raw/session/2026-11-01/120000_abcd1234_s1.md", "# Session\n\nBack to [[hub]].",
                   kind="session", title="Session one")
    index(env, memories)

    assert _edges(memories, "wiki/hub.md") == [
        ("wiki/hub.md", None, "wikilink", "Dup"),  # two files are named dup: ambiguous
        ("wiki/hub.md", None, "wikilink", "Nowhere"),
        ("wiki/hub.md", "raw/session/2026-11-01/120000_abcd1234_s1.md", "markdown",
         "../raw/session/2026-11-01/120000_abcd1234_s1.md"),
        ("wiki/hub.md", "wiki/dup/one/Dup.md", "wikilink", "wiki/dup/one/Dup"),
        ("wiki/hub.md", "wiki/topics/Target Page.md", "embed", "TARGET PAGE"),
        ("wiki/hub.md", "wiki/topics/Target Page.md", "wikilink", "Target Page"),
        ("wiki/hub.md", "wiki/topics/Target Page.md", "wikilink", "target page"),
    ]
    assert _links(env, memories) == {"links": 8, "resolved": 6, "unresolved": 2, "ambiguous": 1,
                                     "by_kind": {"embed": 1, "markdown": 1, "wikilink": 6}}

    # Renaming the target: the links to it resolve to nothing, without touching the linking file.
    (memories.root / "wiki/topics/Target Page.md").rename(memories.root / "wiki/topics/Renamed.md")
    index(env, memories)
    assert [edge[1] for edge in _edges(memories, "wiki/hub.md") if edge[3].lower() == "target page"] == [None] * 3
    # A note appearing under the missing name resolves the link that waited for it.
    memories.write("wiki/Nowhere.md", "# Nowhere\n\nNow it exists.", title="Nowhere")
    # Deleting one of the two Dup notes, with its folder, makes the name unique again (a folder left empty
    # reads as a drive that is not mounted: its notes are kept).
    shutil.rmtree(memories.root / "wiki/dup/two")
    index(env, memories)
    resolved = {edge[3]: edge[1] for edge in _edges(memories, "wiki/hub.md")}
    assert resolved["Nowhere"] == "wiki/Nowhere.md" and resolved["Dup"] == "wiki/dup/one/Dup.md"

    # Editing the linking file replaces its links; deleting it takes them away.
    memories.write("wiki/hub.md", "# Hub\n\nOnly [[Renamed]] now.", title="Hub")
    index(env, memories)
    assert _edges(memories, "wiki/hub.md") == [("wiki/hub.md", "wiki/topics/Renamed.md", "wikilink", "Renamed")]
    (memories.root / "wiki/hub.md").unlink()
    index(env, memories)
    # hub's own links are gone; the session's [[hub]] stays, pointing at nothing
    assert _edges(memories) == [("raw/session/2026-11-01/120000_abcd1234_s1.md", None, "wikilink", "hub")]
    assert _links(env, memories)["links"] == 1 and _links(env, memories)["unresolved"] == 1
    index(env, memories, "--rebuild")  # built beside the live index and swapped in: the links come along
    assert _edges(memories) == [("raw/session/2026-11-01/120000_abcd1234_s1.md", None, "wikilink", "hub")]
