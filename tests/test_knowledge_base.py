"""Knowledge bases: documents handed over by a host, indexed and searched like memories, one set of tables each."""

from __future__ import annotations

import uuid

import pytest

from memory_search.config import Settings
from memory_search.directory.files import BadMemory
from memory_search.errors import IndexMissing, UsageError
from memory_search.knowledge_base import Document, KnowledgeBase, decode_document, tables_for

NOTE = ("---\ntitle: 障害対応\nteam: sre\n---\n# 障害対応\n\n"
        "アラートが鳴ったら当番が一次対応し、十五分以内に報告する。\n")


@pytest.fixture
def knowledge_base(env):
    created = []

    def make(kb_id: str | None = None) -> KnowledgeBase:
        kb = KnowledgeBase(Settings.from_env(), kb_id or f"kb-{uuid.uuid4()}")
        kb.create()
        created.append(kb)
        return kb

    yield make
    for kb in created:
        kb.drop()


def test_documents_are_searched_with_their_metadata_and_only_in_their_knowledge_base(knowledge_base):
    first, second = knowledge_base(), knowledge_base()
    assert first.ingest(Document("incident", "incident.md", NOTE)) == 1
    second.ingest(Document("lunch", "lunch.txt", "金曜日はカレーの日。", markdown=False, metadata={"floor": 3}))

    hits = first.search("アラートの一次対応", top=5)
    assert [hit.record.path for hit in hits] == ["incident"]
    assert hits[0].record.relpath == "incident.md" and hits[0].record.title == "障害対応"
    assert hits[0].record.frontmatter["team"] == "sre" and hits[0].chunk_index == 0
    assert first.search("アラート", where={"team": "dev"}) == []
    assert [hit.record.path for hit in second.search("カレー", where={"floor": {"$gte": 3}})] == ["lunch"]
    assert [hit.record.path for hit in second.search("アラートの一次対応")] == ["lunch"]  # never the other base's


def test_a_document_ingested_again_replaces_its_chunks_and_a_deleted_one_leaves_nothing(knowledge_base):
    kb = knowledge_base()
    kb.ingest(Document("incident", "incident.md", NOTE))
    kb.ingest(Document("incident", "incident.md", NOTE.replace("十五分", "三十分")))
    assert kb.documents() == {"incident": 1}
    assert "三十分" in kb.search("報告", mode="keyword")[0].chunk_text
    assert kb.delete("incident") is True and kb.delete("incident") is False
    assert kb.documents() == {} and kb.search("報告") == []


def test_a_dropped_knowledge_base_says_so_and_its_tables_are_gone(env, knowledge_base):
    kb = knowledge_base()
    kb.ingest(Document("incident", "incident.md", NOTE))
    assert kb.drop() is True and kb.drop() is False and not kb.exists()
    with pytest.raises(IndexMissing, match="does not exist"):
        kb.search("報告")
    with pytest.raises(IndexMissing, match="does not exist"):
        kb.ingest(Document("incident", "incident.md", NOTE))


def test_unreadable_input_is_refused_with_its_reason():
    assert decode_document("# 見出し\n".encode(), "a.md") == ("# 見出し\n", True)
    assert decode_document(b"plain", "a.log") == ("plain", False)
    for data, name, reason in ((b"%PDF", "a.pdf", "unsupported file type"), (b"\xff\xfe\x00", "a.txt", "binary"),
                               ("caf\xe9".encode("latin-1"), "a.txt", "not UTF-8"), (b" \n", "a.md", "empty")):
        with pytest.raises(BadMemory, match=reason):
            decode_document(data, name)
    with pytest.raises(UsageError, match="chunk_overlap"):
        KnowledgeBase(Settings.from_env({}), "x").ingest(Document("d", "d.md", NOTE), chunk_size=100,
                                                           chunk_overlap=100)
    assert tables_for("Support Notes").prefix.startswith("memsearch_kb_support_notes_")
    assert tables_for("a") != tables_for("A")
