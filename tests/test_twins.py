"""The same page in two languages: the one in the question's language comes first."""

from __future__ import annotations

import pytest

from conftest import index, search
from memory_search.search.twins import own_language_first, page_and_language

SETUP_JA = """# 開発環境のセットアップ

リポジトリを clone したら make install で仮想環境を作る。PostgreSQL は埋め込みで起動するので別途のインストールは不要。
テストは make test で実行し、初回はモデルのダウンロードに数分かかる。
"""
SETUP_EN = """# Setting up the development environment

After cloning the repository, run make install to create the virtual environment. PostgreSQL starts embedded,
so there is nothing else to install. Run the tests with make test; the first run downloads the model.
"""


@pytest.mark.parametrize("path, page, code", [
    ("wiki/ja/setup.md", "wiki\0/setup.md", "ja"),
    ("docs/en-us/guide/setup.md", "docs\0/guide/setup.md", "en"),
    ("i18n/zh-hans/setup.md", "i18n\0/setup.md", "zh"),
    ("notes/setup.ja.md", "notes/setup\0.md", "ja"),
    ("notes/setup.EN.md", "notes/setup\0.md", "en"),
])
def test_a_path_names_its_language_by_a_folder_or_before_its_extension(path, page, code):
    assert page_and_language(path) == (page, code)


@pytest.mark.parametrize("path", ["raw/session/2026-11-01/120000_standup.md", "wiki/go/setup.md", "wiki/setup.md",
                                  "wiki/ja", "ja.md", "wiki/v1.2.md"])
def test_other_paths_name_no_language(path):
    assert page_and_language(path) is None


def test_a_default_language_kept_without_a_code_is_the_other_scripts_twin():
    files = {1: "notes/setup.md", 2: "notes/backup.md", 3: "notes/setup.ja.md", 4: "wiki/setup.md"}
    order = [(1, 0.9), (2, 0.8), (4, 0.75), (3, 0.7)]
    assert own_language_first(order, files, query_is_cjk=True) == [(3, 0.7), (1, 0.9), (2, 0.8), (4, 0.75)]
    assert own_language_first(order, files, query_is_cjk=False) == order
    japanese_first = [(3, 0.9), (2, 0.8), (1, 0.7)]
    assert own_language_first(japanese_first, files, query_is_cjk=False) == [(1, 0.7), (3, 0.9), (2, 0.8)]


def test_only_a_twin_moves_and_only_before_its_own_twin():
    files = {1: "wiki/en/setup.md", 2: "wiki/backup.md", 3: "wiki/ja/setup.md", 4: "wiki/ja/setup.md",
             5: "wiki/en/only-english.md", 6: "wiki/ja/other.md"}
    order = [(1, 0.9), (5, 0.85), (2, 0.8), (3, 0.7), (6, 0.65), (4, 0.6)]
    assert own_language_first(order, files, query_is_cjk=True) == [(3, 0.7), (1, 0.9), (5, 0.85), (2, 0.8),
                                                                    (6, 0.65), (4, 0.6)]
    assert own_language_first(order, files, query_is_cjk=False) == order  # English first already
    ja_first = [(3, 0.9), (1, 0.8)]
    assert own_language_first(ja_first, files, query_is_cjk=False) == [(1, 0.8), (3, 0.9)]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
@pytest.mark.parametrize("japanese, english", [("wiki/ja/setup.md", "wiki/en/setup.md"),
                                               ("wiki/setup.ja.md", "wiki/setup.md")])
def test_a_question_gets_the_page_in_its_own_language_before_its_twin(env, memories, mode, japanese, english):
    memories.write(japanese, SETUP_JA, title="開発環境のセットアップ")
    memories.write(english, SETUP_EN, title="Setting up the development environment")
    memories.write("wiki/backup.md", "# Backups\n\nNightly dumps go to object storage.", title="Backups")
    index(env, memories)
    # Japanese by its script (a tenth of its characters), though most of its words match the English page
    asked_in_japanese = search(env, memories, "setup 手順は？ make install, make test", "--mode", mode)
    asked_in_english = search(env, memories, "how to set up the development environment with make install",
                              "--mode", mode)
    assert asked_in_japanese[0]["path"] == str(memories.root / japanese)
    assert asked_in_english[0]["path"] == str(memories.root / english)
