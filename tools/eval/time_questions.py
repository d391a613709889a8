#!/usr/bin/env python3
"""Generate a time-bound retrieval set: recurring meetings and sessions that only the date tells apart.

    python3 time_questions.py OUT_DIR [--today YYYY-MM-DD] [--seed N] [--days 90]

Writes a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv, README.md) for a memories
directory of session summaries (raw/session/...) and meeting minutes (raw/minutes/...) dated over
the last --days days up to --today, plus undated wiki pages (wiki/...). Topics recur (weekly, every
few days, biweekly, monthly) with the same title and wording but different decisions, so a question
such as 「先週のリリース手順の打ち合わせで何を決めた?」 has one answer only once its time words are
read. Every question is checked here: the window its expression means (resolve()) must hold exactly
one record of its topic; the others are dropped and counted.

Dates are relative to --today (default: the real date), so the set never goes stale; the output is
a function of (--today, --seed, --days) only. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

JST = timezone(timedelta(hours=9))

# The tables (names, what a meeting decided, the noise around it) and each topic's texts (bodies, optional
# sentences, questions) are data: time_questions.json.
_DATA = json.loads(Path(__file__).with_name("time_questions.json").read_text(encoding="utf-8"))
TABLES, TEXTS = _DATA["tables"], _DATA["topics"]
MIN_CHARS, MAX_CHARS = 600, 2000  # body length of every record
N_QUESTIONS = 200  # half Japanese, half English
MAX_PER_RECORD = 3  # questions answered by one record, so the set covers many records
MAX_PER_RECORD_KIND = 2  # of which with the same kind of expression
MAX_FAILURES = 300  # failed tries before an expression kind is given up (a backstop: kinds end when out of options)

JA_NAMES = ["佐藤", "鈴木", "高橋", "田中", "伊藤", "渡辺", "山本", "中村", "小林", "加藤", "吉田", "山田"]
EN_NAMES = ["Alice", "Ben", "Chloe", "Daniel", "Emma", "Farid", "Grace", "Hiro", "Isabel", "Jun", "Kate", "Liam"]
WEEKDAYS_JA = ["月曜", "火曜", "水曜", "木曜", "金曜", "土曜", "日曜"]
WEEKDAYS_EN = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
             "October", "November", "December"]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "thirteen", "fourteen"]
KANJI_DIGITS = "〇一二三四五六七八九"


# ---------------------------------------------------------------- calendar

def monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def month_bounds(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    following = date(year + month // 12, month % 12 + 1, 1)
    return first, following - timedelta(days=1)


def months_back(day: date, n: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 - n
    return index // 12, index % 12 + 1


def recent_weekday(today: date, weekday: int) -> date:
    """The most recent such weekday on or before today (a bare 月曜 / Monday)."""
    return today - timedelta(days=(today.weekday() - weekday) % 7)


def kanji_number(n: int) -> str:
    tens, ones = divmod(n, 10)
    return (("" if tens == 1 else KANJI_DIGITS[tens]) + "十" if tens else "") + (KANJI_DIGITS[ones] if ones else "")


# ---------------------------------------------------------------- time expressions
# An expression is (kind, args). resolve() gives the window it means relative to today (both ends
# inclusive); BUILD gives, for a record's date, an expression whose window holds it (or None when
# the kind cannot name that date); FORMS renders it in words.

Expr = tuple[str, tuple]

RESOLVE: dict[str, Callable[[tuple, date], tuple[date, date]]] = {
    "today": lambda a, t: (t, t),
    "yesterday": lambda a, t: (t - timedelta(1), t - timedelta(1)),
    "day_before_yesterday": lambda a, t: (t - timedelta(2), t - timedelta(2)),
    "n_days_ago": lambda a, t: (t - timedelta(a[0]), t - timedelta(a[0])),
    "weekday": lambda a, t: (recent_weekday(t, a[0]),) * 2,
    # "last Monday": strictly before today, so on a Monday it is a week ago
    "last_weekday": lambda a, t: (recent_weekday(t - timedelta(1), a[0]),) * 2,
    "last_week_weekday": lambda a, t: (monday(t) - timedelta(7 - a[0]),) * 2,
    "date": lambda a, t: (a[0], a[0]),
    "this_week": lambda a, t: (monday(t), t),
    "last_week": lambda a, t: (monday(t) - timedelta(7), monday(t) - timedelta(1)),
    "week_before_last": lambda a, t: (monday(t) - timedelta(14), monday(t) - timedelta(8)),
    "n_weeks_ago": lambda a, t: (monday(t - timedelta(7 * a[0])), monday(t - timedelta(7 * a[0])) + timedelta(6)),
    "this_month": lambda a, t: (t.replace(day=1), t),
    "last_month": lambda a, t: month_bounds(*months_back(t, 1)),
    "n_months_ago": lambda a, t: month_bounds(*months_back(t, a[0])),
    "month": lambda a, t: month_bounds(*a),
    "date_range": lambda a, t: (a[0], a[1]),
    "since_weekday": lambda a, t: (recent_weekday(t, a[0]), t),
    "since_last_week": lambda a, t: (monday(t) - timedelta(7), t),
    # told from a date: the day after (before) it, the weekday before it
    "day_after_date": lambda a, t: (a[0] + timedelta(1),) * 2,
    "day_before_date": lambda a, t: (a[0] - timedelta(1),) * 2,
    "weekday_before_date": lambda a, t: (a[1] - timedelta((a[1].weekday() - a[0]) % 7 or 7),) * 2,
}


def _since_weekday(d: date, t: date, rng: random.Random) -> tuple | None:
    # any weekday whose most recent occurrence is after the start of the week ago and not after d
    options = [wd for wd in range(7) if d >= recent_weekday(t, wd) != t]
    return (rng.choice(options),) if options else None


def _date_range(d: date, t: date, rng: random.Random) -> tuple | None:
    before, after = rng.randint(0, 3), rng.randint(0, 3)
    start, end = d - timedelta(before), min(t, d + timedelta(after))
    return (start, end) if end > start else None


def _months_ago(d: date, t: date) -> int:
    return (t.year - d.year) * 12 + t.month - d.month


BUILD: dict[str, Callable[[date, date, random.Random], tuple | None]] = {
    "today": lambda d, t, r: () if d == t else None,
    "yesterday": lambda d, t, r: () if (t - d).days == 1 else None,
    "day_before_yesterday": lambda d, t, r: () if (t - d).days == 2 else None,
    "n_days_ago": lambda d, t, r: ((t - d).days,) if 2 <= (t - d).days <= 14 else None,
    "weekday": lambda d, t, r: (d.weekday(),) if 1 <= (t - d).days <= 6 else None,
    "last_weekday": lambda d, t, r: (d.weekday(),) if 1 <= (t - d).days <= 7 else None,
    "last_week_weekday": lambda d, t, r: (d.weekday(),) if monday(d) == monday(t) - timedelta(7) else None,
    "date": lambda d, t, r: (d,),
    "this_week": lambda d, t, r: () if monday(d) == monday(t) else None,
    "last_week": lambda d, t, r: () if monday(d) == monday(t) - timedelta(7) else None,
    "week_before_last": lambda d, t, r: () if monday(d) == monday(t) - timedelta(14) else None,
    "n_weeks_ago": lambda d, t, r: (n,) if 2 <= (n := (monday(t) - monday(d)).days // 7) <= 8 else None,
    "this_month": lambda d, t, r: () if _months_ago(d, t) == 0 else None,
    "last_month": lambda d, t, r: () if _months_ago(d, t) == 1 else None,
    "n_months_ago": lambda d, t, r: (n,) if 2 <= (n := _months_ago(d, t)) <= 3 else None,
    "month": lambda d, t, r: (d.year, d.month),
    "date_range": _date_range,
    "since_weekday": _since_weekday,
    "since_last_week": lambda d, t, r: () if d >= monday(t) - timedelta(7) else None,
    "day_after_date": lambda d, t, r: (d - timedelta(1),),
    "day_before_date": lambda d, t, r: (d + timedelta(1),) if d < t else None,
    "weekday_before_date": lambda d, t, r: ((d.weekday(), d + timedelta(k)) if (k := r.randint(1, 6)) <= (t - d).days
                                            else None),
}

# How many questions of each kind to aim for; kinds that find too few unique answers (month
# windows over weekly topics, today without a record) yield their share to the others.
TARGETS = TABLES["TARGETS"]
FAMILY = TABLES["FAMILY"]

# Ways to say each kind; English forms are adverbials ("on Monday", "in November") so that the
# question templates can take any of them in the same place.
FORMS: dict[tuple[str, str], list[str]] = {
    ("today", "ja"): ["今日"], ("today", "en"): ["today"],
    ("yesterday", "ja"): ["昨日"], ("yesterday", "en"): ["yesterday"],
    ("day_before_yesterday", "ja"): ["一昨日", "おととい"], ("day_before_yesterday", "en"): ["the day before yesterday"],
    ("n_days_ago", "ja"): ["{n}日前", "{n_kanji}日前"], ("n_days_ago", "en"): ["{n} days ago", "{n_word} days ago"],
    ("weekday", "ja"): ["{wd_ja}", "{wd_ja}日"], ("weekday", "en"): ["on {wd_en}"],
    ("last_weekday", "ja"): ["この前の{wd_ja}", "この前の{wd_ja}日"], ("last_weekday", "en"): ["last {wd_en}"],
    ("last_week_weekday", "ja"): ["先週の{wd_ja}", "先週の{wd_ja}日"],
    ("last_week_weekday", "en"): ["on {wd_en} last week"],
    ("date", "ja"): ["{m}月{d}日", "{y}年{m}月{d}日", "{iso}", "{m}/{d}"],
    ("date", "en"): ["on {mon} {d}", "on {month} {d}", "on {iso}", "on {month} {d}, {y}"],
    ("this_week", "ja"): ["今週"], ("this_week", "en"): ["this week"],
    ("last_week", "ja"): ["先週"], ("last_week", "en"): ["last week"],
    ("week_before_last", "ja"): ["先々週"], ("week_before_last", "en"): ["the week before last"],
    ("n_weeks_ago", "ja"): ["{n}週間前"], ("n_weeks_ago", "en"): ["{n_word} weeks ago", "{n} weeks ago"],
    ("this_month", "ja"): ["今月"], ("this_month", "en"): ["this month"],
    ("last_month", "ja"): ["先月"], ("last_month", "en"): ["last month"],
    ("n_months_ago", "ja"): ["{n}か月前", "{n}ヶ月前"], ("n_months_ago", "en"): ["{n_word} months ago"],
    ("month", "ja"): ["{m}月", "{y}年{m}月"], ("month", "en"): ["in {month}", "in {month} {y}"],
    ("date_range", "ja"): ["{m}月{d}日〜{tail}"],
    ("date_range", "en"): ["between {mon} {d} and {mon2} {d2}", "from {mon} {d} to {mon2} {d2}"],
    ("since_weekday", "ja"): ["{wd_ja}から", "{wd_ja}以降"], ("since_weekday", "en"): ["since {wd_en}"],
    ("since_last_week", "ja"): ["先週から", "先週以降"], ("since_last_week", "en"): ["since last week"],
    ("day_after_date", "ja"): ["{m}月{d}日の翌日", "{m}/{d}の翌日"],
    ("day_after_date", "en"): ["on the day after {month} {d}", "the day after {mon} {d}"],
    ("day_before_date", "ja"): ["{m}月{d}日の前日"], ("day_before_date", "en"): ["on the day before {month} {d}"],
    ("weekday_before_date", "ja"): ["{m}月{d}日の前の{wd_ja}", "{m}月{d}日の前の{wd_ja}日"],
    ("weekday_before_date", "en"): ["on the {wd_en} before {month} {d}", "the {wd_en} before {mon} {d}"],
}


def render(expr: Expr, lang: str, rng: random.Random) -> str:
    kind, args = expr
    p: dict = {}
    if kind in ("n_days_ago", "n_weeks_ago", "n_months_ago"):
        p = {"n": args[0], "n_word": NUMBER_WORDS[args[0]], "n_kanji": kanji_number(args[0])}
    elif kind in ("weekday", "last_weekday", "last_week_weekday", "since_weekday"):
        p = {"wd_ja": WEEKDAYS_JA[args[0]], "wd_en": WEEKDAYS_EN[args[0]]}
    elif kind == "month":
        p = {"y": args[0], "m": args[1], "month": MONTHS_EN[args[1] - 1]}
    elif kind in ("date", "date_range", "day_after_date", "day_before_date", "weekday_before_date"):
        first, last = args[-1], args[-1]
        if kind == "date_range":
            first = args[0]
        p = {"y": first.year, "m": first.month, "d": first.day, "iso": first.isoformat(),
             "mon": MONTHS_EN[first.month - 1][:3], "month": MONTHS_EN[first.month - 1],
             "mon2": MONTHS_EN[last.month - 1][:3], "d2": last.day,
             # 11月20日〜22日 within a month, 11月29日〜12月2日 across months
             "tail": f"{last.day}日" if last.month == first.month else f"{last.month}月{last.day}日"}
        if kind == "weekday_before_date":
            p.update(wd_ja=WEEKDAYS_JA[args[0]], wd_en=WEEKDAYS_EN[args[0]])
    return rng.choice(FORMS[kind, lang]).format(**p)


# ---------------------------------------------------------------- topics

@dataclass(frozen=True)
class Topic:
    key: str
    kind: str  # session | minutes
    langs: tuple[str, ...]  # languages a record may be written in
    cadence: tuple  # see SCHEDULES
    title: str  # same every time; may number the meeting with {n}
    project: str
    tags: tuple[str, ...]
    slots: Callable[[random.Random, int], dict]  # (rng, occurrence index) -> values for the templates
    distinct: tuple[str, ...]  # slots that must change from one occurrence to the next
    bodies: dict[str, str]  # lang -> markdown template; {notes} takes optional sentences
    notes: dict[str, list[str]]  # lang -> optional sentences, added until the body is long enough
    questions: dict[str, list[str]]  # lang -> question templates with {when}; never name a decision
    slug: str = ""  # minutes file name
    hour: int = 10  # minutes: when the meeting starts


def _every(start, today, rng, lo, hi):
    day, days = start + timedelta(rng.randrange(hi)), []
    while day <= today:
        days.append(day)
        day += timedelta(rng.randint(lo, hi))
    return days


def _weekly(start, today, rng, weekday, step_weeks=1):
    days, week = [], monday(start) + timedelta(7 * rng.randrange(step_weeks))
    while week <= today:
        roll, day = rng.random(), week + timedelta(weekday)
        if roll < 0.07:
            day = None  # skipped: holiday, half the team away
        elif roll < 0.17 and weekday < 4:
            day += timedelta(1)  # moved to the next day, still the same week
        if day and start <= day <= today:
            days.append(day)
        week += timedelta(7 * step_weeks)
    return days


def _monthly(start, today, rng, weekday, nth):
    days, (year, month) = [], (start.year, start.month)
    while date(year, month, 1) <= today:
        first = date(year, month, 1)
        day = first + timedelta((weekday - first.weekday()) % 7 + 7 * (nth - 1))
        if start <= day <= today:
            days.append(day)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return days


CADENCE_TEXT = {  # for the README
    "weekly": lambda wd: f"weekly, {WEEKDAYS_EN[wd]}; sometimes skipped" + (" or moved a day" if wd < 4 else ""),
    "biweekly": lambda wd: f"every other {WEEKDAYS_EN[wd]}; sometimes skipped" + (" or moved a day" if wd < 4 else ""),
    "every": lambda lo, hi: f"every {lo}–{hi} days",
    "monthly": lambda wd, nth: f"monthly, {['first', 'second', 'third', 'fourth'][nth - 1]} {WEEKDAYS_EN[wd]}",
}
SCHEDULES = {
    "weekly": lambda s, t, r, wd: _weekly(s, t, r, wd),
    "biweekly": lambda s, t, r, wd: _weekly(s, t, r, wd, 2),
    "every": lambda s, t, r, lo, hi: _every(s, t, r, lo, hi),
    "monthly": lambda s, t, r, wd, nth: _monthly(s, t, r, wd, nth),
}


def pick(rng: random.Random, pool: list, k: int | None = None):
    return rng.choice(pool) if k is None else rng.sample(pool, k)


# --- 週次リリース手順ミーティング
RELEASE_CHECKLIST = TABLES["RELEASE_CHECKLIST"]
RELEASE_RISKS = TABLES["RELEASE_RISKS"]
RELEASE_FOLLOWUPS = TABLES["RELEASE_FOLLOWUPS"]


def release_slots(rng, i):
    people = pick(rng, JA_NAMES, 5)
    return dict(version=f"v0.{9 + i // 3}.{i % 3}", attendees=people, freeze=pick(rng, [
        "水曜 15:00", "水曜 18:00", "木曜 10:00", "木曜 17:00", "金曜 12:00"]),
        canary=pick(rng, [5, 10, 15, 20, 25, 30]), rollback_owner=people[1], owner1=people[0],
        owner2=people[2], err_rate=pick(rng, ["0.5", "1", "1.5", "2"]), p95=pick(rng, [300, 400, 500, 600, 800]),
        checklist=pick(rng, RELEASE_CHECKLIST), risk=pick(rng, RELEASE_RISKS),
        followup=pick(rng, RELEASE_FOLLOWUPS), rehearsal=pick(rng, ["月曜", "火曜の午後", "水曜の午前", "木曜"]))


RELEASE = Topic(
    key="release-weekly", kind="minutes", langs=("ja",), cadence=("weekly", 1), slug="release-weekly", hour=10,
    title="週次リリース手順ミーティング", project="memory-search", tags=("release", "定例"), slots=release_slots,
    distinct=("canary", "rollback_owner", "checklist", "freeze"), **TEXTS["release-weekly"])

# --- インフラ定例
INFRA_REPORTS = TABLES["INFRA_REPORTS"]
INFRA_FOLLOWUPS = TABLES["INFRA_FOLLOWUPS"]


def infra_slots(rng, i):
    people = pick(rng, JA_NAMES, 4)
    return dict(n=40 + i, attendees=people, owner1=people[0], owner2=people[1],
                backup_window=pick(rng, ["01:00–02:00", "02:00–03:00", "02:30–03:30", "03:00–04:00", "04:00–05:00",
                                         "23:30–00:30"]),
                instance=pick(rng, ["m7g.large", "m7g.xlarge", "c7g.xlarge", "r7g.large", "t4g.xlarge", "m6i.large",
                                    "c6i.xlarge"]),
                cost=rng.randint(38, 64), cost_delta=f"{pick(rng, ['+', '-'])}{rng.randint(1, 9)}%",
                alerts=(alerts := rng.randint(3, 30)), alerts_real=rng.randint(0, min(alerts, 5)),
                disk=pick(rng, [70, 75, 80, 85, 90]), report=pick(rng, INFRA_REPORTS),
                followup=pick(rng, INFRA_FOLLOWUPS))


INFRA = Topic(
    key="infra-weekly", kind="minutes", langs=("ja",), cadence=("weekly", 3), slug="infra-weekly", hour=14,
    title="インフラ定例 第{n}回", project="platform", tags=("infra", "定例"), slots=infra_slots,
    distinct=("backup_window", "instance", "cost"), **TEXTS["infra-weekly"])

# --- HNSW index tuning (an error and its fix belong together)
HNSW_ERRORS = [
    ("RuntimeError: Cannot return the results in a contigious 2D array. Probably ef or M is too small",
     "ef_search was below k for one configuration; the sweep now starts at k."),
    ("RuntimeError: The number of elements exceeds the specified limit ({n})",
     "The index was created with max_elements too small; it now resizes with 50% headroom."),
    ("ValueError: dimension mismatch: index has {d1} dims, query has {d2}",
     "A stale index from the previous embedding model was still on disk; deleted it and rebuilt."),
    ("MemoryError while calling resize_index({n})", "Lowered the insert batch size and resized in steps."),
    ("sqlite3.OperationalError: database is locked",
     "The benchmark and the indexer were writing at the same time; they now run one after the other."),
    ("Segmentation fault (core dumped) in add_items with num_threads={t}",
     "Only happened on a pickled index loaded with several threads; loading now uses one thread."),
    ("FileNotFoundError: ~/.cache/memory-search/hnsw/{h}.bin",
     "The cache key changed after the config refactor; the loader now falls back to a rebuild."),
    ("OSError: [Errno 28] No space left on device",
     "Old index snapshots filled the disk; snapshots older than three days are now cleaned up."),
]
HNSW_DECISIONS = TABLES["HNSW_DECISIONS"]
HNSW_NEXT = TABLES["HNSW_NEXT"]


def hnsw_slots(rng, i):
    error, fix = pick(rng, HNSW_ERRORS)
    error = error.format(n=rng.randrange(20, 90) * 1000, d1=pick(rng, [384, 768]), d2=pick(rng, [512, 1024]),
                         t=pick(rng, [4, 8, 16]), h=f"{rng.getrandbits(32):08x}")
    return dict(corpus=rng.randint(38, 60) * 100, queries=pick(rng, [120, 150, 200, 240]),
                m=pick(rng, [8, 12, 16, 24, 32, 48]),
                efc=pick(rng, [100, 128, 200, 256, 320, 400]), efs=pick(rng, [32, 48, 64, 96, 128, 160, 256]),
                build=rng.randint(40, 400), size=rng.randint(30, 180), error=error, fix=fix,
                recall=f"0.{rng.randint(880, 995)}", p95=rng.randint(3, 40), decision=pick(rng, HNSW_DECISIONS),
                next1=(nx := pick(rng, HNSW_NEXT, 2))[0], next2=nx[1])


HNSW = Topic(
    key="hnsw-tuning", kind="session", langs=("en",), cadence=("every", 2, 3), title="HNSW index tuning",
    project="memory-search", tags=("hnsw", "vector-index", "tuning"), slots=hnsw_slots,
    distinct=("efs", "error", "recall"), **TEXTS["hnsw-tuning"])

# --- 日本語トークナイザ改善
TOKENIZER_PROBLEMS = TABLES["TOKENIZER_PROBLEMS"]
TOKENIZER_MODES = ["SudachiPy の分割モード A", "SudachiPy の分割モード B", "SudachiPy の分割モード C", "MeCab + UniDic",
                   "SudachiPy モード C と文字 bigram の併用"]
TOKENIZER_ERRORS = [
    ("sudachipy.errors.SudachiError: dictionary not found: sudachidict_core",
     "仮想環境に辞書パッケージが入っていなかったので、依存関係に追加した。"),
    ("UnicodeDecodeError: 'utf-8' codec can't decode byte 0x{b:02x} in position {pos}",
     "Shift_JIS で保存された古いメモが混ざっていたため、読み込み時に文字コードを判定するようにした。"),
    ("sqlite3.OperationalError: no such tokenizer: sudachi",
     "FTS5 の拡張を読み込む前にテーブルを作っていた。初期化の順序を直した。"),
    ("ValueError: user dictionary line {line}: invalid part-of-speech",
     "ユーザー辞書の品詞列が古い形式のままだった。変換スクリプトで一括修正した。"),
    ("RecursionError: maximum recursion depth exceeded in normalize()",
     "正規化関数が自分自身を呼び出す経路があった。ループに書き直した。"),
    ("IndexError: string index out of range (offset {pos})",
     "サロゲートペアを含む絵文字でオフセットがずれていた。コードポイント単位で数えるようにした。"),
    ("KeyError: 'ｶﾀｶﾅ'", "半角カナの変換表に漏れがあった。NFKC 正規化を先に通すようにした。"),
]
TOKENIZER_DECISIONS = TABLES["TOKENIZER_DECISIONS"]
TOKENIZER_NEXT = TABLES["TOKENIZER_NEXT"]


def tokenizer_slots(rng, i):
    mode_before, mode = pick(rng, TOKENIZER_MODES, 2)
    error, fix = pick(rng, TOKENIZER_ERRORS)
    before = rng.randint(560, 700)
    return dict(problem=pick(rng, TOKENIZER_PROBLEMS), docs=rng.randint(12, 30) * 100,
                queries=pick(rng, [80, 100, 120]),
                mode_before=mode_before, mode=mode, dict_add=rng.randint(3, 60), dict_total=rng.randint(150, 600),
                error=error.format(b=rng.randrange(128, 256), pos=rng.randint(10, 4000), line=rng.randint(2, 400)),
                fix=fix, ndcg_before=f"0.{before}", ndcg_after=f"0.{before + rng.randint(-8, 45)}",
                decision=pick(rng, TOKENIZER_DECISIONS), next1=(nx := pick(rng, TOKENIZER_NEXT, 2))[0], next2=nx[1])


TOKENIZER = Topic(
    key="tokenizer", kind="session", langs=("ja",), cadence=("every", 2, 3), title="日本語トークナイザ改善",
    project="memory-search", tags=("tokenizer", "japanese", "fts"), slots=tokenizer_slots,
    distinct=("mode", "error", "dict_add"), **TEXTS["tokenizer"])

# --- Embedding model evaluation (written in either language)
EMBED_MODELS = TABLES["EMBED_MODELS"]
EMBED_DATASETS = [("JSQuAD の 500 問サブセット", "a 500-question JSQuAD subset"), ("package-notes", "package-notes"),
                  ("ja-questions-en-notes", "ja-questions-en-notes"), ("en-questions-ja-notes", "en-questions-ja-notes"),
                  ("社内メモ 300 件の自作セット", "a home-made set over 300 internal notes")]
EMBED_DECISIONS = TABLES["EMBED_DECISIONS"]
EMBED_NEXT = TABLES["EMBED_NEXT"]


def embed_slots(rng, i):
    models = pick(rng, EMBED_MODELS, 3)
    scores = sorted(rng.sample(range(520, 790), 3), reverse=True)
    rows = sorted(zip(models, scores), key=lambda _: rng.random())
    dataset = pick(rng, EMBED_DATASETS)
    slots = dict(winner=models[0], best=f"0.{scores[0]}", chunk=pick(rng, [256, 384, 512, 800]),
                 queries=pick(rng, [200, 300, 500]), dataset_ja=dataset[0], dataset_en=dataset[1],
                 cands=", ".join(m for m, _ in rows), dec=rng.randrange(4), nxt=rng.sample(range(4), 2))
    for n, (model, score) in enumerate(rows, 1):
        slots[f"m{n}"], slots[f"s{n}"], slots[f"v{n}"] = model, f"0.{score}", rng.randint(20, 400)
    return slots


EMBED = Topic(
    key="embedding-eval", kind="session", langs=("ja", "en"), cadence=("every", 3, 4),
    title="Embedding model evaluation", project="memory-search", tags=("embedding", "evaluation"), slots=embed_slots,
    distinct=("winner", "dataset_en"), **TEXTS["embedding-eval"])

# --- On-call handover
ONCALL_ALERTS = ["disk-usage-warning", "api-5xx-rate", "queue-lag-high", "cert-expiry-30d", "cpu-throttling",
                 "backup-job-late", "latency-p99-search", "memory-pressure-indexer"]
ONCALL_EVENTS = TABLES["ONCALL_EVENTS"]
ONCALL_DECISIONS = TABLES["ONCALL_DECISIONS"]
ONCALL_NEXT = ["tune the alert thresholds that paged at night", "check that the runbook links still work",
               "follow up on the open incident with the vendor", "test the new paging integration"]


def oncall_slots(rng, i):
    outgoing, primary, secondary, other = pick(rng, EN_NAMES, 4)
    pages = rng.randint(2, 24)
    return dict(outgoing=outgoing, primary=primary, secondary=secondary,
                attendees=[outgoing, primary, secondary, other],
                pages=pages, night=rng.randint(0, pages // 2), open_incidents=rng.randint(0, 3),
                event=pick(rng, ONCALL_EVENTS), alert=pick(rng, ONCALL_ALERTS),
                until=pick(rng, ["the threshold change ships", "the vendor fix lands", "the disk migration is done",
                                 "the next handover"]),
                decision=pick(rng, ONCALL_DECISIONS), next1=pick(rng, ONCALL_NEXT))


ONCALL = Topic(
    key="oncall-handover", kind="minutes", langs=("en",), cadence=("weekly", 0), slug="oncall-handover", hour=9,
    title="On-call handover", project="platform", tags=("oncall", "handover"), slots=oncall_slots,
    distinct=("primary", "alert"), **TEXTS["oncall-handover"])

# --- スプリント計画 (biweekly)
SPRINT_GOALS = TABLES["SPRINT_GOALS"]
SPRINT_STORIES = TABLES["SPRINT_STORIES"]


def sprint_slots(rng, i):
    people = pick(rng, JA_NAMES, 5)
    capacity = rng.randint(34, 52)
    return dict(n=21 + i, attendees=people, owner1=people[0], owner2=people[1], capacity=capacity,
                points=capacity - rng.randint(2, 9), carried=rng.randint(0, 5), goal=pick(rng, SPRINT_GOALS),
                story1=(st := pick(rng, SPRINT_STORIES, 2))[0], story2=st[1],
                decision=pick(rng, ["デモは最終日の金曜 16 時に行う。", "スパイクは最大 3 ポイントまでとする。",
                                    "レビュー待ちが 2 日を超えたら朝会で共有する。", "バグ対応用に 5 ポイント分のバッファを取る。"]),
                next1=pick(rng, ["見積もりの根拠をチケットに書く", "持ち越し分の分割案を出す",
                                 "デモ環境を準備する", "依存する他チームに日程を共有する"]))


SPRINT = Topic(
    key="sprint-planning", kind="minutes", langs=("ja",), cadence=("biweekly", 0), slug="sprint-planning", hour=13,
    title="スプリント計画 Sprint {n}", project="memory-search", tags=("sprint", "planning"), slots=sprint_slots,
    distinct=("goal", "points"), **TEXTS["sprint-planning"])

# --- 障害振り返り (irregular)
INCIDENTS = [
    ("検索 API が 503 を返し続け、全ユーザーが検索できなくなった", "インデックス更新中にワーカーが古いファイルハンドルを掴んだままになっていた",
     ["インデックスの差し替えをアトミックなリネームで行う", "ヘルスチェックに実際の検索クエリを含める", "ワーカーの再起動を自動化する"]),
    ("夜間バックアップが 3 日間失敗していたことに気づかなかった", "バックアップジョブの失敗通知が古いチャンネル宛てのままだった",
     ["バックアップの成否を毎朝ダッシュボードで確認する", "通知先を設定ファイルで一元管理する", "失敗が 2 回続いたらページする"]),
    ("証明書の期限切れで Web クリッパーから保存できなくなった", "自動更新のジョブが DNS の設定変更後に失敗し続けていた",
     ["期限 30 日前のアラートを追加する", "更新ジョブの失敗をページ対象にする", "手動更新の手順を wiki に残す"]),
    ("ディスクが満杯になりインデクサが停止した", "古いインデックスのスナップショットが削除されずに溜まっていた",
     ["スナップショットの保持期間を 3 日にする", "ディスク使用率 80% で警告を出す", "ログのローテーション設定を見直す"]),
    ("リリース直後に日本語の検索結果が空になった", "トークナイザの設定変更が再インデックスなしで本番に出た",
     ["トークナイザ設定の変更時は再インデックスを必須にする", "リリース前チェックに日本語クエリの疎通確認を入れる",
      "設定のハッシュをインデックスに記録する"]),
    ("DB のマイグレーションが途中で止まり、30 分間書き込みができなかった", "大きなテーブルへのインデックス追加がロックを取り続けた",
     ["大きなテーブルの変更はオンラインで行う", "マイグレーションの dry-run で所要時間を測る", "メンテナンス時間帯を告知する"]),
    ("外部の埋め込み API の障害で新規メモが検索対象にならなかった", "API のタイムアウトが無制限で、キューが詰まった",
     ["タイムアウトを 10 秒に設定する", "失敗したジョブを後で再実行するキューを分ける", "ローカルモデルへのフォールバックを用意する"]),
    ("設定ミスで他プロジェクトのメモが検索結果に混ざった", "プロジェクトの絞り込み条件がキャッシュキーに含まれていなかった",
     ["キャッシュキーに全ての絞り込み条件を含める", "プロジェクト分離の回帰テストを追加する", "設定変更のレビューを 2 名にする"]),
]


def postmortem_slots(rng, i):
    people = pick(rng, JA_NAMES, 4)
    summary, cause, measures = INCIDENTS[i % len(INCIDENTS)]  # each occurrence reviews a different incident
    hour, minute = rng.randint(9, 20), rng.randrange(0, 60, 5)
    span = rng.randint(12, 150)

    def stamp(m: int) -> str:
        return f"{hour + (minute + m) // 60:02d}:{(minute + m) % 60:02d}"

    return dict(attendees=people, responder=people[1], owner1=people[0], owner2=people[2], incident=summary,
                cause=cause,
                m1=(ms := pick(rng, measures, 2))[0], m2=ms[1], minutes=span, sev=pick(rng, ["SEV2", "SEV3"]),
                t0=stamp(0), t1=stamp(rng.randint(3, 10)), t2=stamp(span // 2 + 10), t3=stamp(span))


POSTMORTEM = Topic(
    key="postmortem", kind="minutes", langs=("ja",), cadence=("every", 10, 25), slug="postmortem", hour=16,
    title="障害振り返り", project="platform", tags=("postmortem", "incident"), slots=postmortem_slots,
    distinct=("incident",), **TEXTS["postmortem"])

# --- Dependency upgrade
PACKAGES = ["numpy", "pyyaml", "hnswlib", "sentence-transformers", "torch", "fastapi", "uvicorn", "pydantic",
            "pytest", "ruff", "sudachipy", "onnxruntime", "tokenizers", "httpx", "rich", "watchdog"]
BREAKAGES = TABLES["BREAKAGES"]  # package -> what its upgrade broke


def dependency_slots(rng, i):
    broken = pick(rng, sorted(BREAKAGES))
    names = [broken] + pick(rng, [p for p in PACKAGES if p != broken], 2)
    rng.shuffle(names)
    ups = []
    for name in names:
        major, minor = rng.randint(0, 4), rng.randint(0, 30)
        ups.append(f"{name} {major}.{minor}.{rng.randint(0, 9)} → {major}.{minor + rng.randint(1, 3)}.0")
    return dict(up1=ups[0], up2=ups[1], up3=ups[2], breakage=BREAKAGES[broken], failures=rng.randint(1, 14),
                pin=pick(rng, [p for p in PACKAGES if p not in names]),
                pin_reason=pick(rng, ["the next minor drops Python 3.10.",
                                      "its latest release has an open memory leak.",
                                      "the upgrade needs a model re-download for every user.",
                                      "the new version changes output we snapshot in tests."]),
                decision=pick(rng, ["Run the outdated report in CI weekly and open one issue per major bump.",
                                    "Group minor upgrades into one PR; majors get their own.",
                                    "Keep the lock file under review by two people.",
                                    "Test the lowest supported versions in a separate CI job."]),
                next1=pick(rng, ["Try the held-back major upgrade on a branch.", "Update the changelog.",
                                 "Ask upstream about the regression.", "Drop the workaround once upstream releases a fix."]))


DEPENDENCY = Topic(
    key="dependency-upgrade", kind="session", langs=("en",), cadence=("weekly", 4), title="Dependency upgrade",
    project="memory-search", tags=("dependencies", "maintenance"), slots=dependency_slots,
    distinct=("up1", "breakage", "pin"), **TEXTS["dependency-upgrade"])

# --- Design review (biweekly)
DESIGNS = [
    ("storing embeddings", "one SQLite file per project", "a single shared file with a project column"),
    ("incremental indexing", "a file watcher", "a periodic mtime scan"),
    ("snippet rendering", "server-side highlighting", "returning offsets and letting clients highlight"),
    ("resolving time expressions in queries", "a rule-based resolver", "asking the calling LLM to pass dates"),
    ("the config format", "TOML", "YAML"),
    ("chunking", "heading-based chunks", "fixed windows with overlap"),
    ("the MCP transport", "stdio only", "stdio plus HTTP"),
    ("wiki links", "resolving them at index time", "resolving them at query time"),
]


def design_slots(rng, i):
    subject, a, b = DESIGNS[i % len(DESIGNS)]
    presenter, r1, r2 = pick(rng, EN_NAMES, 3)
    chosen = pick(rng, ["A", "B"])
    return dict(subject=subject, a=a, b=b, chosen=chosen, chosen_text=a if chosen == "A" else b, presenter=presenter,
                attendees=[presenter, r1, r2],
                reviewer1=r1, reviewers=f"{r1} and {r2}", estimate=f"{rng.randint(2, 40)} ms per query, "
                f"{rng.randint(5, 90)} MB extra on disk for 10,000 notes",
                condition=pick(rng, ["revisit if p95 latency grows by more than 20%.", "ship behind a flag first.",
                                     "keep the other option documented as the fallback.",
                                     "needs a migration script before the next release."]),
                next1=pick(rng, ["write the migration plan", "prototype the edge cases", "check the Windows behaviour",
                                 "draft the user-facing docs"]))


DESIGN = Topic(
    key="design-review", kind="minutes", langs=("en",), cadence=("biweekly", 2), slug="design-review", hour=15,
    title="Design review", project="memory-search", tags=("design", "review"), slots=design_slots,
    distinct=("subject",), **TEXTS["design-review"])

# --- バックアップ復元訓練 (monthly)
RESTORE_ISSUES = TABLES["RESTORE_ISSUES"]


def restore_slots(rng, i):
    people = pick(rng, JA_NAMES, 3)
    rto = pick(rng, [60, 90, 120])
    return dict(attendees=people, owner1=people[0], owner2=people[1], restore_min=rng.randint(25, 140), rto=rto,
                snapshot=pick(rng, ["前日 03:00", "前日 02:00", "当日 03:00", "2 日前 03:00"]), tables=rng.randint(14, 40),
                diff=pick(rng, ["差分なし", "1 テーブルで件数が一致せず調査中"]), issue=pick(rng, RESTORE_ISSUES),
                decision=pick(rng, ["訓練の結果は毎回インフラ定例で報告する。", "復元手順はスクリプト化を進める。",
                                    "訓練は必ず手順書を初めて読む人が担当する。", "RTO の目標値は変えずに様子を見る。"]),
                scenario=pick(rng, ["リージョン障害", "誤ったマイグレーションからの復旧", "暗号鍵の紛失", "インデックスだけの破損"]),
                next1=pick(rng, ["復元時間の内訳を記録する", "鍵の保管場所を再確認する", "検証環境の構成を Terraform 化する"]))


RESTORE = Topic(
    key="restore-drill", kind="minutes", langs=("ja",), cadence=("monthly", 2, 2), slug="restore-drill", hour=11,
    title="バックアップ復元訓練", project="platform", tags=("backup", "drill"), slots=restore_slots,
    distinct=("issue", "restore_min"), **TEXTS["restore-drill"])

# --- Monthly search quality review
FOCUS_AREAS = TABLES["FOCUS_AREAS"]


def quality_slots(rng, i):
    people = pick(rng, EN_NAMES, 4)
    focus, worst = pick(rng, FOCUS_AREAS, 2)
    return dict(attendees=people, owner1=people[0], owner2=people[1], volume=f"{rng.randint(8, 40) * 100:,}",
                zero=f"{rng.randint(15, 90) / 10:.1f}", ndcg=f"0.{rng.randint(600, 780)}",
                trend=f"{pick(rng, ['+', '-'])}0.0{rng.randint(1, 9)}", worst=worst, focus=focus,
                target=pick(rng, ["2", "3", "4", "5"]),
                decision=pick(rng, ["Add twenty failing queries from the sample to the nightly evaluation set.",
                                    "Report the zero-result rate per language from now on.",
                                    "Share the review summary in the team channel, not only in these minutes.",
                                    "Keep the current fusion weights until the focus work lands."]),
                next1=pick(rng, ["turn the focus area into issues", "update the evaluation dashboard",
                                 "ask two heavy users for example queries", "check the numbers per project"]))


QUALITY = Topic(
    key="quality-review", kind="minutes", langs=("en",), cadence=("monthly", 4, 1), slug="search-quality-review",
    hour=16, title="Monthly search quality review", project="memory-search", tags=("search-quality", "monthly"),
    slots=quality_slots, distinct=("focus", "zero"), **TEXTS["quality-review"])

TOPICS = [RELEASE, INFRA, HNSW, TOKENIZER, EMBED, ONCALL, SPRINT, POSTMORTEM, DEPENDENCY, DESIGN, RESTORE, QUALITY]


# ---------------------------------------------------------------- one-off records (noise)
# Sessions on parts of the code base that no recurring topic covers, and a few one-off meetings.

COMPONENTS = [  # (ja, en, what it is in ja, in en, files a change touches)
    ("CLI", "CLI", "CLI は search.py などのスクリプトの入口で、引数の解釈と結果の表示を受け持つ。",
     "The CLI is the entry point of search.py and the other scripts; it parses arguments and prints results.",
     ("scripts/search.py", "scripts/memory_search/cli.py", "tests/test_cli.py")),
    ("README", "README", "README は初めて使う人が最初に読む文書で、インストールと基本的な使い方を説明している。",
     "The README is what first-time users read: installation and basic usage.",
     ("README.md", "docs/install.md", "docs/usage.md")),
    ("CI ワークフロー", "CI workflow", "CI ワークフローは PR ごとにテストとリンタを Linux と macOS で実行する。",
     "The CI workflow runs the tests and linters on Linux and macOS for every PR.",
     (".github/workflows/ci.yml", "Makefile", "scripts/ci_matrix.py")),
    ("frontmatter パーサ", "frontmatter parser", "frontmatter パーサはメモの先頭にある YAML ブロックを読み、タイトルやタグを取り出す。",
     "The frontmatter parser reads the YAML block at the top of each note and extracts the title, tags and dates.",
     ("scripts/memory_search/frontmatter.py", "scripts/memory_search/records.py", "tests/test_frontmatter.py")),
    ("MCP サーバ", "MCP server", "MCP サーバは検索機能をエージェントからツールとして呼べるようにする部分である。",
     "The MCP server exposes search as tools that agents can call.",
     ("scripts/memory_search/mcp_server.py", "references/mcp-server.md", "tests/test_mcp.py")),
    ("ベンチマークスクリプト", "benchmark script", "ベンチマークスクリプトはインデックス作成と検索の所要時間を測り、CSV に記録する。",
     "The benchmark script times indexing and searching and appends the numbers to a CSV file.",
     ("scripts/memory_search/benchmark.py", "benchmarks/results.csv", "tests/test_benchmark.py")),
    ("セッション終了フック", "session-end hook", "セッション終了フックは作業セッションの終わりに要約を memories ディレクトリへ書き出す。",
     "The session-end hook writes a summary of each work session into the memories directory.",
     ("hooks/session_end.py", "hooks/README.md", "tests/test_hooks.py")),
    ("Makefile", "Makefile", "Makefile にはテスト、評価、パッケージ作成などのよく使うコマンドがまとまっている。",
     "The Makefile collects the common commands: tests, evaluation, packaging.",
     ("Makefile", "scripts/release.sh", "docs/development.md")),
    ("設定ファイルの読み込み", "config loader", "設定ファイルの読み込み部分は、既定値、設定ファイル、環境変数の順に値を重ねる。",
     "The config loader layers defaults, the config file and environment variables, in that order.",
     ("scripts/memory_search/config.py", "references/configuration.md", "tests/test_config.py")),
    ("差分インデクサ", "incremental indexer", "差分インデクサは前回から変わったメモだけを読み直してインデックスを更新する。",
     "The incremental indexer re-reads only the notes that changed since the last run.",
     ("scripts/memory_search/indexer.py", "scripts/memory_search/store.py", "tests/test_indexer.py")),
    ("スニペット表示", "snippet rendering", "スニペット表示は検索結果の中から、クエリに合う部分を抜き出して見せる。",
     "Snippet rendering picks the part of each hit that matches the query and shows it.",
     ("scripts/memory_search/render.py", "scripts/memory_search/snippets.py", "tests/test_render.py")),
    ("Web クリッパー", "web clipper", "Web クリッパーはブラウザで見ているページを Markdown にして保存する。",
     "The web clipper saves the page open in the browser as Markdown.",
     ("integrations/clipper/clip.py", "integrations/clipper/README.md", "tests/test_clipper.py")),
]
ACTIONS = [  # (ja title, en title, ja paragraph, en paragraph)
    ("バグ修正", "bug fix",
     "{comp_ja}で報告されていた不具合を調べて直した。再現手順を issue #{issue} にまとめ、原因は{cause_ja}だと分かった。修正に合わせて回帰テストを {tests} 件追加した。",
     "Tracked down the bug reported against the {comp_en}. The reproduction is in issue #{issue}; the cause was {cause_en}. Added {tests} regression tests with the fix."),
    ("リファクタリング", "refactor",
     "{comp_ja}のコードを整理した。{files} ファイルにまたがっていた処理を一つのモジュールにまとめ、公開関数の名前を揃えた。動作は変えていないことをテストで確認した。",
     "Cleaned up the {comp_en}. Logic spread over {files} files now lives in one module, and the public functions follow one naming scheme. Behaviour is unchanged; the tests confirm it."),
    ("テスト追加", "test coverage",
     "{comp_ja}のテストが手薄だったので追加した。境界値と異常系を中心に {tests} 件を書き、カバレッジは {cov_a}% から {cov_b}% になった。",
     "The {comp_en} had thin test coverage. Wrote {tests} tests focused on edge cases and failure paths; coverage went from {cov_a}% to {cov_b}%."),
    ("ドキュメント更新", "docs update",
     "{comp_ja}のドキュメントを実装に合わせて更新した。古くなっていたオプションの説明を {files} 箇所直し、使用例を追加した。",
     "Brought the {comp_en} documentation in line with the code. Fixed {files} outdated option descriptions and added usage examples."),
    ("性能調査", "performance investigation",
     "{comp_ja}が遅いという報告を受けてプロファイルを取った。処理時間の {cov_a}% が不要な再読み込みに使われていたので、結果をキャッシュするようにした。{tests} 回の計測で中央値は {ms_a}ms から {ms_b}ms になった。",
     "Profiled the {comp_en} after a report that it was slow. {cov_a}% of the time went into needless re-reads, so the result is now cached. Over {tests} runs the median went from {ms_a} ms to {ms_b} ms."),
    ("エラーメッセージ改善", "error messages",
     "{comp_ja}のエラーメッセージを見直した。利用者が次に何をすればよいか分かるように、{files} 種類のメッセージに対処方法を書き添えた。",
     "Reworked the error messages of the {comp_en} so that each says what to do next; {files} messages now include a remedy."),
]
CAUSES = [("境界条件の扱い漏れ", "an unhandled edge case"), ("タイムゾーンの扱いの誤り", "a time-zone mix-up"),
          ("空ファイルの扱い漏れ", "empty files not being handled"), ("Windows のパス区切り文字の違い", "Windows path separators"),
          ("例外の握りつぶし", "a swallowed exception")]
GENERIC_NOTES = TABLES["GENERIC_NOTES"]
NOISE_SESSION = TABLES["NOISE_SESSION"]
NOISE_DECISIONS = [("同様の箇所が他にないか次回まとめて確認する。", "Look for similar spots elsewhere next time."),
                   ("この方針を CONTRIBUTING.md に書き足す。", "Add this convention to CONTRIBUTING.md."),
                   ("今回の対応で十分とし、追加の作業はしない。", "This is enough; no further work planned."),
                   ("利用者向けのお知らせは出さない。", "No user-facing announcement needed.")]

MEETINGS = [  # one-off minutes: (slug, lang, title, tags, summary, discussion points, decisions, next steps)
    ("1on1", "ja", "1on1（{a}さん）", ("1on1",),
     "{a}さんとの 1on1。最近の業務の負荷と、来期に挑戦したいことについて話した。",
     ["レビュー依頼が集中して自分の作業が進まない週があるとのことで、依頼の分散方法を相談した。",
      "キャリアについては、設計の経験を積みたいという希望があった。次の設計レビューで発表役を担当してもらう案が出た。",
      "在宅勤務の日の集中時間の取り方についても意見交換した。"],
     ["担当範囲を少し広げ、レビューの機会を増やす。", "月に一度、技術的な相談の時間を設ける。", "次回は 1 か月後に行う。"],
     ["目標シートを更新する", "レビュー依頼の分散方法をチームに提案する"]),
    ("hiring-sync", "ja", "採用面接の振り返り", ("hiring",),
     "今週実施した面接 {k} 件の振り返り。評価基準の解釈にばらつきがあることが分かった。",
     ["特に「設計力」の項目で、面接官によって期待する水準が違っていた。",
      "候補者から、面接の合間の待ち時間が長かったという声があった。",
      "コーディング課題の所要時間が想定より長く、課題の範囲を絞るべきだという意見が出た。"],
     ["評価シートに具体例を追記する。", "面接官のペアを固定しない。", "課題の制限時間を 60 分にする。"],
     ["求人票の文言を見直す", "評価シートの改訂版を共有する"]),
    ("offsite", "en", "Team offsite planning", ("offsite",),
     "Planning the team offsite: venue, agenda and budget. {k} people have confirmed so far.",
     ["Two venues are still available on the preferred dates; the smaller one is closer to the station.",
      "People want fewer talks and more time to work on problems together.",
      "The budget covers travel and one dinner; anything beyond needs approval."],
     ["Keep the agenda to two themes.", "Book the venue with the smaller room.", "Collect dietary needs by Friday."],
     ["Send the calendar invite", "Draft the agenda"]),
    ("vendor-demo", "en", "Vendor demo: log analytics", ("vendor",),
     "A vendor demoed their log analytics product; we compared it with our current setup.",
     ["The query language is pleasant, but exporting dashboards is limited.",
      "Pricing is per ingested gigabyte, which would roughly double our current spend.",
      "Their retention options fit our policy; single sign-on costs extra."],
     ["No purchase this quarter.", "Revisit when the current contract ends.", "Ask for a trial on staging data."],
     ["Share the pricing sheet", "Summarise the comparison for the infra weekly"]),
    ("security-training", "ja", "セキュリティ研修", ("security", "training"),
     "年次のセキュリティ研修。フィッシングの実例と、鍵やトークンの扱いについて確認した。",
     ["昨年社内で実際にあった誤送信の事例が紹介され、送信前の確認手順を見直した。",
      "個人の端末に残っている古いトークンを棚卸しする必要があるという指摘があった。",
      "研修の最後に小テストを行い、全員が合格した。"],
     ["個人の端末にトークンを平文で置かない。", "不審なメールは専用チャンネルに転送する。", "パスワードマネージャの利用を必須にする。"],
     ["受講記録を提出する", "古いトークンを失効させる"]),
    ("license-review", "en", "OSS licence review", ("legal", "oss"),
     "Reviewed the licences of {k} new third-party packages before the next release.",
     ["All new packages use permissive licences; two need attribution in the NOTICE file.",
      "One transitive dependency changed its licence in a recent release; the pinned version is unaffected.",
      "Bundled model files have their own licence, which has to be shown to users on download."],
     ["All are permissive; no action needed.", "Keep the NOTICE file generated in CI.",
      "Show the model licence at first download."], ["Update the third-party list", "Add the licence check to CI"]),
    ("okr-review", "ja", "四半期 OKR レビュー", ("okr",),
     "四半期の OKR の進捗を確認した。達成見込みは {k} 割程度。",
     ["検索品質に関する KR は順調だが、導入チーム数の KR は目標に届かない見込み。",
      "未達の原因は告知の遅れと、導入手順の分かりにくさにあると整理した。",
      "KR の中に、達成しても利用者の価値につながらないものがあるという指摘があった。"],
     ["未達の KR は次期に持ち越さず、改めて設定する。", "進捗の確認は隔週にする。", "KR は三つまでに絞る。"],
     ["次期の OKR 案を作る", "導入手順の改善案をまとめる"]),
    ("study-group", "ja", "社内勉強会: Rust 入門", ("study",),
     "社内勉強会で Rust の所有権と借用を扱った。参加者は {k} 名。",
     ["前半は資料を使った説明、後半は小さな課題を各自で解く形式にした。",
      "コンパイラのエラーメッセージを読む練習が好評だった。",
      "課題の難易度にばらつきがあり、早く終わった人と終わらなかった人の差が大きかった。"],
     ["次回は非同期処理を扱う。", "資料は社内 wiki に置く。", "課題は基本と発展の二段階にする。"],
     ["アンケートを集計する", "次回の講師を決める"]),
    ("customer-interview", "en", "Customer interview", ("research",),
     "Interviewed a team that uses the notes search daily; {k} pain points came up.",
     ["They search mostly for decisions from past meetings, often remembering only roughly when it was.",
      "Results from other projects get in the way; they want a project filter that sticks.",
      "The first index on a new laptop took longer than they expected."],
     ["Prioritise the filter by project request.", "Ask two more teams before deciding.",
      "Share the interview summary with the whole team."], ["Write up the interview notes", "Schedule the next interview"]),
    ("budget", "en", "Budget meeting", ("budget",),
     "Reviewed the team's budget for tools and training; {k}% is spent so far.",
     ["Training spend is behind plan because two courses were cancelled.",
      "Several SaaS seats have not been used for three months.",
      "Cloud costs are tracked separately at the infra weekly and were not discussed."],
     ["Move the unused training budget to conference tickets.", "Cancel two unused SaaS seats.",
      "Review the tool list again next quarter."], ["Confirm the seat count", "Ask finance about the transfer"]),
    ("onboarding", "ja", "新メンバーのオンボーディング計画", ("onboarding",),
     "来週から参加する新メンバーのオンボーディング計画。最初の {k} 日間の予定を決めた。",
     ["開発環境の構築、コードベースの案内、定例への参加の順に進める。",
      "前回のオンボーディングでは権限の申請に時間がかかったので、事前に済ませておく。",
      "ドキュメントの古い部分を新メンバーの目で指摘してもらうのがよいという意見が出た。"],
     ["メンターは持ち回りにしない。", "初週のうちに小さな PR を一つ出してもらう。", "最初の週は定例を見学のみとする。"],
     ["アカウント発行を依頼する", "オンボーディング資料を更新する"]),
    ("accessibility", "en", "Accessibility review", ("a11y",),
     "Reviewed the search UI for accessibility; {k} issues found, mostly contrast and focus order.",
     ["Highlighted matches in snippets have too little contrast in dark mode.",
      "Keyboard focus jumps to the footer after a search instead of the first result.",
      "Screen readers announce the result count, but not the active filters."],
     ["Fix contrast issues before the next release.", "Add keyboard navigation tests.",
      "Announce active filters to screen readers."], ["File the issues", "Ask for a second review after the fixes"]),
]


# ---------------------------------------------------------------- wiki pages (undated distractors)
# Each describes a recurring topic in general, with its words but none of its dated decisions.

WIKI_FOOTER = TABLES["WIKI_FOOTER"]

WIKI = [  # (slug, lang, title, tags, body)
    ("release-process", "ja", "リリース手順", ("release", "runbook"), """## 概要
