"""Tokens and chunks: what the keyword leg and the line ranges are built from."""

from __future__ import annotations

from memory_search.directory.files import split_frontmatter
from memory_search.text.chunking import DIALOGUE_CHARS, MAX_CHARS, chunk_markdown
from memory_search.text.tokens import tokenize


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
    import random
    import threading

    words = ["検索", "資料", "附属", "棚", "置く", "結果", "シュミレーション", "記録", "会議", "要約", "の", "を", "に"]
    rng = random.Random(7)
    texts = ["".join(rng.choice(words) for _ in range(400)) for _ in range(64)]  # long runs, none alike
    from memory_search.text.tokens import japanese_words

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


def _conversation(turns: int, speakers=("Ann", "Bob"), words: int = 30) -> str:
    return "\n".join(f"**{speakers[i % len(speakers)]}**: turn {i} " + "word " * words for i in range(turns))


def test_a_conversation_is_chunked_in_overlapping_windows_of_whole_turns():
    body = "# Ann and Bob, 1 May 2025\n\n" + _conversation(14)
    chunks = chunk_markdown(body)
    lines = body.split("\n")
    assert len(chunks) > 3 and all(len(chunk.text) <= DIALOGUE_CHARS for chunk in chunks)
    assert chunks[0].start_line == 1  # the heading opens the first window, it is no chunk of its own
    for chunk in chunks:  # whole turns, with the lines they came from
        assert chunk.text == "\n".join(lines[chunk.start_line - 1:chunk.end_line]).strip()
        assert chunk.text.splitlines()[-1].startswith("**")
    for before, after in zip(chunks, chunks[1:]):  # each window starts inside the one before: turns meet twice
        assert before.start_line < after.start_line <= before.end_line < after.end_line
    covered = {line for chunk in chunks for line in range(chunk.start_line, chunk.end_line + 1)}
    assert covered >= set(range(3, len(lines) + 1))


def test_japanese_turns_and_turns_apart_are_conversations_too():
    japanese = "\n".join(f"{'田中' if i % 2 else '佐藤'}：{i}番目の発言です。" + "会議の内容について話した。" * 12
                         for i in range(8))
    assert len(chunk_markdown(japanese)) > 2
    apart = "\n\n".join(f"User: question {i} " + "word " * 40 + "\nmore of it" for i in range(10))
    chunks = chunk_markdown(apart.replace("User: question 1", "Assistant: answer 1"))
    assert all(len(chunk.text) <= DIALOGUE_CHARS for chunk in chunks)


def test_key_value_lines_and_a_few_turns_stay_paragraphs():
    settings = "Status: done\nOwner: ann\nDate: 2025-01-01\nPriority: high\nLink: https://example.com/a\n"
    assert [chunk.text for chunk in chunk_markdown(settings)] == [settings.strip()]
    short = "# Call\n\n**Ann**: hi\n**Bob**: hello\n\nAfter the call we wrote the plan."
    assert len(chunk_markdown(short)) == 1
    assert chunk_markdown(_conversation(14, words=2)) == chunk_markdown(_conversation(14, words=2))
    assert all(len(chunk.text) <= 300 for chunk in chunk_markdown(_conversation(14, words=5), 1, size=300))
    many = "\n".join(f"Speaker{i}: says {i}" for i in range(12))  # twelve names, once each: a list, not a talk
    assert len(chunk_markdown(many)) == 1
