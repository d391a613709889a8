"""The same page in two languages, under any names: the one in the question's language comes first, in every
mode, told by the words of the question and of the pages, not by their file names."""

from __future__ import annotations

import pytest
from conftest import index, search

SETUP_JA = """# 開発環境のセットアップ

リポジトリを clone したら `make install` で仮想環境を作る。PostgreSQL は埋め込みで起動するので別途のインストールは不要。
テストは `make test` で実行し、初回はモデルのダウンロードに数分かかる。
"""
SETUP_EN = """# Setting up the development environment

After cloning the repository, run `make install` to create the virtual environment. PostgreSQL starts embedded,
so there is nothing else to install. Run the tests with `make test`; the first run downloads the model.
"""


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
@pytest.mark.parametrize("japanese, english", [("wiki/ja/setup.md", "wiki/en/setup.md"),
                                               ("wiki/開発環境.md", "wiki/dev-environment.md")])
def test_a_question_gets_the_page_in_its_own_language_before_its_twin(env, memories, mode, japanese, english):
    memories.write(japanese, SETUP_JA, title="開発環境のセットアップ")
    memories.write(english, SETUP_EN, title="Setting up the development environment")
    memories.write("wiki/backup.md", "# Backups\n\nNightly dumps go to object storage.", title="Backups")
    index(env, memories)
    asked_in_japanese = search(env, memories, "開発環境のセットアップ手順は？ make install", "--mode", mode)
    asked_in_english = search(env, memories, "how to set up the development environment with make install",
                              "--mode", mode)
    assert asked_in_japanese[0]["path"] == str(memories.root / japanese)
    assert asked_in_english[0]["path"] == str(memories.root / english)
    for hits in (asked_in_japanese, asked_in_english):  # the order of the score shown
        assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)