リリースは毎週、週次リリース手順ミーティングで手順とパラメータを確認してから行う。コードフリーズ、カナリア、全台展開、リリース後の監視という流れは毎回同じで、変わるのはカナリアの比率やロールバック担当などのパラメータだけである。

## 手順
1. コードフリーズ。以降のマージはリリースマネージャの承認制。
2. ステージングで動作確認し、マイグレーションの所要時間を測る。
3. カナリアとして本番トラフィックの一部に新バージョンを出す。
4. エラー率とレイテンシに問題がなければ全台に展開する。
5. リリース後 24 時間はエラー率を監視し、#release に報告する。

## 注意点
- ロールバック担当は毎回のミーティングで指名する。
- リリースノートは日本語と英語の両方で用意する。

## よくある質問
- カナリアの比率は毎回同じではないのか: 変更の大きさやリスクに応じて、週次のミーティングで決め直している。
- リリースを延期するのは誰が決めるのか: リリースマネージャが判断し、#release で理由を共有する。"""),
    ("release-rollback", "ja", "ロールバック手順", ("release", "rollback", "runbook"), """## いつロールバックするか
カナリア中または全台展開後に、エラー率やレイテンシがミーティングで決めた基準値を超えたら、原因の調査より先にロールバックする。判断はロールバック担当が行い、迷ったら戻す。

## 手順
1. #release チャンネルでロールバックを宣言する。
2. デプロイツールで直前のバージョンを指定して再デプロイする。
3. マイグレーションを含むリリースでは、後方互換かどうかを確認してから DB を戻す。
4. 監視ダッシュボードで回復を確認する。
5. 障害振り返りが必要かどうかを判断する。

## よくある失敗
- 後方互換でないマイグレーションを含むリリースを、DB ごと戻そうとして時間がかかる。
- フィーチャーフラグで済む問題なのに全体を戻してしまう。

## 関連
リリースの流れ全体は「リリース手順」、障害として扱う場合の進め方は「障害振り返り（ポストモーテム）の進め方」を参照。判断基準の値は週次のリリース手順ミーティングで見直しているため、最新の値はその回の議事録で確認すること。"""),
    ("infra-weekly", "ja", "インフラ定例の進め方", ("infra", "定例"), """## 目的
インフラ定例は毎週木曜に開き、クラウド費用、監視アラート、バックアップ、インスタンス構成の変更を確認する場である。決定事項はその回の議事録に残す。

## アジェンダ
- 先週分のコストの報告と今月の見込み
- アラートの件数と、対応が必要だったものの確認
- バックアップの時間帯や保持期間の変更
- インスタンスタイプの変更や負荷試験の結果
- オンコールから上がってきた課題

## 運用ルール
- 変更は Terraform の PR で行い、定例で合意してからマージする。
- 費用は円とドルの両方で記録する。
- 議事録の番号は通し番号とする（第 N 回）。

## 議事録の書き方
報告と決定事項を分けて書く。決定事項には、誰がいつまでに何をするかを必ず添える。前回からの宿題は冒頭で確認し、終わっていないものは理由を書いて持ち越す。数値（費用、件数、しきい値）は単位まで書く。"""),
    ("backup-policy", "ja", "バックアップ方針", ("backup", "infra"), """## 対象
検索 API のデータベース、インデックスのスナップショット、設定ファイルをバックアップの対象とする。メモの原本（memories ディレクトリ）は各利用者の責任で管理する。

## 方針
- 夜間に 1 日 1 回フルバックアップを取る。時間帯はインフラ定例で決め、夜間バッチや再インデックスと重ならないようにする。
- 保持期間は 14 日。月初のものは 3 か月保持する。
- バックアップは暗号化し、鍵は別のアカウントで管理する。
- 失敗した場合は Slack に通知し、2 回続いたらオンコールをページする。

## 復元
復元手順は「バックアップ復元訓練」のページを参照。訓練は月に一度行う。

## 変更の手順
バックアップの時間帯や保持期間を変えるときは、インフラ定例で合意してから Terraform の PR を出す。変更後の最初のバックアップが成功したことを翌朝確認し、結果を定例で報告する。"""),
    ("hnsw-index", "en", "HNSW index", ("hnsw", "vector-index"), """## What it is
The semantic leg of memory-search stores chunk embeddings in an HNSW (hierarchical navigable small world) index. HNSW is a graph-based approximate nearest-neighbour index: each vector is linked to a few neighbours on several layers, and a search walks the graph from the top layer down.

## Why approximate
Brute-force search over every chunk is exact but grows linearly with the corpus. HNSW answers in roughly logarithmic time at the cost of occasionally missing a true neighbour; recall@10 against brute force measures how often.

## Where it lives
The index file sits in the cache directory next to the SQLite database and is rebuilt when the embedding model changes. Small corpora fall back to brute force.

## Tuning
The parameters M, ef_construction and ef_search trade recall, build time, memory and latency. They are revisited in the HNSW tuning sessions; see the parameter cheat sheet."""),
    ("hnsw-parameters", "en", "HNSW parameters cheat sheet", ("hnsw", "tuning"), """## M
Number of links per node. Higher M improves recall and increases memory and build time. Typical values are 8 to 48.

## ef_construction
Size of the candidate list while building. Higher values give a better graph and a slower build. Values below 100 tend to make recall unstable.

## ef_search
Size of the candidate list at query time; must be at least k. It is the main knob for the recall/latency trade-off and can be changed without a rebuild.

## max_elements
Capacity of the index. Exceeding it raises an error; resize with headroom or rebuild.

## Measuring
Compare against brute force on the same queries and report recall@10 and p95 latency. Keep the keyword leg fixed so that only the vector side changes between runs."""),
    ("japanese-tokenizer", "ja", "日本語トークナイザ", ("tokenizer", "japanese", "fts"), """## 概要
キーワード検索（FTS）の日本語の分割には形態素解析器を使う。英語は空白で区切るだけでよいが、日本語は単語の境界が書かれていないため、どこで区切るかが検索の精度を大きく左右する。

## 選択肢
- SudachiPy の分割モード A / B / C（A が最も細かく、C が最も粗い）
- MeCab + UniDic
- 文字 bigram（辞書に依存しないが、ノイズが多い）

## よくある問題
- 複合語が細かく分かれすぎてヒットが多すぎる、または粗すぎて部分一致しない。
- 半角カナと全角カナ、長音記号、送り仮名の揺れ。
- 英語と日本語が混ざった語の扱い。

## 関連
ユーザー辞書の運用は別ページを参照。分割モードを変えたら全件の再インデックスが必要。

## 評価
分割の変更は、日本語の評価クエリでの nDCG@10 と、scripts/tokenize_diff.py で見た分割結果の差分の両方で判断する。数値だけを見ていると、特定の語で大きく悪化していることを見落としやすい。"""),
    ("user-dictionary", "ja", "ユーザー辞書の運用", ("tokenizer", "dictionary"), """## 目的
形態素解析器の辞書にない固有名詞や社内用語を登録し、検索で一語として扱われるようにする。

## 追加の基準
- 実際のメモに 3 回以上出てくる語に限る。
- 一般的な語は登録しない（分割が粗くなりすぎるため）。
- 製品名やライブラリ名は英字表記とカナ表記の両方を登録する。

## 手順
1. references/userdict.csv に行を追加する。品詞の列は決められた形式で書く。
2. 辞書をビルドし、scripts/tokenize_diff.py で分割結果の差分を確認する。
3. 全件を再インデックスする。
4. 評価クエリで nDCG@10 が下がっていないことを確かめる。

## 注意
品詞列の形式が古いと読み込み時にエラーになる。

## よくある質問
- 登録した語が効かない: 再インデックスをしていないことが多い。
- 何語まで登録してよいか: 上限はないが、数百語を超えたら棚卸しをする。
- 同じ語を別の品詞で登録してよいか: 避ける。分割結果が不安定になる。"""),
    ("embedding-models", "en", "Embedding models", ("embedding",), """## Role
The semantic leg embeds each chunk and each query with a sentence-embedding model and ranks chunks by cosine similarity. The model must handle Japanese and English, including questions in one language over notes in the other.

## Requirements
- A permissive licence.
- Runs on a laptop CPU; a first index of a few thousand notes should finish in about a minute.
- A download size that first-time users accept.

## Candidates considered
Multilingual E5 (small, base), BGE-M3, the Ruri v3 family, GTE multilingual, granite multilingual and static Japanese embeddings. Which one is the default is decided in the embedding model evaluation sessions.

## Changing the model
Changing the model invalidates the HNSW index and the embedding cache; both are rebuilt on the next run."""),
    ("embedding-evaluation", "ja", "埋め込みモデルの評価方法", ("embedding", "evaluation"), """## 方針
埋め込みモデルを比べるときは、キーワード側と融合の設定を固定し、ハイブリッド検索全体の nDCG@10 で評価する。モデル単体のベンチマークの順位は、このプロジェクトのメモでの順位と一致しないことが多い。

## 使うデータセット
- JSQuAD のサブセット（日本語の質問と段落）
- package-notes（npm パッケージの README）
- ja-questions-en-notes / en-questions-ja-notes（クロスリンガル）

## 手順
1. 候補モデルで同じチャンクを埋め込む。
2. scripts/eval.py で各データセットを評価する。
3. nDCG@10、エンコード速度、ダウンロードサイズを表にまとめる。
4. 評価セッションのメモに結果と採用したモデルを書く。

## 注意
速度は初回のモデル読み込みを除いて測る。乱数シードは固定する。

## 結果の残し方
結果はセッションメモに表で残し、採用したモデルとその理由を書く。採用しなかったモデルも、次に評価するときの比較対象として記録しておく。"""),
    ("oncall", "en", "On-call rotation", ("oncall",), """## Rotation
One primary and one secondary, each for a week, handing over on Monday morning at the on-call handover. The rotation calendar lives in the shared calendar; swaps are fine if both people agree and update it.

## Expectations
- Acknowledge a page within 15 minutes; the secondary takes over if the primary does not.
- Follow the runbook linked from the alert. If there is none, write one afterwards.
- Log every page with a one-line summary in the incident log.

## Alerts
Noisy alerts may be silenced temporarily at the handover, with an end condition. Permanent threshold changes go through the infra weekly.

## Compensation
Night-time pages are counted and compensated according to the HR policy."""),
    ("oncall-handover-checklist", "en", "On-call handover checklist", ("oncall", "handover", "checklist"), """## Before the handover
- Outgoing primary: list the pages of the week, open incidents, and anything silenced.
- Incoming primary: check that the paging app, VPN and dashboards work from your phone.

## During the handover
1. Walk through last week's pages; mark which ones needed action.
2. Decide what to do with noisy alerts: tune, silence with an end condition, or keep.
3. Hand over open incidents with their current owner and next step.
4. Confirm who is primary and who is secondary.

## After the handover
- Post the notes in the on-call channel.
- Update the rotation calendar if anything changed.
- File issues for runbooks that turned out to be wrong."""),
    ("sprint-process", "ja", "スプリントの進め方", ("sprint", "process"), """## 期間
スプリントは 2 週間。隔週の月曜にスプリント計画を行い、最終日の金曜にデモとレトロスペクティブを行う。

## スプリント計画
- 前のスプリントからの持ち越しを確認する。
- 休暇を考慮してキャパシティ（ポイント）を見積もる。
- スプリントゴールを一文で決める。
- バックログの上位からストーリーを選び、コミットするポイントを決める。

## 見積もり
ストーリーポイントはフィボナッチ数で見積もる。13 以上のものは分割する。スパイクには上限を設ける。

## 途中での変更
スプリントの途中でゴールに関係しない依頼が来た場合は、原則として次のスプリントに回す。緊急のバグ対応のためにバッファを取っておく。

## レトロスペクティブ
スプリントの最終日に、うまくいったこと、うまくいかなかったこと、次に試すことを出し合う。出てきた改善案は一つか二つに絞り、次のスプリント計画で担当を決める。"""),
    ("postmortem", "ja", "障害振り返り（ポストモーテム）の進め方", ("postmortem", "incident"), """## 目的
障害振り返りは、同じ種類の障害を繰り返さないための仕組みを決める場である。個人の責任は問わない。

## 対象
重大度が SEV3 以上の障害、またはユーザーへの影響が 10 分を超えた障害は、原則として 1 週間以内に振り返りを行う。

## 議事録に書くこと
- 概要と影響時間、重大度
- タイムライン（検知、一次対応、暫定対応、復旧）
- 根本原因
- 再発防止策と担当者

## 再発防止策の考え方
人が気をつけることではなく、仕組みで防げる対策を優先する。監視の追加、自動化、手順書の整備などが典型である。

## 事例一覧
過去の振り返りはこのページの下に追記していく。

## 進行役
進行役は当事者以外から選ぶ。タイムラインはチャットのログと監視の記録から事前に起こしておき、会議では事実の確認と原因の深掘りに時間を使う。"""),
    ("incident-severity", "en", "Incident severity levels", ("incident", "severity"), """## SEV1
Search is down or data is lost for all users. Page everyone on the rotation, open a status page entry immediately, and hold a postmortem within three days.

## SEV2
A major feature is broken or badly degraded for many users, or a security issue is suspected. Page the primary and the secondary; status page within 30 minutes; postmortem within a week.

## SEV3
A minor feature is broken or a small group of users is affected, with a workaround available. Handled by the primary during working hours; a postmortem is held if the impact lasted more than 10 minutes.

## SEV4
Cosmetic problems or issues with no user impact. File an issue.

## Choosing a level
When in doubt, pick the higher severity; it can be lowered later."""),
    ("dependency-policy", "en", "Dependency upgrade policy", ("dependencies", "policy"), """## Cadence
Dependencies are reviewed once a week in the dependency upgrade session. Security fixes are applied as soon as they are published, outside the weekly pass if necessary.

## Rules
- Minor and patch upgrades are grouped into one PR; each major upgrade gets its own.
- Every upgrade must pass the full test suite on Linux, macOS and Windows.
- Upgrades that force users to re-download a model wait for a release window.
- A pinned package is listed in the tracking issue with the reason and the condition for unpinning.

## Supported versions
The lowest supported version of each direct dependency is tested in a separate CI job, so that users on older environments are not broken silently.

## Tools
The outdated report is produced by the CI job; the lock file is regenerated from scratch when in doubt."""),
    ("design-review", "en", "Design review process", ("design", "review", "process"), """## When
A design review is held every other Wednesday for changes that affect the storage format, the public CLI or MCP interface, or performance in a way users will notice.

## Preparation
The author writes a design doc with context, at least two options, their trade-offs and a recommendation, and shares it two days before the meeting. Reviewers comment in the doc first.

## The meeting
The author presents briefly; the time is spent on open questions. The outcome is one of: accept an option, accept with conditions, or ask for another round.

## After
The decision and the rejected alternatives are recorded in the design doc's log. Backward compatibility with existing memories directories is a hard requirement unless a migration is provided."""),
    ("design-doc-template", "ja", "設計ドキュメントのテンプレート", ("design", "template"), """## 背景
何が問題で、なぜ今それを解決する必要があるのかを書く。関連する issue や過去の議論へのリンクを付ける。

## 目標と非目標
この設計で達成すること、あえて扱わないことを箇条書きにする。

## 案
少なくとも 2 つの案を書く。それぞれについて、仕組み、利点、欠点、既存の memories ディレクトリからの移行方法を説明する。

## 比較
性能（クエリあたりの時間、ディスク使用量）、実装の手間、テストのしやすさ、利用者への影響を表で比べる。

## 推奨
どの案を推すか、その理由を書く。

## 決定の記録
設計レビューで決まったことと、採用しなかった案、その理由をここに追記する。

## 書き方のコツ
結論を先に書き、読み手が最初の段落だけで何を決めたいのかが分かるようにする。図は一枚で十分なことが多い。レビューの前に、影響を受けるチームに目を通してもらうとよい。"""),
    ("restore-drill", "ja", "バックアップ復元訓練", ("backup", "drill", "runbook"), """## 目的
バックアップが実際に復元できること、手順書だけで作業できること、目標 RTO 内に収まることを確かめる。訓練は月に一度、第 2 水曜に行う。

## 手順
1. 検証用のアカウントで、指定した時点のスナップショットを選ぶ。
2. 検証環境に DB とインデックスを復元する。
3. 行数の差分チェックを行う。
4. 評価用クエリを流し、検索結果が本番と一致するか確かめる。
5. 所要時間と詰まった箇所を記録する。

## ルール
- 担当は毎回入れ替え、できるだけ手順書を初めて読む人が行う。
- 見つかった問題は手順書に反映し、結果をインフラ定例で報告する。
- 暗号鍵の保管場所は別ページで管理する。

## よくある問題
手順書のコマンドが古い、検証環境のディスクが足りない、鍵の保管場所を知っている人が限られている、といった問題が過去の訓練で見つかっている。"""),
    ("glossary", "en", "Glossary / 用語集", ("glossary",), """## Search
- **Hybrid search / ハイブリッド検索**: keyword (FTS) and semantic (embedding) results fused into one ranking.
- **Keyword leg / キーワード側**: the full-text search part; Japanese text goes through the tokenizer.
- **Semantic leg / 意味検索側**: embeddings searched through the HNSW index.
- **nDCG@10, recall@10**: ranking quality measures used in evaluations.

## Meetings
- **週次リリース手順ミーティング / weekly release meeting**: weekly check of the release runbook and parameters.
- **インフラ定例 / infra weekly**: weekly infrastructure meeting (cost, alerts, backups).
- **On-call handover / オンコール引き継ぎ**: Monday handover of the pager.
- **障害振り返り / postmortem**: blameless review after an incident.
- **設計レビュー / design review**: biweekly review of design docs.
- **スプリント計画 / sprint planning**: start of each two-week sprint."""),
]


