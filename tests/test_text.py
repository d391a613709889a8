"""Tokens and chunks: what the keyword leg and the line ranges are built from."""

from __future__ import annotations

from memory_search.chunking import MAX_CHARS, chunk_markdown
from memory_search.memories import split_frontmatter
from memory_search.tokens import tokenize


def test_japanese_is_split_into_content_words_so_a_word_matches_inside_a_compound():
    tokens = tokenize("来期のサーバー配置計画")
    assert {"配置", "計画", "サーバー"} <= set(tokens)
    assert "の" not in tokens  # particles carry no topic
    assert set(tokenize("配置")) <= set(tokens)


def test_japanese_spelling_variants_and_inflections_meet():
    assert tokenize("附属病院") == tokenize("付属病院")
    assert tokenize("シュミレーション") == tokenize("シミュレーション")
    assert set(tokenize("データを打ち込んだ")) == set(tokenize("データを打ち込む"))
    assert tokenize("ＡＩ検索") == tokenize("AI検索")


def test_korean_runs_become_bigrams():
    assert tokenize("한국어") == ["한국", "국어"]


def test_latin_words_are_folded_and_stemmed_the_same_for_queries_and_documents():
    assert tokenize("Indexing the ＩＮＤＥＸＥＳ") == tokenize("index the indexes")
    assert "err_pgvector_dim_mismatch" not in tokenize("ERR_PGVECTOR_DIM_MISMATCH")  # split at underscores
    assert {"err", "pgvector", "dim", "mismatch"} <= set(tokenize("ERR_PGVECTOR_DIM_MISMATCH"))


def test_chunks_keep_the_file_lines_they_came_from():
    text = "---\ntitle: T\n---\n# Title\n\nfirst paragraph\n\n## Part\n\nsecond paragraph\nstill second\n"
    _, body, first_line = split_frontmatter(text)
    chunks = chunk_markdown(body, first_line)
    lines = text.split("\n")
    for chunk in chunks:
        assert "\n".join(lines[chunk.start_line - 1:chunk.end_line]).strip() == chunk.text
    assert chunks[-1].heading == "Title > Part" and chunks[-1].text.endswith("still second")


def test_long_sections_are_split_and_code_fences_stay_whole():
    paragraphs = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12))
    fence = "```\n" + "\n".join(f"line {i}" for i in range(20)) + "\n```"
    chunks = chunk_markdown(f"# Doc\n\n{paragraphs}\n\n{fence}\n")
    assert all(len(chunk.text) <= MAX_CHARS for chunk in chunks)
    assert any(chunk.text.startswith("```") and chunk.text.endswith("```") for chunk in chunks)
    assert len(chunks) >= 4


def test_a_chunk_size_and_overlap_bound_every_chunk_and_repeat_the_end_of_the_one_before():
    body = "\n\n".join(f"段落{i}。" + "検索の品質を測る文章です。" * 12 for i in range(8))
    chunks = chunk_markdown(body, 1, size=500, overlap=50)
    assert len(chunks) > 2 and all(len(chunk.text) <= 500 for chunk in chunks)
    plain = chunk_markdown(body, 1, size=450)
    assert [chunk.start_line for chunk in chunks] == [chunk.start_line for chunk in plain]
    for before, chunk, own in zip(chunks, chunks[1:], plain[1:]):
        repeated = chunk.text[: -len(own.text)].rstrip("\n")
        assert chunk.text.endswith(own.text) and 0 < len(repeated) < 50 and before.text.endswith(repeated)



def test_japanese_tokenizing_in_many_threads_at_once_gives_the_same_words():
    import threading

    import random

    words = ["検索", "資料", "附属", "棚", "置く", "結果", "シュミレーション", "記録", "会議", "要約", "の", "を", "に"]
    rng = random.Random(7)
    texts = ["".join(rng.choice(words) for _ in range(400)) for _ in range(64)]  # long runs, none alike
    from memory_search.tokens import japanese_words

    alone = [tokenize(text) for text in texts]
    japanese_words.cache_clear()  # every thread analyses its texts again
    results, errors = {}, []

    def work(offset):
        try:
            for index in range(offset, len(texts), 8):
                results[index] = tokenize(texts[index])
        except Exception as error:  # a shared tokenizer raises "already in use"
            errors.append(error)

    threads = [threading.Thread(target=work, args=(offset,)) for offset in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [results[index] for index in range(len(texts))] == alone
