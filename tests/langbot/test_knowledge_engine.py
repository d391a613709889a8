"""The LangBot knowledge engine, driven through the SDK's own entities against the real embedded
PostgreSQL and the real local model; the host's file API is answered from a temporary directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langbot_plugin", reason="the LangBot SDK is not installed: run `make test-langbot`")

from harness import Bot, documents, texts  # noqa: E402
from langbot_plugin.api.definition.components.knowledge_engine.engine import KnowledgeEngineCapability  # noqa: E402
from langbot_plugin.api.entities.builtin.rag.enums import DocumentStatus  # noqa: E402
from langbot_plugin.api.entities.builtin.rag.errors import RAGError, RetrievalError  # noqa: E402

DEPLOY = """---
title: デプロイ手順
team: infra
priority: 3
tags: [release, 本番]
---
# デプロイ手順

本番環境へのデプロイは毎週木曜日の午後に行う。リリース前にステージングで確認すること。
"""
BACKUP = """---
title: Database backups
team: db
priority: 1
---
# Database backups

Nightly pg_dump runs at 02:00 and keeps fourteen days of snapshots on the backup volume.
"""
LUNCH = "社員食堂のメニューは毎朝更新される。金曜日はカレーの日。\n"


@pytest.fixture
def bot(env, tmp_path):
    """The plugin with its default configuration: the test's embedded PostgreSQL, the local model."""
    storage = tmp_path / "storage"
    storage.mkdir()
    bot = Bot(storage)
    yield bot
    for kb_id in bot.created:
        try:
            bot.drop(kb_id)
        except RAGError:  # a test that stopped its own database
            pass


def test_the_engine_ingests_and_parses_markdown_and_text_itself(bot):
    capabilities = bot.engine.get_capabilities()
    assert KnowledgeEngineCapability.DOC_INGESTION in capabilities
    assert KnowledgeEngineCapability.DOC_PARSING in capabilities


def test_a_markdown_note_is_found_by_a_japanese_and_an_english_question(bot):
    kb = bot.create()
    deploy = bot.ingest(kb, "deploy.md", DEPLOY, document_id="deploy")
    assert deploy.status == DocumentStatus.COMPLETED and deploy.chunks_created == 1 and deploy.document_id == "deploy"
    bot.ingest(kb, "backup.md", BACKUP, document_id="backup")
    bot.ingest(kb, "lunch.txt", LUNCH, document_id="lunch")

    japanese = bot.retrieve(kb, "本番へのデプロイはいつ？", score_threshold=0)
    assert documents(japanese)[0] == "deploy"
    english = bot.retrieve(kb, "how long are database snapshots kept", score_threshold=0)
    assert documents(english)[0] == "backup"
    top = english.results[0]
    assert "pg_dump" in top.content[0].text
    assert top.metadata["file_name"] == "backup.md" and top.metadata["title"] == "Database backups"
    assert top.score == pytest.approx(1 - top.distance)
    assert english.total_found == len(english.results) == 3
    assert [entry.score for entry in english.results] == sorted((entry.score for entry in english.results),
                                                                 reverse=True)


def test_two_knowledge_bases_in_one_database_never_see_each_other(bot):
    first, second = bot.create(), bot.create()
    bot.ingest(first, "deploy.md", DEPLOY, document_id="shared-id")
    bot.ingest(second, "lunch.txt", LUNCH, document_id="shared-id")

    assert texts(bot.retrieve(first, "デプロイ", score_threshold=0))[0].startswith("# デプロイ手順")
    assert texts(bot.retrieve(second, "デプロイ", score_threshold=0)) == [LUNCH.strip()]

    assert bot.delete_document(first, "shared-id") is True
    assert bot.retrieve(first, "デプロイ", score_threshold=0).results == []
    assert documents(bot.retrieve(second, "カレー", score_threshold=0)) == ["shared-id"]

    bot.drop(first)
    with pytest.raises(RetrievalError, match="does not exist in this database"):
        bot.retrieve(first, "デプロイ")
    assert documents(bot.retrieve(second, "カレー", score_threshold=0)) == ["shared-id"]


def test_ingesting_a_document_again_replaces_its_chunks(bot):
    kb = bot.create()
    bot.ingest(kb, "deploy.md", DEPLOY, document_id="deploy")
    changed = DEPLOY.replace("毎週木曜日の午後", "毎月第一月曜日の朝")
    again = bot.ingest(kb, "deploy.md", changed, document_id="deploy")
    assert again.status == DocumentStatus.COMPLETED

    hits = bot.retrieve(kb, "デプロイ", score_threshold=0, retrieval_mode="keyword")
    assert len(hits.results) == 1 and "第一月曜日" in hits.results[0].content[0].text
    assert bot.retrieve(kb, "午後", score_threshold=0, retrieval_mode="keyword").results == []