# ---------------------------------------------------------------- records

@dataclass
class Record:
    path: str
    title: str
    text: str
    frontmatter: dict
    topic: str | None  # recurring topic key; None for one-off records
    lang: str
    day: date | None  # None for wiki pages


def fill(template: str, slots: dict, notes: list[str], lang: str, rng: random.Random) -> str:
    """The template with as few optional sentences as make it MIN_CHARS long (at least one or two)."""
    order = rng.sample(notes, len(notes))
    joiner = "" if lang == "ja" else " "
    for k in range(rng.randint(1, 2), len(order) + 1):
        text = template.format(notes=joiner.join(order[:k]), **slots)
        if len(text) >= MIN_CHARS:
            break
    return text


def session(day: date, rng: random.Random, hosts: list[str], title: str, project: str, tags, text: str, lang: str,
            topic: str | None) -> Record:
    start = datetime.combine(day, time(rng.randint(9, 19), rng.randrange(60), rng.randrange(60)), JST)
    minutes = rng.randint(15, 150)  # ends by 21:30, on the same day as the folder
    end = start + timedelta(minutes=minutes)
    hexes = f"{rng.getrandbits(128):032x}"
    variant = "89ab"[int(hexes[16], 16) % 4]  # shaped like a random (version 4) UUID
    session_id = "-".join((hexes[:8], hexes[8:12], "4" + hexes[13:16], variant + hexes[17:20], hexes[20:]))
    path = f"raw/session/{day.isoformat()}/{start:%H%M%S}_{rng.choice(hosts)}_{hexes[:8]}.md"
    frontmatter = {"kind": "session", "title": title, "project": project, "session_id": session_id,
                   "started_at": start.isoformat(), "ended_at": end.isoformat(), "duration_minutes": minutes,
                   "tags": list(tags)}
    return Record(path, title, text, frontmatter, topic, lang, day)


