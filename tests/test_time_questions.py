"""Checks of tools/eval/time_questions.py (the time-bound development set): valid BEIR files, one answer per
question, and windows that agree with an independent reading of each question's time words (parse()
below, written from the semantics the parser documents, not from the generator's resolver)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "tools" / "eval" / "time_questions.py"
TODAYS = ["2026-12-01", "2027-01-03", "2026-03-02", "2028-02-29"]
DAYS = 90

# ---------------------------------------------------------------- an independent reading of time words

WD_JA = {c: n for n, c in enumerate("月火水木金土日")}
WD_EN = {d: n for n, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
MONTH_EN = {m: n for n, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                        "dec"], 1)}
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen"]
KANJI = {c: n for n, c in enumerate("〇一二三四五六七八九")}


def number(token: str) -> int:
    if token.isdigit():
        return int(token)
    if token.lower() in WORDS:
        return WORDS.index(token.lower())
    tens, _, ones = token.rpartition("十")  # 十四 = 14, 二十 = 20, 八 = 8
    if "十" in token:
        return (KANJI[tens] if tens else 1) * 10 + (KANJI[ones] if ones else 0)
    return KANJI[token]


def month_of(name: str) -> int:
    return MONTH_EN[name[:3].lower()]


def whole_month(year: int, month: int) -> tuple[date, date]:
    nxt = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return date(year, month, 1), nxt - timedelta(1)


def parse(expr: str, today: date) -> tuple[date, date]:
    """The inclusive window that a time expression means on `today`."""
    day = timedelta(1)
    mon = today - timedelta(today.weekday())  # this week's Monday

    def on_or_before(ref: date, wd: int) -> date:
        return ref - timedelta((ref.weekday() - wd) % 7)

    def recent_date(m: int, d: int, ref: date = today) -> date:  # a date without a year: the latest not after ref
        return date(ref.year if (m, d) <= (ref.month, ref.day) else ref.year - 1, m, d)

    def recent_month(m: int) -> tuple[date, date]:  # a month without a year: the latest not after today
        return whole_month(today.year if m <= today.month else today.year - 1, m)

    def months_ago(n: int) -> tuple[date, date]:
        y, m = divmod(today.year * 12 + today.month - 1 - n, 12)
        return whole_month(y, m + 1)

    def single(d: date) -> tuple[date, date]:
        return d, d

    def weeks_ago(n: int) -> tuple[date, date]:
        start = mon - timedelta(7 * n)
        return start, start + 6 * day

    def date_range(m1, d1, m2, d2):
        end = recent_date(m2, d2)
        return recent_date(m1, d1, end), end

    def strictly_before(ref: date, wd: int) -> date:
        return on_or_before(ref - day, wd)

    rules = [
        (r"(?:on )?the day after ([A-Z][a-z]+) (\d+)", lambda g: single(recent_date(month_of(g[0]), int(g[1])) + day)),
        (r"(?:on )?the day before ([A-Z][a-z]+) (\d+)",
         lambda g: single(recent_date(month_of(g[0]), int(g[1])) - day)),
        (r"(?:on )?the (\w+day) before ([A-Z][a-z]+) (\d+)",
         lambda g: single(strictly_before(recent_date(month_of(g[1]), int(g[2])), WD_EN[g[0].lower()]))),
        (r"(?:(\d+)月(\d+)日|(\d+)/(\d+))の翌日",
         lambda g: single(recent_date(int(g[0] or g[2]), int(g[1] or g[3])) + day)),
        (r"(\d+)月(\d+)日の前日", lambda g: single(recent_date(int(g[0]), int(g[1])) - day)),
        (r"(\d+)月(\d+)日の前の(.)曜日?",
         lambda g: single(strictly_before(recent_date(int(g[0]), int(g[1])), WD_JA[g[2]]))),
        (r"今日|today", lambda g: single(today)),
        (r"昨日|yesterday", lambda g: single(today - day)),
        (r"一昨日|おととい|the day before yesterday", lambda g: single(today - 2 * day)),
        (r"(\d+|[一二三四五六七八九十]+)日前|(\w+) days ago", lambda g: single(today - number(g[0] or g[1]) * day)),
        (r"今週|this week", lambda g: (mon, today)),
        (r"先週|last week", lambda g: weeks_ago(1)),
        (r"先々週|the week before last", lambda g: weeks_ago(2)),
        (r"(\d+)週間前|(\w+) weeks ago", lambda g: weeks_ago(number(g[0] or g[1]))),
        (r"今月|this month", lambda g: (today.replace(day=1), today)),
        (r"先月|last month", lambda g: months_ago(1)),
        (r"(\d+)[かヶカケ]月前|(\w+) months ago", lambda g: months_ago(number(g[0] or g[1]))),
        (r"この前の(.)曜日?", lambda g: single(on_or_before(today - day, WD_JA[g[0]]))),
        (r"last (\w+day)", lambda g: single(on_or_before(today - day, WD_EN[g[0].lower()]))),
        (r"先週の(.)曜日?", lambda g: single(mon - 7 * day + WD_JA[g[0]] * day)),
        (r"on (\w+day) last week", lambda g: single(mon - 7 * day + WD_EN[g[0].lower()] * day)),
        (r"(.)曜日?(?:から|以降)", lambda g: (on_or_before(today, WD_JA[g[0]]), today)),
        (r"since (\w+day)", lambda g: (on_or_before(today, WD_EN[g[0].lower()]), today)),
        (r"先週(?:から|以降)|since last week", lambda g: (mon - 7 * day, today)),
        (r"(.)曜日?", lambda g: single(on_or_before(today, WD_JA[g[0]]))),
        (r"on (\w+day)", lambda g: single(on_or_before(today, WD_EN[g[0].lower()]))),
        (r"(?:on )?(\d{4})-(\d\d)-(\d\d)", lambda g: single(date(*map(int, g)))),
        (r"(\d{4})年(\d+)月(\d+)日", lambda g: single(date(*map(int, g)))),
        (r"on ([A-Z][a-z]+) (\d+), (\d{4})", lambda g: single(date(int(g[2]), month_of(g[0]), int(g[1])))),
        (r"(\d+)月(\d+)日〜(?:(\d+)月)?(\d+)日", lambda g: date_range(int(g[0]), int(g[1]), int(g[2] or g[0]),
                                                                  int(g[3]))),
        (r"(?:between|from) ([A-Z][a-z]+) (\d+) (?:and|to) ([A-Z][a-z]+) (\d+)",
         lambda g: date_range(month_of(g[0]), int(g[1]), month_of(g[2]), int(g[3]))),
        (r"(\d+)月(\d+)日|(\d+)/(\d+)", lambda g: single(recent_date(int(g[0] or g[2]), int(g[1] or g[3])))),
        (r"on ([A-Z][a-z]+) (\d+)", lambda g: single(recent_date(month_of(g[0]), int(g[1])))),
        (r"(\d{4})年(\d+)月|in ([A-Z][a-z]+) (\d{4})",
         lambda g: whole_month(int(g[0] or g[3]), int(g[1]) if g[1] else month_of(g[2]))),
        (r"(\d+)月|in ([A-Z][a-z]+)", lambda g: recent_month(int(g[0]) if g[0] else month_of(g[1]))),
    ]
    for pattern, window in rules:
        if match := re.fullmatch(pattern, expr):
            return window(match.groups())
    raise ValueError(f"cannot read {expr!r}")


@pytest.mark.parametrize("today, expr, start, end", [
    # 2026-12-01 is a Tuesday
    ("2026-12-01", "先週", "2026-11-23", "2026-11-29"),
    ("2026-12-01", "今週", "2026-11-30", "2026-12-01"),
    ("2026-12-01", "先々週", "2026-11-16", "2026-11-22"),
    ("2026-12-01", "3週間前", "2026-11-09", "2026-11-15"),
    ("2026-12-01", "火曜", "2026-12-01", "2026-12-01"),
    ("2026-12-01", "last Tuesday", "2026-11-24", "2026-11-24"),
    ("2026-12-01", "この前の月曜", "2026-11-30", "2026-11-30"),
    ("2026-12-01", "先週の金曜", "2026-11-27", "2026-11-27"),
    ("2026-12-01", "十二日前", "2026-11-19", "2026-11-19"),
    ("2026-12-01", "先月", "2026-11-01", "2026-11-30"),
    ("2026-12-01", "two months ago", "2026-10-01", "2026-10-31"),
    ("2026-12-01", "11月29日〜12月1日", "2026-11-29", "2026-12-01"),
    ("2026-12-01", "since Thursday", "2026-11-26", "2026-12-01"),
    ("2026-12-01", "先週から", "2026-11-23", "2026-12-01"),
    # 2027-01-03 is a Sunday, just after a year boundary
    ("2027-01-03", "12月28日", "2026-12-28", "2026-12-28"),
    ("2027-01-03", "on Dec 30", "2026-12-30", "2026-12-30"),
    ("2027-01-03", "先月", "2026-12-01", "2026-12-31"),
    ("2027-01-03", "in November", "2026-11-01", "2026-11-30"),
    ("2027-01-03", "今週", "2026-12-28", "2027-01-03"),
    ("2027-01-03", "between Dec 31 and Jan 2", "2026-12-31", "2027-01-02"),
    ("2027-01-03", "日曜", "2027-01-03", "2027-01-03"),
    ("2027-01-03", "last Sunday", "2026-12-27", "2026-12-27"),
    # 2028-02-29, a leap day
    ("2028-02-29", "2/29", "2028-02-29", "2028-02-29"),
    ("2028-02-29", "先月", "2028-01-01", "2028-01-31"),
    ("2028-02-29", "今月", "2028-02-01", "2028-02-29"),
    # told from a date
    ("2026-12-01", "on the day after November 20", "2026-11-21", "2026-11-21"),
    ("2026-12-01", "11/30の翌日", "2026-12-01", "2026-12-01"),
    ("2026-12-01", "11月20日の前日", "2026-11-19", "2026-11-19"),
    ("2026-12-01", "the Friday before Nov 20", "2026-11-13", "2026-11-13"),  # Nov 20 is a Friday
    ("2026-12-01", "11月24日の前の月曜日", "2026-11-23", "2026-11-23"),
])
def test_parse_follows_the_semantics(today, expr, start, end):
    assert parse(expr, date.fromisoformat(today)) == (date.fromisoformat(start), date.fromisoformat(end))


# ---------------------------------------------------------------- generated sets

def generate(out: Path, today: str, seed: int = 0) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), str(out), "--today", today, "--seed", str(seed)],
                          capture_output=True, text=True, check=True)
    return done.stdout


def load(out: Path) -> dict:
    corpus = [json.loads(line) for line in (out / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [line.split("\t") for line in (out / "qrels" / "test.tsv").read_text().splitlines()]
    return {"corpus": corpus, "queries": queries, "qrels": rows}


@pytest.fixture(scope="module", params=TODAYS)
def dataset(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"set-{request.param}")
    stdout = generate(out, request.param)
    data = load(out)
    data.update(today=date.fromisoformat(request.param), stdout=stdout, out=out,
                by_id={d["_id"]: d for d in data["corpus"]},
                answer={q: c for q, c, _ in data["qrels"][1:]})
    return data


def record_day(doc: dict) -> date | None:
    parts = doc["metadata"]["path"].split("/")
    return date.fromisoformat(parts[2]) if parts[0] == "raw" else None


def test_files_and_counts(dataset):
    corpus, queries, rows = dataset["corpus"], dataset["queries"], dataset["qrels"]
    assert rows[0] == ["query-id", "corpus-id", "score"]
    assert 250 <= len(corpus) <= 350
    assert len(queries) == 200
    langs = [q["metadata"]["lang"] for q in queries]
    assert langs.count("ja") == langs.count("en") == 100
    assert len({d["_id"] for d in corpus}) == len(corpus)
    assert len({q["_id"] for q in queries}) == len(queries)
    # exactly one relevant record per question, score 1, pointing into the corpus
    assert sorted(r[0] for r in rows[1:]) == sorted(q["_id"] for q in queries)
    assert all(r[2] == "1" and r[1] in dataset["by_id"] for r in rows[1:])
    assert all(q["metadata"]["today"] == dataset["today"].isoformat() for q in queries)
    assert "dropped (window not unique): " in dataset["stdout"]
    readme = (dataset["out"] / "README.md").read_text(encoding="utf-8")
    assert dataset["today"].isoformat() in readme and f"questions: {len(queries)}" in readme
    # both languages in the corpus, roughly half each
    ja = sum(d["metadata"]["lang"] == "ja" for d in corpus)
    assert 0.35 <= ja / len(corpus) <= 0.65
    assert sum(d["metadata"]["path"].startswith("wiki/") for d in corpus) >= 18


SESSION = re.compile(r"raw/session/(\d{4}-\d\d-\d\d)/(\d{6})_([0-9a-f]{8})_([0-9a-f]{8})\.md")
MINUTES = re.compile(r"raw/minutes/(\d{4}-\d\d-\d\d)/(\d{6})_[a-z0-9-]+\.md")
WIKI = re.compile(r"wiki/[a-z0-9-]+\.md")


def test_paths_agree_with_frontmatter(dataset):
    today = dataset["today"]
    first = today - timedelta(DAYS - 1)
    for doc in dataset["corpus"]:
        path, fm = doc["metadata"]["path"], doc["metadata"]["frontmatter"]
        assert doc["title"] == fm["title"]
        assert 600 <= len(doc["text"]) <= 2000, path
        assert isinstance(fm["tags"], list) and fm["tags"]
        if m := SESSION.fullmatch(path):
            assert set(fm) == {"kind", "title", "project", "session_id", "started_at", "ended_at",
                               "duration_minutes", "tags"}
            assert fm["kind"] == "session" and fm["session_id"].startswith(m[4])
            started, ended = datetime.fromisoformat(fm["started_at"]), datetime.fromisoformat(fm["ended_at"])
            assert fm["started_at"].endswith("+09:00") and fm["ended_at"].endswith("+09:00")
            assert started.date().isoformat() == m[1] and started.strftime("%H%M%S") == m[2]
            assert ended - started == timedelta(minutes=fm["duration_minutes"]) and ended.date() == started.date()
        elif m := MINUTES.fullmatch(path):
            assert set(fm) == {"kind", "title", "date", "attendees", "tags", "project"}
            assert fm["kind"] == "minutes" and fm["date"] == m[1] and fm["attendees"]
        else:
            assert WIKI.fullmatch(path), path
            assert set(fm) == {"title", "tags"}
            continue
        assert first <= date.fromisoformat(m[1]) <= today


def test_each_window_holds_only_its_answer(dataset):
    today, by_id = dataset["today"], dataset["by_id"]
    first = today - timedelta(DAYS - 1)
    for q in dataset["queries"]:
        meta = q["metadata"]
        expr = meta["expression"]
        assert expr in q["text"]
        start, end = parse(expr, today)
        assert (start.isoformat(), end.isoformat()) == (meta["window"]["start"], meta["window"]["end"]), q
        assert start <= end
        answer = by_id[dataset["answer"][q["_id"]]]
        assert answer["metadata"]["topic"] == meta["topic"]
        assert start <= record_day(answer) <= end, q
        same_topic = [d for d in dataset["corpus"] if d["metadata"]["topic"] == meta["topic"] and d is not answer]
        assert same_topic  # a recurring topic: there are siblings to tell apart
        assert not [d["metadata"]["path"] for d in same_topic if start <= record_day(d) <= end], q
        assert start >= first  # no sibling could be hiding before the generated span


STOPWORDS = {"a", "an", "the", "at", "in", "on", "of", "to", "by", "for", "and", "or", "did", "was", "were", "is", "we",
             "what", "which", "who", "how", "many", "much", "long", "that", "this", "with", "from", "came", "out",
             "about", "up", "get", "go", "into"}


def tokens(text: str) -> set[str]:
    """ASCII words and numbers, and pairs of kanji or katakana: the content words a keyword search matches
    (hiragana is left out: particles and endings match everywhere by chance)."""
    words = {w for w in re.findall(r"[a-z0-9_@.%]+", text.lower()) if w not in STOPWORDS}
    japanese = "".join(c if re.match(r"[\u30a0-\u30ff\u4e00-\u9fff]", c) else " " for c in text)
    return words | {a + b for run in japanese.split() for a, b in zip(run, run[1:])}


def test_the_search_reads_each_question_as_the_set_means_it(dataset):
    from memory_search.search.timewords import find_time

    for q in dataset["queries"]:
        found = find_time(q["text"], dataset["today"])
        assert found is not None, q["text"]
        window = q["metadata"]["window"]
        assert (str(found.since), str(found.until)) == (window["start"], window["end"]), q["text"]


def test_questions_do_not_name_the_decision(dataset):
    """Whatever a question shares with its answer (time words aside), some sibling shares too."""
    by_id = dataset["by_id"]
    for q in dataset["queries"]:
        answer = by_id[dataset["answer"][q["_id"]]]
        siblings = [d for d in dataset["corpus"] if d["metadata"]["topic"] == q["metadata"]["topic"]
                    and d is not answer]
        elsewhere = set().union(*(tokens(d["title"] + " " + d["text"]) for d in siblings))
        asked = tokens(q["text"].replace(q["metadata"]["expression"], " "))
        shared = asked & tokens(answer["title"] + " " + answer["text"])
        assert not shared - elsewhere, (q["text"], shared - elsewhere)


def test_spread_of_expressions(dataset):
    queries = dataset["queries"]
    families = {q["metadata"]["family"] for q in queries}
    assert families == {"relative day", "weekday", "relative week", "relative month", "absolute", "range",
                        "told from a date"}
    assert len({q["metadata"]["kind"] for q in queries}) >= 14
    assert len({q["metadata"]["topic"] for q in queries}) >= 10
    # no record answers more than three questions
    answers = list(dataset["answer"].values())
    assert max(answers.count(a) for a in set(answers)) <= 3


def test_deterministic(dataset, tmp_path):
    generate(tmp_path / "again", dataset["today"].isoformat())
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "README.md"):
        assert (tmp_path / "again" / name).read_bytes() == (dataset["out"] / name).read_bytes(), name
    generate(tmp_path / "other", dataset["today"].isoformat(), seed=1)
    assert (tmp_path / "other" / "corpus.jsonl").read_bytes() != (dataset["out"] / "corpus.jsonl").read_bytes()