def test_chunk_size_and_overlap_come_from_the_creation_settings(bot):
    settings = {"chunk_size": 120, "chunk_overlap": 20}
    kb = bot.create(**settings)
    long_note = "# 運用メモ\n\n" + "\n\n".join(f"手順{i}：サーバー{i}号機を再起動してログを確認する。" * 3
                                           for i in range(8))
    small = bot.ingest(kb, "ops.md", long_note, settings=settings)
    default = bot.ingest(kb, "ops-default.md", long_note)
    assert small.chunks_created > default.chunks_created >= 1
    chunks = bot.retrieve(kb, "再起動", filters={"file_name": "ops.md"}, score_threshold=0,
                          one_chunk_per_document=False, top_k=50)
    assert len(chunks.results) == small.chunks_created and all(len(text) <= 120 for text in texts(chunks))

    bad = bot.ingest(kb, "ops.md", long_note, settings={"chunk_size": 100, "chunk_overlap": 100})
    assert bad.status == DocumentStatus.FAILED and "chunk_overlap" in bad.error_message


def test_filters_in_chroma_style_narrow_the_results_inside_the_search(bot):
    kb = bot.create()
    bot.ingest(kb, "deploy.md", DEPLOY, document_id="deploy")
    bot.ingest(kb, "backup.md", BACKUP, document_id="backup")
    bot.ingest(kb, "lunch.txt", LUNCH, document_id="lunch", source="cafeteria")
    query = "いつ行う？ when does it run"

    def found(filters):
        return sorted(documents(bot.retrieve(kb, query, filters=filters, score_threshold=0, top_k=10)))

    assert found({}) == ["backup", "deploy", "lunch"]
    assert found({"team": "infra"}) == ["deploy"]
    assert found({"team": {"$ne": "infra"}}) == ["backup", "lunch"]
    assert found({"priority": {"$gte": 2}}) == ["deploy"]
    assert found({"priority": {"$lt": 3}}) == ["backup"]
    assert found({"file_name": {"$in": ["lunch.txt", "backup.md"]}}) == ["backup", "lunch"]
    assert found({"file_id": {"$nin": ["deploy"]}}) == ["backup", "lunch"]
    assert found({"source": {"$eq": "cafeteria"}}) == ["lunch"]
    assert found({"tags": "本番"}) == ["deploy"]
    assert found({"team": "infra", "priority": {"$gt": 5}}) == []
    with pytest.raises(RetrievalError, match=r"\$or"):
        found({"$or": [{"team": "infra"}, {"team": "db"}]})
    with pytest.raises(RetrievalError, match=r"\$like"):
        found({"team": {"$like": "in%"}})


def test_the_score_threshold_drops_weak_results(bot):
    kb = bot.create()
    for name, content in (("deploy.md", DEPLOY), ("backup.md", BACKUP), ("lunch.txt", LUNCH)):
        bot.ingest(kb, name, content, document_id=name)
    everything = bot.retrieve(kb, "デプロイ手順", score_threshold=0)
    default = bot.retrieve(kb, "デプロイ手順")  # the schema's 0.5
    assert len(everything.results) == 3
    assert documents(default) == ["deploy.md"]
    assert all(entry.score >= 0.5 for entry in default.results)
    strict = bot.retrieve(kb, "デプロイ手順", score_threshold=1.01)
    assert strict.results == [] and strict.total_found == 0


def test_deleting_a_document_removes_every_chunk_of_it(bot):
    kb = bot.create(chunk_size=100, chunk_overlap=0)
    note = "\n\n".join(f"## 節{i}\n\nバックアップ手順の説明その{i}。" * 2 for i in range(6))
    ingested = bot.ingest(kb, "backup-ja.md", note, document_id="backup-ja", settings={"chunk_size": 100})
    assert ingested.chunks_created > 2
    bot.ingest(kb, "lunch.txt", LUNCH, document_id="lunch")
    assert bot.delete_document(kb, "backup-ja") is True
    assert bot.delete_document(kb, "backup-ja") is False
    left = bot.retrieve(kb, "バックアップ手順", score_threshold=0, one_chunk_per_document=False, top_k=50)
    assert documents(left) == ["lunch"]


def test_a_file_it_cannot_read_fails_alone_with_one_clear_message(bot):
    kb = bot.create()
    failures = {
        "scan.pdf": (b"%PDF-1.7\n\x00\x01binary", "unsupported file type"),
        "notes.txt": ("caf\xe9".encode("latin-1"), "not UTF-8"),
        "broken.md": ("---\ntitle: [unclosed\n---\nbody\n", "invalid YAML frontmatter"),
        "empty.md": ("   \n", "empty"),
        "blob.md": (b"\x00\x00\x00\x00", "binary"),
    }
    for name, (content, reason) in failures.items():
        result = bot.ingest(kb, name, content)
        assert result.status == DocumentStatus.FAILED and result.chunks_created == 0
        assert reason in result.error_message and name in result.error_message
        assert "\n" not in result.error_message and "Traceback" not in result.error_message
    gone = bot.ingest(kb, "gone.md", None)  # the host's storage lost the file
    assert gone.status == DocumentStatus.FAILED and "gone.md" in gone.error_message

    assert bot.ingest(kb, "lunch.txt", LUNCH).status == DocumentStatus.COMPLETED
    assert len(bot.retrieve(kb, "カレー", score_threshold=0).results) == 1