def minutes(day: date, rng: random.Random, hour: int, slug: str, title: str, project: str, tags, attendees,
            text: str, lang: str, topic: str | None) -> Record:
    saved = time(hour, rng.randint(30, 59), rng.randrange(60))  # written up at the end of the meeting
    path = f"raw/minutes/{day.isoformat()}/{saved:%H%M%S}_{slug}.md"
    frontmatter = {"kind": "minutes", "title": title, "date": day.isoformat(), "attendees": list(attendees),
                   "tags": list(tags), "project": project}
    return Record(path, title, text, frontmatter, topic, lang, day)


def topic_records(topic: Topic, start: date, today: date, seed: int, hosts: list[str]) -> list[Record]:
    rng = random.Random(f"{seed}:{topic.key}")  # one stream per topic: topics do not shift each other
    kind, *args = topic.cadence
    records, previous = [], None
    for i, day in enumerate(SCHEDULES[kind](start, today, rng, *args)):
        for _ in range(20):  # same agenda, new decisions: redraw until every distinct slot changed
            slots = topic.slots(rng, i)
            if previous is None or all(slots[k] != previous[k] for k in topic.distinct):
                break
        previous = slots
        lang = rng.choice(topic.langs)
        if "dec" in slots:  # embedding evaluation: decisions and next steps exist in both languages
            for code in ("ja", "en"):
                slots[f"decision_{code}"] = EMBED_DECISIONS[code][slots["dec"]]
                slots[f"next1_{code}"], slots[f"next2_{code}"] = (EMBED_NEXT[code][n] for n in slots["nxt"])
        people = slots.get("attendees", [])
        slots["attendees_text"] = ("、" if lang == "ja" else ", ").join(people)
        text = fill(topic.bodies[lang], slots, topic.notes[lang], lang, rng)
        title = topic.title.format(**slots)
        if topic.kind == "session":
            records.append(session(day, rng, hosts, title, topic.project, topic.tags, text, lang, topic.key))
        else:
            records.append(minutes(day, rng, topic.hour, topic.slug, title, topic.project, topic.tags, people, text,
                                   lang, topic.key))
    return records


