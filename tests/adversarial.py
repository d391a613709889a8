"""A hostile memories directory: every kind of file that has broken a memory index somewhere.

`write_corpus(root)` returns what each file should become: indexed (and findable by a word only it
holds) or skipped (with a reason that says so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Case:
    relpath: str  # as the index reports it
    expect: str  # "indexed" | "skipped" | "ignored" (not a memory: never listed) | "link" (to a memory, found there)
    word: str = ""  # a word only this file holds, for the ones that must be found
    reason: str = ""  # a fragment of the skip reason


def _write(root: Path, relpath: str | bytes, data: bytes | str) -> None:
    path = os.path.join(os.fsencode(root), relpath if isinstance(relpath, bytes) else os.fsencode(relpath))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_corpus(root: Path) -> list[Case]:
    cases: list[Case] = []

    def good(relpath: str, text: str, word: str) -> None:
        _write(root, relpath, text)
        cases.append(Case(relpath, "indexed", word))

    def bad(relpath: str | bytes, data: bytes | str, reason: str, shown: str | None = None) -> None:
        _write(root, relpath, data)
        cases.append(Case(shown or relpath, "skipped", reason=reason))

    # Files that must be indexed, however odd.
    good("wiki/crlf.md", "---\r\ntitle: CRLF page\r\n---\r\n# CRLF\r\n\r\nWindows line endings quokkacrlf.\r\n",
         "quokkacrlf")
    good("wiki/bom.md", "\ufeff---\ntitle: BOM\n---\nByte order mark quokkabom.\n", "quokkabom")
    good("wiki/dashes.md", "---\ntitle: Four dashes\n----\nClosed with four dashes quokkadash.\n", "quokkadash")
    good("wiki/rule.md", "---\n\nA page that opens with a horizontal rule quokkarule.\n\n---\n\nMore text.\n",
         "quokkarule")
    good("wiki/list-frontmatter.md", "---\n- a\n- b\n---\nA list where frontmatter goes quokkalist.\n", "quokkalist")
    good("wiki/scalar-frontmatter.md", "---\njust words\n---\nA scalar frontmatter quokkascalar.\n", "quokkascalar")
    good("wiki/only-frontmatter.md", "---\ntitle: Quokkatitle only\ntags: [x]\n---\n", "quokkatitle")
    good("wiki/inf.md", "---\ntitle: Infinity\nweight: .inf\nratio: .nan\n---\nNot a number quokkainf.\n", "quokkainf")
    good("wiki/bad-date.md", "---\ntitle: Bad date\ndate: 2026-13-45\n---\nImpossible date quokkadate.\n",
         "quokkadate")
    good("wiki/tz.md", "---\ntitle: Time zone\nended_at: 2026-11-30T23:30:00-08:00\n---\nOffset quokkatz.\n",
         "quokkatz")
    good("wiki/status-list.md", "---\ntitle: Listed status\nstatus: [active]\n---\nStatus list quokkastatus.\n",
         "quokkastatus")
    good("wiki/long-line.md", "# Long\n\n" + "quokkalong " + "x" * 100_000 + "\n", "quokkalong")
    good("wiki/unclosed-fence.md", "# Fence\n\n```python\nprint('quokkafence')\n\nno end\n", "quokkafence")
    good("wiki/controls.md", "# Controls\n\nbell \x07 escape \x1b[31m quokkactl \x0c form feed\n", "quokkactl")
    good("wiki/unicode.md", "# 記録\n\nمرحبا 👩‍💻 e\u0301 ｆｕｌｌｗｉｄｔｈ quokkauni 全角テスト\n", "quokkauni")
    good("wiki/headings.md", "".join(f"# H{i}\n\nquokkahead {i}\n\n" for i in range(300)), "quokkahead")
    good("raw/session/2026-11-01/101010_abcd1234_efgh5678.md",
         "---\ntitle: Good session\nkind: session\n---\nA plain session quokkasession.\n", "quokkasession")

    # Files that must be skipped with a reason, never stopping the run.
    bad(b"wiki/bad-name-\xff.md", "# Latin-1 name\n", "not valid UTF-8", "wiki/bad-name-\\xff.md")
    bad("wiki/new\nline.md", "# Newline name\n", "line break", "wiki/new\\nline.md")
    bad("wiki/nul-body.md", "# NUL\n\n" + "text " * 3000 + "\x00 after eight kilobytes\n", "NUL")
    bad("wiki/nul-frontmatter.md", "---\ntitle: a\x00b\n---\nbody\n", "NUL")
    bad("wiki/deep.md", "---\na: " + "[" * 300 + "]" * 300 + "\n---\nbody\n", "nested")
    bad("wiki/very-deep.md", "---\na: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n", "")
    bomb = "---\na: &a [" + ",".join(['"lol"'] * 9) + "]\n"
    for name, previous in zip("bcdefgh", "abcdefg"):
        bomb += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    bad("wiki/bomb.md", bomb + "---\nbody\n", "values")
    bad("wiki/huge-frontmatter.md", "---\n" + "".join(f"k{i}: {'v' * 60}\n" for i in range(2000)) + "---\nb\n",
        "larger than")
    bad("wiki/invalid-yaml.md", "---\ntitle: [unclosed\n---\nbody\n", "invalid YAML")
    bad("wiki/binary.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary")
    bad("wiki/latin1.md", "# Café\n".encode("latin-1"), "not UTF-8")
    bad("wiki/empty.md", "", "empty")
    bad("wiki/blank.md", "  \n\n\t\n", "empty")
    bad("wiki/too-many-chunks.md", "".join(f"## Section {i}\n\n" + "word " * 150 + "\n\n" for i in range(2100)),
        "too many chunks")
    bad("wiki/huge.md", b"# Huge\n" + b"a" * (10 * 1024 * 1024 + 10), "too large")

    # Links and special files.
    outside = root.parent / "outside.md"
    outside.write_text("# Outside\n\nquokkaoutside\n", encoding="utf-8")
    os.symlink(outside, root / "wiki" / "leaving.md")
    cases.append(Case("wiki/leaving.md", "skipped", reason="symlink leaving"))
    os.symlink(root / "wiki" / "missing-target.md", root / "wiki" / "dangling.md")
    cases.append(Case("wiki/dangling.md", "skipped", reason="dangling"))
    os.symlink(root / "wiki" / "crlf.md", root / "wiki" / "inside-link.md")
    cases.append(Case("wiki/inside-link.md", "link", "quokkacrlf"))  # found once, as wiki/crlf.md
    fifo_folder = root / "raw" / "session" / "2026-11-02"
    fifo_folder.mkdir(parents=True)
    os.mkfifo(fifo_folder / "120000_fifo0000_fifo0000.md")
    cases.append(Case("raw/session/2026-11-02/120000_fifo0000_fifo0000.md", "skipped", reason="not a regular file"))
    (root / "wiki" / "folder.md").mkdir()
    (root / "trashbox").mkdir()
    _write(root, "trashbox/old.md", "# Trash quokkatrash\n")
    cases.append(Case("trashbox/old.md", "ignored", "quokkatrash"))
    _write(root, "wiki/_draft.md", "# Draft quokkadraft\n")
    cases.append(Case("wiki/_draft.md", "ignored", "quokkadraft"))

    # Sorted after every bad file: proves one bad file never stops the run.
    good("zzz/last.md", "# Last\n\nThe last file quokkalast.\n", "quokkalast")
    return cases