def test_text_from_a_parser_plugin_is_taken_as_it_is(bot):
    kb = bot.create()
    result = bot.ingest(kb, "manual.pdf", b"%PDF-1.7 not read", document_id="manual",
                        parsed="障害対応マニュアル\n\nアラートが鳴ったら当番が一次対応する。")
    assert result.status == DocumentStatus.COMPLETED
    assert "get_knowledge_file_stream" not in bot.host.actions
    assert documents(bot.retrieve(kb, "アラートの一次対応は誰", score_threshold=0)) == ["manual"]


def test_a_langbot_embedding_model_can_embed_a_knowledge_base(bot):
    creation = {"embedding_model": "model-uuid-1"}
    kb = bot.create(**creation)
    bot.ingest(kb, "deploy.md", DEPLOY, document_id="deploy", settings=creation)
    bot.ingest(kb, "backup.md", BACKUP, document_id="backup", settings=creation)
    assert "invoke_embedding" in bot.host.actions
    calls = bot.host.actions.count("invoke_embedding")
    hits = bot.retrieve(kb, "how long are database snapshots kept", creation=creation, score_threshold=0)
    assert documents(hits)[0] == "backup"
    assert bot.host.actions.count("invoke_embedding") == calls + 1  # the query only

    # The knowledge base stays with its model: the plugin's own cannot read it.
    with pytest.raises(RetrievalError, match="built with langbot/model-uuid-1"):
        bot.retrieve(kb, "snapshots", creation={})


def test_a_query_over_the_limit_is_refused_before_a_langbot_model_embeds_it(bot):
    creation = {"embedding_model": "model-uuid-1"}
    kb = bot.create(**creation)
    bot.ingest(kb, "deploy.md", DEPLOY, document_id="deploy", settings=creation)
    calls = bot.host.actions.count("invoke_embedding")
    query = "先週の " + "デプロイ " * 600
    with pytest.raises(RetrievalError, match=f"^the query is {len(query):,} characters long") as raised:
        bot.retrieve(kb, query, creation=creation, time_words=True)
    assert "\n" not in str(raised.value)
    assert bot.host.actions.count("invoke_embedding") == calls  # the host's model was never asked


def test_time_words_in_odd_letters_are_read_and_a_window_after_its_end_is_refused(bot):
    kb = bot.create()
    bot.ingest(kb, "deploy.md", DEPLOY, document_id="deploy")
    for query in ("laſt week デプロイ", "thıs week デプロイ", "デプロイ in Auguſt", "yeſterday's デプロイ"):
        bot.retrieve(kb, query, time_words=True, score_threshold=0)  # read, never a KeyError
    with pytest.raises(RetrievalError, match="starts after it ends"):
        bot.retrieve(kb, "デプロイ since 2099", time_words=True)


def test_a_stopped_database_fails_each_call_with_one_line_and_loses_nothing(env, tmp_path):
    from memory_search.storage.database import EmbeddedServer

    server = EmbeddedServer(tmp_path / "other-db")
    url = server.start()
    storage = tmp_path / "storage"
    storage.mkdir()
    bot = Bot(storage, config={"database_url": url})
    try:
        kb = bot.create()
        assert bot.ingest(kb, "deploy.md", DEPLOY, document_id="deploy").status == DocumentStatus.COMPLETED
        server.stop()

        failed = bot.ingest(kb, "backup.md", BACKUP, document_id="backup")
        assert failed.status == DocumentStatus.FAILED
        assert "cannot connect to PostgreSQL" in failed.error_message and "\n" not in failed.error_message
        with pytest.raises(RetrievalError, match="cannot connect to PostgreSQL") as raised:
            bot.retrieve(kb, "デプロイ")
        assert "\n" not in str(raised.value)
        with pytest.raises(RAGError, match="cannot connect"):
            bot.delete_document(kb, "deploy")

        bot.plugin.config = {"database_url": server.start()}
        assert documents(bot.retrieve(kb, "デプロイ", score_threshold=0)) == ["deploy"]
        bot.drop(kb)
    finally:
        server.stop()


def test_the_evaluation_script_scores_the_plugin_like_eval_py(env):
    """tests/langbot/evaluate_plugin.py, which the LangBot README's figures come from, still runs."""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, str(root / "tests/langbot/evaluate_plugin.py"),
         str(root / "examples/eval/ja-questions-en-notes"),
         "--split", "test", "--limit-queries", "5", "--chunk-size", "1000", "--chunk-overlap", "0"],
        env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    hybrid = report["results"]["hybrid"]
    assert report["queries"] == 5
    assert hybrid["ndcg@10"] >= 0.6  # the semantic leg answers Japanese questions over English notes
    assert hybrid["recall@100"] >= hybrid["recall@10"]
    assert report["threshold"]["hybrid"]["0.0"]["mean_results"] == 5.0