def noise_records(start: date, today: date, seed: int, hosts: list[str]) -> list[Record]:
    rng = random.Random(f"{seed}:noise")
    span = (today - start).days
    records = []
    combos = [(c, a) for c in COMPONENTS for a in ACTIONS]
    for comp, action in rng.sample(combos, 64):
        lang = rng.choice(("ja", "en"))
        cause = rng.choice(CAUSES)
        values = dict(comp_ja=comp[0], comp_en=comp[1], issue=rng.randint(40, 480), cause_ja=cause[0],
                      cause_en=cause[1], tests=rng.randint(3, 25), files=rng.randint(2, 9),
                      cov_a=(cov := rng.randint(35, 70)), cov_b=cov + rng.randint(5, 25),
                      ms_a=(ms := rng.randint(200, 3000)), ms_b=ms // rng.randint(2, 6))
        decision = rng.choice(NOISE_DECISIONS)
        slots = dict(para=action[2 if lang == "ja" else 3].format(**values), about=comp[2 if lang == "ja" else 3],
                     files="\n".join(f"- `{f}`" for f in rng.sample(comp[4], rng.randint(2, 3))),
                     decision_ja=decision[0], decision_en=decision[1])
        text = fill(NOISE_SESSION[lang], slots, GENERIC_NOTES[lang], lang, rng)
        title = f"{comp[0]}の{action[0]}" if lang == "ja" else f"{comp[1]}: {action[1]}"
        day = start + timedelta(rng.randint(0, span))
        tags = ("maintenance", action[1].split()[0])
        records.append(session(day, rng, hosts, title, "memory-search", tags, text, lang, None))
    for slug, lang, title, tags, summary, points, decisions, steps in MEETINGS:
        people = rng.sample(JA_NAMES if lang == "ja" else EN_NAMES, 2 if slug == "1on1" else 4)
        values = {"a": people[1], "k": rng.randint(2, 9)}
        slots = {"summary": summary.format(**values), "points": "".join(f"- {p}\n" for p in points),
                 "decisions": "".join(f"- {d}\n" for d in decisions),
                 "news": "".join(f"- {n}\n" for n in rng.sample(ANNOUNCEMENTS[lang], 4 if lang == "ja" else 2)),
                 "attendees_text": ("、" if lang == "ja" else ", ").join(people),
                 "steps": "".join(f"- [ ] {people[0]}: {s}\n" for s in steps)}
        text = fill(MEETING_TEMPLATE[lang], slots, MEETING_NOTES[lang], lang, rng)
        day = start + timedelta(rng.randint(0, span))
        records.append(minutes(day, rng, rng.randint(10, 17), slug, title.format(**values), "team", tags, people,
                               text, lang, None))
    return records


MEETING_TEMPLATE = TABLES["MEETING_TEMPLATE"]
ANNOUNCEMENTS = TABLES["ANNOUNCEMENTS"]  # the housekeeping items every meeting opens with
MEETING_NOTES = TABLES["MEETING_NOTES"]


def wiki_records() -> list[Record]:
    records = []
    for slug, lang, title, tags, body in WIKI:
        records.append(Record(f"wiki/{slug}.md", title, body + WIKI_FOOTER[lang],
                              {"title": title, "tags": list(tags)}, None, lang, None))
    return records


# ---------------------------------------------------------------- questions

def make_questions(records: list[Record], today: date, start: date, seed: int) -> tuple[list[dict], Counter]:
    """Questions with their answers; the Counter holds, per kind, the proposals dropped because the
    window of their expression held zero or several records of the topic."""
    rng = random.Random(f"{seed}:questions")
    by_topic = {t.key: [r for r in records if r.topic == t.key] for t in TOPICS}
    got, failures, used, dropped = Counter(), Counter(), Counter(), Counter()
    questions, texts, rejected = [], set(), set()  # rejected: (kind, path, args) already found not unique
    while len(questions) < N_QUESTIONS:
        open_kinds = [k for k in TARGETS if failures[k] < MAX_FAILURES]
        if not open_kinds:
            break
        kind = max(open_kinds, key=lambda k: (TARGETS[k] - got[k]) / TARGETS[k])  # furthest below its share
        # what this kind can say: records it can name the date of, with their expressions
        options = [(t, r, args) for t in TOPICS for r in by_topic[t.key]
                   if used[r.path] < MAX_PER_RECORD and used[r.path, kind] < MAX_PER_RECORD_KIND
                   and (args := BUILD[kind](r.day, today, rng)) is not None and (kind, r.path, args) not in rejected]
        if not options:
            failures[kind] = MAX_FAILURES  # e.g. no record today: nothing to ask with this kind
            continue
        topic = rng.choice(sorted({t.key for t, _, _ in options}))  # topics evenly, not by record count
        options = [o for o in options if o[0].key == topic]
        least = min(used[r.path] for _, r, _ in options)
        topic, record, args = rng.choice([o for o in options if used[o[1].path] == least])  # spread answers
        first, last = RESOLVE[kind](args, today)
        assert first <= record.day <= last, (kind, args, record.day)  # BUILD and RESOLVE must agree
        if first < start:  # the window reaches before the generated span, where siblings are missing
            rejected.add((kind, record.path, args))
            failures[kind] += 1
            continue
        if [r for r in by_topic[topic.key] if first <= r.day <= last] != [record]:
            rejected.add((kind, record.path, args))
            dropped[kind] += 1  # several records of the topic in the window: the date does not decide
            failures[kind] += 1
            continue
        lang = "ja" if sum(q["lang"] == "ja" for q in questions) * 2 <= len(questions) else "en"
        when = render((kind, args), lang, rng)
        text = rng.choice(topic.questions[lang]).format(when=when)
        if text in texts:
            failures[kind] += 1
            continue
        texts.add(text)
        used[record.path] += 1
        used[record.path, kind] += 1
        got[kind] += 1
        questions.append({"text": text, "lang": lang, "expression": when, "kind": kind, "family": FAMILY[kind],
                          "window": {"start": first.isoformat(), "end": last.isoformat()}, "topic": topic.key,
                          "answer": record.path})
    return questions, dropped


# ---------------------------------------------------------------- output

def generate(today: date, seed: int, days: int) -> tuple[list[Record], list[dict], Counter]:
    start = today - timedelta(days - 1)
    hosts_rng = random.Random(f"{seed}:hosts")
    hosts = [f"{hosts_rng.getrandbits(32):08x}" for _ in range(3)]  # a few machines the sessions ran on
    records = [r for t in TOPICS for r in topic_records(t, start, today, seed, hosts)]
    records += noise_records(start, today, seed, hosts) + wiki_records()
    records.sort(key=lambda r: r.path)
    paths = [r.path for r in records]
    assert len(set(paths)) == len(paths), "two records at one path"
    for r in records:
        assert MIN_CHARS <= len(r.text) <= MAX_CHARS, (r.path, len(r.text))
    questions, dropped = make_questions(records, today, start, seed)
    return records, questions, dropped


def write(out: Path, today: date, seed: int, days: int, records: list[Record], questions: list[dict],
          dropped: Counter) -> dict:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    ids = {r.path: f"m{n:04d}" for n, r in enumerate(records, 1)}
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            metadata = {"path": r.path, "frontmatter": r.frontmatter, "topic": r.topic, "lang": r.lang}
            f.write(json.dumps({"_id": ids[r.path], "title": r.title, "text": r.text, "metadata": metadata},
                               ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f, open(out / "qrels" / "test.tsv", "w") as q:
        q.write("query-id\tcorpus-id\tscore\n")
        for n, item in enumerate(questions, 1):
            metadata = {"today": today.isoformat(), "lang": item["lang"], "expression": item["expression"],
                        "kind": item["kind"], "family": item["family"], "window": item["window"],
                        "topic": item["topic"]}
            f.write(json.dumps({"_id": f"q{n:04d}", "text": item["text"], "metadata": metadata},
                               ensure_ascii=False) + "\n")
            q.write(f"q{n:04d}\t{ids[item['answer']]}\t1\n")
    counts = {
        "records": len(records),
        "records by kind": Counter(r.frontmatter.get("kind", "wiki") for r in records),
        "records by language": Counter(r.lang for r in records),
        "recurring records": sum(r.topic is not None for r in records),
        "questions": len(questions),
        "questions by language": Counter(q["lang"] for q in questions),
        "questions by family": Counter(q["family"] for q in questions),
        "questions by kind": Counter(q["kind"] for q in questions),
        "dropped (window not unique)": sum(dropped.values()),
    }
    (out / "README.md").write_text(readme(today, seed, days, counts), encoding="utf-8")
    return counts


def table(counter: Counter) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def readme(today: date, seed: int, days: int, counts: dict) -> str:
    topics = "\n".join(f"| `{t.key}` | {t.title.format(n='N')} | {t.kind} | {' / '.join(t.langs)} | "
                       f"{CADENCE_TEXT[t.cadence[0]](*t.cadence[1:])} |" for t in TOPICS)
    lines = "\n".join(f"- {name}: {table(v) if isinstance(v, Counter) else v}" for name, v in counts.items())
    return f"""# Time-bound questions over recurring notes

Generated by `time_questions.py` for **today = {today.isoformat()}** (seed {seed}, {days} days:
{(today - timedelta(days - 1)).isoformat()} .. {today.isoformat()}). Regenerate rather than commit: every date
is relative to today.

Recurring meetings and sessions share their title and wording and differ only in their decisions,
so each question ("先週のリリース手順の打ち合わせで何を決めた?", "What error came up in the HNSW tuning
session 3 days ago?") names a topic and a time, never the decision: only the date tells the answer
from its siblings. Each question has exactly one relevant record, and the generator checked that
the window its time expression means holds no other record of the same topic. Undated wiki pages
on the same topics and one-off sessions and meetings are distractors.

## Counts

{lines}

## Layout (BEIR)

- `corpus.jsonl`: `_id`, `title`, `text` (Markdown body), `metadata.path` (where the record lives in a
  memories directory: `raw/session/YYYY-MM-DD/HHMMSS_<host8>_<sid8>.md`, `raw/minutes/YYYY-MM-DD/HHMMSS_<slug>.md`,
  `wiki/<slug>.md`), `metadata.frontmatter`, `metadata.topic` (recurring topic, null otherwise), `metadata.lang`.
- `queries.jsonl`: `_id`, `text`, `metadata.today`, `metadata.lang`, `metadata.expression` (the time words as
  they appear in the text), `metadata.kind` / `family`, `metadata.window` (`start`, `end`, inclusive: what a
  time parser should produce), `metadata.topic`.
- `qrels/test.tsv`: one row per question, score 1.

## Topics

| key | title | kind | language | cadence |
|---|---|---|---|---|
{topics}

## Time expression semantics (today = {today.isoformat()})

- A week is Monday–Sunday. 今週 / this week = this Monday .. today; 先週 / last week = the previous Monday–Sunday;
  先々週 / the week before last; N週間前 / N weeks ago = the week holding today − 7N days.
- 今日, 昨日, 一昨日, N日前 / N days ago: that single day.
- 今月 / this month = the 1st .. today; 先月 / last month and Nか月前 / N months ago: that calendar month.
- A bare weekday (月曜 / on Monday): the most recent such day on or before today; この前の月曜 / last Monday:
  the most recent strictly before today; 先週の金曜 / on Friday last week: the Friday of last week.
- Absolute dates and months without a year (11月20日, on Nov 20, 11月, in November) mean the most recent
  one on or before today. Ranges: 11月20日〜22日 / between Nov 20 and Nov 22; 月曜から / since Monday =
  that bare weekday .. today; 先週から / since last week = last week's Monday .. today.
- Every window starts inside the generated span, so no sibling is missing because it fell before it.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--today", type=date.fromisoformat, default=date.today(), help="YYYY-MM-DD (default: today)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--days", type=int, default=90, help="span of dated records, ending today (default 90)")
    args = parser.parse_args(argv)
    if args.days < 35:
        parser.error("--days must be at least 35 (month windows need room)")
    records, questions, dropped = generate(args.today, args.seed, args.days)
    counts = write(args.out_dir, args.today, args.seed, args.days, records, questions, dropped)
    for name, value in counts.items():
        print(f"{name}: {table(value) if isinstance(value, Counter) else value}")
    print(f"dropped by kind: {table(dropped) or 'none'}")
    print(f"wrote {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
