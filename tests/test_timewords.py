"""Table-driven tests for memory_search.search.timewords.find_time: the time words of a query, and their window.

Each row: (query, today, since, until, text, phrases). Dates are ISO strings; None for an open
end. A row whose phrases is None expects no window at all (find_time returns None). phrases is
one string when the query has one phrase, a tuple when it has several.
"""

from __future__ import annotations

import datetime
import random

import pytest

from memory_search.search.timewords import TimeWindow, find_time

T = "2026-12-01"  # a Tuesday: this week 11-30..12-01, last week 11-23..11-29
NOV20 = "2026-11-20"  # a Friday in the middle of a month
JAN = "2026-01-05"  # a Monday just after New Year: last week, last month and December cross the year
MAR = "2026-03-01"  # a Sunday, the day after 2026-02-28
MARWED = "2026-03-04"  # a Wednesday whose last week runs Feb 23..Mar 1
LEAP = "2028-02-29"  # a Tuesday, leap day
NONE = None  # expected: no window

ROWS = [
    # ---------------------------------------------------------------- Japanese, relative
    ("先週のリリース手順の打ち合わせで何を決めた?", T, "2026-11-23", "2026-11-29",
     "リリース手順の打ち合わせで何を決めた?", "先週"),
    ("今日の作業", T, "2026-12-01", "2026-12-01", "作業", "今日"),
    ("この前の火曜のセッションのエラー", T, "2026-11-24", "2026-11-24", "セッションのエラー", "この前の火曜"),
    ("前回の月曜日の定例", T, "2026-11-30", "2026-11-30", "定例", "前回の月曜日"),
    ("本日の議事録", T, "2026-12-01", "2026-12-01", "議事録", "本日"),
    ("昨日は何をした?", T, "2026-11-30", "2026-11-30", "何をした?", "昨日"),
    ("昨日にデプロイした", T, "2026-11-30", "2026-11-30", "デプロイした", "昨日"),
    ("一昨日のデプロイ", T, "2026-11-29", "2026-11-29", "デプロイ", "一昨日"),
    ("おとといの障害", T, "2026-11-29", "2026-11-29", "障害", "おととい"),
    ("今週のタスク", T, "2026-11-30", "2026-12-01", "タスク", "今週"),
    ("先々週の振り返り", T, "2026-11-16", "2026-11-22", "振り返り", "先々週"),
    ("今月の売上", T, "2026-12-01", "2026-12-01", "売上", "今月"),
    ("今月の売上", NOV20, "2026-11-01", "2026-11-20", "売上", "今月"),
    ("先月の障害報告", T, "2026-11-01", "2026-11-30", "障害報告", "先月"),
    ("先々月", T, "2026-10-01", "2026-10-31", "", "先々月"),
    ("3日前の障害", T, "2026-11-28", "2026-11-28", "障害", "3日前"),
    ("３日前", T, "2026-11-28", "2026-11-28", "", "３日前"),
    ("三日前に話したこと", T, "2026-11-28", "2026-11-28", "話したこと", "三日前"),
    ("十日前のログ", T, "2026-11-21", "2026-11-21", "ログ", "十日前"),
    ("2週間前のメモ", T, "2026-11-16", "2026-11-22", "メモ", "2週間前"),
    ("1週前", T, "2026-11-23", "2026-11-29", "", "1週前"),
    ("3か月前の設計", T, "2026-09-01", "2026-09-30", "設計", "3か月前"),
    ("1ヶ月前", T, "2026-11-01", "2026-11-30", "", "1ヶ月前"),
    ("2カ月前", T, "2026-10-01", "2026-10-31", "", "2カ月前"),
    ("6箇月前", T, "2026-06-01", "2026-06-30", "", "6箇月前"),
    ("1年前の今ごろ", T, "2025-01-01", "2025-12-31", "今ごろ", "1年前"),
    ("今年の目標", T, "2026-01-01", "2026-12-01", "目標", "今年"),
    ("去年の振り返り", T, "2025-01-01", "2025-12-31", "振り返り", "去年"),
    ("昨年のKPI", T, "2025-01-01", "2025-12-31", "KPI", "昨年"),
    ("一昨年", T, "2024-01-01", "2024-12-31", "", "一昨年"),
    ("月曜の定例", T, "2026-11-30", "2026-11-30", "定例", "月曜"),
    ("火曜日に決めた", T, "2026-12-01", "2026-12-01", "決めた", "火曜日"),
    ("水曜", T, "2026-11-25", "2026-11-25", "", "水曜"),
    ("木曜日", T, "2026-11-26", "2026-11-26", "", "木曜日"),
    ("金曜の議事録", T, "2026-11-27", "2026-11-27", "議事録", "金曜"),
    ("土曜日", T, "2026-11-28", "2026-11-28", "", "土曜日"),
    ("日曜", T, "2026-11-29", "2026-11-29", "", "日曜"),
    ("先週の金曜の議事録", T, "2026-11-27", "2026-11-27", "議事録", "先週の金曜"),
    ("先週の金曜日", T, "2026-11-27", "2026-11-27", "", "先週の金曜日"),
    ("先週金曜", T, "2026-11-27", "2026-11-27", "", "先週金曜"),
    ("今週の月曜に", T, "2026-11-30", "2026-11-30", "", "今週の月曜"),
    ("先週末のリリース", T, "2026-11-28", "2026-11-29", "リリース", "先週末"),
    ("今週末", T, "2026-12-05", "2026-12-06", "", "今週末"),  # in the future: still returned
    ("先週、何を決めた?", T, "2026-11-23", "2026-11-29", "何を決めた?", "先週"),
    ("リリース 先週 手順", T, "2026-11-23", "2026-11-29", "リリース 手順", "先週"),
    ("リリース日は 2026-11-27 (木) で確定?", T, "2026-11-27", "2026-11-27", "リリース日は確定?", "2026-11-27 (木)"),
    ("HNSW の件 10/14 まで", T, None, "2026-10-14", "HNSW の件", "10/14 まで"),
    ("今月はじめのリリース", T, "2026-12-01", "2026-12-01", "はじめのリリース", "今月"),
    ("11月頃の議事録", T, "2026-11-01", "2026-11-30", "議事録", "11月"),
    ("11月20日、21日の議事録", T, NOV20, "2026-11-21", "議事録", "11月20日、21日"),
    ("11月20日と22日", T, NOV20, "2026-11-22", "", "11月20日と22日"),
    ("2026年11月20日(金曜日)のメモ", T, NOV20, NOV20, "メモ", "2026年11月20日(金曜日)"),
    ("昨日と今日の作業", T, "2026-11-30", "2026-12-01", "作業", ("昨日", "今日")),
    ("先週と先々週", T, "2026-11-16", "2026-11-29", "", ("先週", "先々週")),
    # ---------------------------------------------------------------- Japanese, absolute
    ("11月の売上", T, "2026-11-01", "2026-11-30", "売上", "11月"),
    ("12月の予定", T, "2026-12-01", "2026-12-31", "予定", "12月"),
    ("1月のリリース", T, "2026-01-01", "2026-01-31", "リリース", "1月"),  # the most recent January
    ("11月20日の会議", T, NOV20, NOV20, "会議", "11月20日"),
    ("１１月２０日の会議", T, NOV20, NOV20, "会議", "１１月２０日"),
    ("11月20日(金)の議事録", T, NOV20, NOV20, "議事録", "11月20日(金)"),
    ("12月25日", T, "2025-12-25", "2025-12-25", "", "12月25日"),  # not yet this year: last year's
    ("2026年11月", T, "2026-11-01", "2026-11-30", "", "2026年11月"),
    ("2026年11月20日の議事録", T, NOV20, NOV20, "議事録", "2026年11月20日"),
    ("2025年12月24日", T, "2025-12-24", "2025-12-24", "", "2025年12月24日"),
    ("2026年の目標", T, "2026-01-01", "2026-12-31", "目標", "2026年"),
    ("去年の11月", T, "2025-11-01", "2025-11-30", "", "去年の11月"),
    ("先月の20日", T, NOV20, NOV20, "", "先月の20日"),
    # ---------------------------------------------------------------- numeric dates
    ("2026-11-20", T, NOV20, NOV20, "", "2026-11-20"),
    ("2026/11/20 の議事録", T, NOV20, NOV20, "議事録", "2026/11/20"),
    ("2026-11-20T10:00 deploy log", T, NOV20, NOV20, "deploy log", "2026-11-20T10:00"),
    ("2026-11 release", T, "2026-11-01", "2026-11-30", "release", "2026-11"),
    ("11/20の議事録", T, NOV20, NOV20, "議事録", "11/20"),
    ("11/20(金)", T, NOV20, NOV20, "", "11/20(金)"),
    ("notes from 11/20", T, NOV20, NOV20, "notes", "11/20"),
    ("11/20/2026", T, NOV20, NOV20, "", "11/20/2026"),
    ("12/31", JAN, "2025-12-31", "2025-12-31", "", "12/31"),
    # ---------------------------------------------------------------- English, relative
    ("what did we decide yesterday about X", T, "2026-11-30", "2026-11-30", "what did we decide about X", "yesterday"),
    ("Today", T, "2026-12-01", "2026-12-01", "", "Today"),
    ("today's standup notes", T, "2026-12-01", "2026-12-01", "standup notes", "today"),
    ("notes from yesterday's standup", T, "2026-11-30", "2026-11-30", "notes from standup", "yesterday"),
    ("what happened yesterday.", T, "2026-11-30", "2026-11-30", "what happened.", "yesterday"),
    ("what did we decide, yesterday?", T, "2026-11-30", "2026-11-30", "what did we decide?", "yesterday"),
    ("the day before yesterday", T, "2026-11-29", "2026-11-29", "", "the day before yesterday"),
    ("notes from the day before yesterday", T, "2026-11-29", "2026-11-29", "notes", "the day before yesterday"),
    ("this week", T, "2026-11-30", "2026-12-01", "", "this week"),
    ("Last week", T, "2026-11-23", "2026-11-29", "", "Last week"),
    ("notes from last week", T, "2026-11-23", "2026-11-29", "notes", "last week"),
    ("last weekのメモ", T, "2026-11-23", "2026-11-29", "メモ", "last week"),
    ("the week before last", T, "2026-11-16", "2026-11-22", "", "the week before last"),
    ("3 days ago", T, "2026-11-28", "2026-11-28", "", "3 days ago"),
    ("three days ago", T, "2026-11-28", "2026-11-28", "", "three days ago"),
    ("a couple of days ago", T, "2026-11-29", "2026-11-29", "", "a couple of days ago"),
    ("a week ago", T, "2026-11-23", "2026-11-29", "", "a week ago"),
    ("2 weeks ago", T, "2026-11-16", "2026-11-22", "", "2 weeks ago"),
    ("3 months ago", T, "2026-09-01", "2026-09-30", "", "3 months ago"),
    ("a month ago", T, "2026-11-01", "2026-11-30", "", "a month ago"),
    ("twelve months ago", T, "2025-12-01", "2025-12-31", "", "twelve months ago"),
    ("fourteen days ago", T, "2026-11-17", "2026-11-17", "", "fourteen days ago"),  # not "four" and a leftover
    ("a year ago", T, "2025-01-01", "2025-12-31", "", "a year ago"),
    ("last Monday", T, "2026-11-30", "2026-11-30", "", "last Monday"),
    ("last Tuesday", T, "2026-11-24", "2026-11-24", "", "last Tuesday"),  # today is Tuesday: a week ago
    ("on Monday we decided", T, "2026-11-30", "2026-11-30", "we decided", "Monday"),
    ("monday", T, "2026-11-30", "2026-11-30", "", "monday"),
    ("Tuesday", T, "2026-12-01", "2026-12-01", "", "Tuesday"),  # today counts
    ("what did we discuss on Wednesday?", T, "2026-11-25", "2026-11-25", "what did we discuss?", "Wednesday"),
    ("Thursday", T, "2026-11-26", "2026-11-26", "", "Thursday"),
    ("Friday", T, "2026-11-27", "2026-11-27", "", "Friday"),
    ("Saturday", T, "2026-11-28", "2026-11-28", "", "Saturday"),
    ("Sunday", T, "2026-11-29", "2026-11-29", "", "Sunday"),
    ("this Monday", T, "2026-11-30", "2026-11-30", "", "this Monday"),
    ("Friday last week", T, "2026-11-27", "2026-11-27", "", "Friday last week"),
    ("last weekend", T, "2026-11-28", "2026-11-29", "", "last weekend"),
    ("this month", T, "2026-12-01", "2026-12-01", "", "this month"),
    ("last month", T, "2026-11-01", "2026-11-30", "", "last month"),
    ("this year", T, "2026-01-01", "2026-12-01", "", "this year"),
    ("last year", T, "2025-01-01", "2025-12-31", "", "last year"),
    ("yesterday and today", T, "2026-11-30", "2026-12-01", "", ("yesterday", "today")),
    # ---------------------------------------------------------------- English, absolute
    ("November", T, "2026-11-01", "2026-11-30", "", "November"),
    ("in Nov", T, "2026-11-01", "2026-11-30", "", "Nov"),
    ("Nov. 20", T, NOV20, NOV20, "", "Nov. 20"),
    ("November 20", T, NOV20, NOV20, "", "November 20"),
    ("20 November", T, NOV20, NOV20, "", "20 November"),
    ("the 20th of November", T, NOV20, NOV20, "", "the 20th of November"),
    ("Friday, November 20", T, NOV20, NOV20, "", "Friday, November 20"),
    ("November 2026", T, "2026-11-01", "2026-11-30", "", "November 2026"),
    ("Nov 20 2026", T, NOV20, NOV20, "", "Nov 20 2026"),
    ("Nov 20, 2026 notes", T, NOV20, NOV20, "notes", "Nov 20, 2026"),
    ("Nov 20 - Dec 3 release", T, NOV20, "2026-12-03", "release", "Nov 20 - Dec 3"),
    ("Jan. 15", T, "2026-01-15", "2026-01-15", "", "Jan. 15"),
    ("Released in November 2026.", T, "2026-11-01", "2026-11-30", "Released.", "November 2026"),
    ("what is the plan for today", T, T, T, "what is the plan", "today"),
    ("What did we decide in the meeting last Friday?", T, "2026-11-27", "2026-11-27",
     "What did we decide in the meeting?", "last Friday"),
    ("meeting notes (Nov 20)", T, NOV20, NOV20, "meeting notes", "Nov 20"),
    ("December 24", T, "2025-12-24", "2025-12-24", "", "December 24"),
    ("March planning", T, "2026-03-01", "2026-03-31", "planning", "March"),
    ("in May", T, "2026-05-01", "2026-05-31", "", "May"),
    ("in may", T, "2026-05-01", "2026-05-31", "", "may"),
    ("may 5", T, "2026-05-05", "2026-05-05", "", "may 5"),
    ("last May", T, "2026-05-01", "2026-05-31", "", "last May"),
    ("this May", T, "2026-05-01", "2026-05-31", "", "this May"),
    ("last Nov", T, "2026-11-01", "2026-11-30", "", "last Nov"),
    ("in 2026", T, "2026-01-01", "2026-12-31", "", "2026"),
    # ---------------------------------------------------------------- ranges
    ("先週から", T, "2026-11-23", T, "", "先週から"),
    ("先週からの変更点", T, "2026-11-23", T, "変更点", "先週から"),
    ("11月20日から", T, NOV20, T, "", "11月20日から"),
    ("11月20日以降の変更", T, NOV20, T, "変更", "11月20日以降"),
    ("since Monday", T, "2026-11-30", T, "", "since Monday"),
    ("since November 20", T, NOV20, T, "", "since November 20"),
    ("changes since last week", T, "2026-11-23", T, "changes", "since last week"),
    ("since march", T, "2026-03-01", T, "", "since march"),
    ("after November 20", T, "2026-11-21", T, "", "after November 20"),
    ("11月20日〜22日の議事録", T, NOV20, "2026-11-22", "議事録", "11月20日〜22日"),
    ("11月20日～22日", T, NOV20, "2026-11-22", "", "11月20日～22日"),
    ("11月20日から22日までのログ", T, NOV20, "2026-11-22", "ログ", "11月20日から22日まで"),
    ("11/20-11/22", T, NOV20, "2026-11-22", "", "11/20-11/22"),
    ("November 20-22", T, NOV20, "2026-11-22", "", "November 20-22"),
    ("between Nov 20 and Nov 22", T, NOV20, "2026-11-22", "", "between Nov 20 and Nov 22"),
    ("between Nov 20 and 22", T, NOV20, "2026-11-22", "", "between Nov 20 and 22"),
    ("notes from Nov 20 to Nov 22", T, NOV20, "2026-11-22", "notes", "from Nov 20 to Nov 22"),
    ("11月20日までのタスク", T, None, NOV20, "タスク", "11月20日まで"),
    ("11月20日以前", T, None, NOV20, "", "11月20日以前"),
    ("11月20日より前", T, None, "2026-11-19", "", "11月20日より前"),
    ("until November 20", T, None, NOV20, "", "until November 20"),
    ("before November 20", T, None, "2026-11-19", "", "before November 20"),
    # how things stood then: told by anything up to its end
    ("how many dogs, as of September 2025?", T, None, "2025-09-30", "how many dogs?", "as of September 2025"),
    ("As of last week, the plan", T, None, "2026-11-29", "the plan", "As of last week"),
    ("2025年9月時点で犬は何匹", T, None, "2025-09-30", "犬は何匹", "2025年9月時点"),
    ("9月現在の進捗", T, None, "2026-09-30", "進捗", "9月現在"),
    ("現在の進捗", T, None, None, "現在の進捗", None),
    ("先週の月曜から水曜まで", T, "2026-11-23", "2026-11-25", "", "先週の月曜から水曜まで"),
    ("先週から今週まで", T, "2026-11-23", T, "", "先週から今週まで"),
    ("11月28日〜12月3日", T, "2026-11-28", "2026-12-03", "", "11月28日〜12月3日"),  # still running
    ("11月28日〜3日", T, "2026-11-28", "2026-12-03", "", "11月28日〜3日"),  # the day rolls into December
    ("12月から1月まで", T, "2026-12-01", "2027-01-31", "", "12月から1月まで"),
    ("12月から1月まで", JAN, "2025-12-01", "2026-01-31", "", "12月から1月まで"),
    ("from 2025 to 2026", T, "2025-01-01", "2026-12-31", "", "from 2025 to 2026"),
    # ---------------------------------------------------------------- across the new year
    ("先月", JAN, "2025-12-01", "2025-12-31", "", "先月"),
    ("last month", JAN, "2025-12-01", "2025-12-31", "", "last month"),
    ("12月", JAN, "2025-12-01", "2025-12-31", "", "12月"),
    ("December", JAN, "2025-12-01", "2025-12-31", "", "December"),
    ("1月", JAN, "2026-01-01", "2026-01-31", "", "1月"),
    ("先週", JAN, "2025-12-29", "2026-01-04", "", "先週"),
    ("last week", JAN, "2025-12-29", "2026-01-04", "", "last week"),
    ("先々週", JAN, "2025-12-22", "2025-12-28", "", "先々週"),
    ("今週", JAN, "2026-01-05", "2026-01-05", "", "今週"),
    ("昨日", JAN, "2026-01-04", "2026-01-04", "", "昨日"),
    ("yesterday", JAN, "2026-01-04", "2026-01-04", "", "yesterday"),
    ("今年", JAN, "2026-01-01", "2026-01-05", "", "今年"),
    ("去年", JAN, "2025-01-01", "2025-12-31", "", "去年"),
    ("2週間前", JAN, "2025-12-22", "2025-12-28", "", "2週間前"),
    ("1か月前", JAN, "2025-12-01", "2025-12-31", "", "1か月前"),
    ("3 months ago", JAN, "2025-10-01", "2025-10-31", "", "3 months ago"),
    ("last Monday", JAN, "2025-12-29", "2025-12-29", "", "last Monday"),  # today is Monday
    ("Monday", JAN, "2026-01-05", "2026-01-05", "", "Monday"),
    ("先週の金曜", JAN, "2026-01-02", "2026-01-02", "", "先週の金曜"),
    ("12月25日", JAN, "2025-12-25", "2025-12-25", "", "12月25日"),
    ("先月の20日", JAN, "2025-12-20", "2025-12-20", "", "先月の20日"),
    # ---------------------------------------------------------------- across February
    ("昨日", MAR, "2026-02-28", "2026-02-28", "", "昨日"),
    ("今週", MAR, "2026-02-23", "2026-03-01", "", "今週"),
    ("先週", MAR, "2026-02-16", "2026-02-22", "", "先週"),
    ("先月", MAR, "2026-02-01", "2026-02-28", "", "先月"),
    ("今月", MAR, "2026-03-01", "2026-03-01", "", "今月"),
    ("日曜", MAR, "2026-03-01", "2026-03-01", "", "日曜"),
    ("last Sunday", MAR, "2026-02-22", "2026-02-22", "", "last Sunday"),
    ("先週", MARWED, "2026-02-23", "2026-03-01", "", "先週"),
    ("先週末", MARWED, "2026-02-28", "2026-03-01", "", "先週末"),
    ("3日前", MARWED, "2026-03-01", "2026-03-01", "", "3日前"),
    # ---------------------------------------------------------------- leap year
    ("今日", LEAP, LEAP, LEAP, "", "今日"),
    ("2月29日", LEAP, LEAP, LEAP, "", "2月29日"),
    ("今月", LEAP, "2028-02-01", LEAP, "", "今月"),
    ("先月", LEAP, "2028-01-01", "2028-01-31", "", "先月"),
    ("1年前", LEAP, "2027-01-01", "2027-12-31", "", "1年前"),
    ("yesterday", LEAP, "2028-02-28", "2028-02-28", "", "yesterday"),
    ("February", LEAP, "2028-02-01", LEAP, "", "February"),
    ("2/29", "2029-03-01", LEAP, LEAP, "", "2/29"),  # the most recent February 29th
    ("先月", "2028-03-31", "2028-02-01", LEAP, "", "先月"),
    ("1か月前", "2028-03-31", "2028-02-01", LEAP, "", "1か月前"),
    # ---------------------------------------------------------------- no window
    ("", T, NONE, NONE, NONE, NONE),
    ("HNSW tuning", T, NONE, NONE, NONE, NONE),
    ("you may want to", T, NONE, NONE, NONE, NONE),
    ("May I ask about HNSW?", T, NONE, NONE, NONE, NONE),
    ("march forward with the plan", T, NONE, NONE, NONE, NONE),
    ("This may be a bug in HNSW", T, NONE, NONE, NONE, NONE),
    ("last march of the band", T, NONE, NONE, NONE, NONE),
    ("what did Jan say about HNSW", T, NONE, NONE, NONE, NONE),
    ("2026 roadmap", T, NONE, NONE, NONE, NONE),  # a bare year is just a number
    ("v11.20 release notes", T, NONE, NONE, NONE, NONE),
    ("Python 3.11の変更点", T, NONE, NONE, NONE, NONE),
    ("ERR_11_20 の原因", T, NONE, NONE, NONE, NONE),
    ("issue 1120", T, NONE, NONE, NONE, NONE),
    ("docs/11/20", T, NONE, NONE, NONE, NONE),
    ("BSD-2/3-Clause licence", T, NONE, NONE, NONE, NONE),
    ("1週間の振り返りテンプレート", T, NONE, NONE, NONE, NONE),  # a length, not a date
    ("3日間の研修", T, NONE, NONE, NONE, NONE),
    ("3日前後で終わる", T, NONE, NONE, NONE, NONE),  # "about three days", not "three days ago"
    ("数日前", T, NONE, NONE, NONE, NONE),
    ("先日の件", T, NONE, NONE, NONE, NONE),
    ("毎週月曜の定例", T, NONE, NONE, NONE, NONE),
    ("毎年11月の棚卸し", T, NONE, NONE, NONE, NONE),
    ("every Monday standup", T, NONE, NONE, NONE, NONE),
    ("Mondays are busy", T, NONE, NONE, NONE, NONE),
    ("Monday.com integration", T, NONE, NONE, NONE, NONE),
    ("today-notes.md", T, NONE, NONE, NONE, NONE),
    ("第1月曜の定例", T, NONE, NONE, NONE, NONE),
    ("todays", T, NONE, NONE, NONE, NONE),
    ("今年度の予算", T, NONE, NONE, NONE, NONE),  # fiscal year: left alone
    ("3月期決算", T, NONE, NONE, NONE, NONE),
    ("13月", T, NONE, NONE, NONE, NONE),
    ("2/30", T, NONE, NONE, NONE, NONE),
    # ---------------------------------------------------------------- letters case folding reads as ASCII
    # (?i) matches ſ to s, ı and İ to i, the Kelvin sign K to k: the words are read as their ASCII spelling.
    ("laſt week", T, "2026-11-23", "2026-11-29", "", "laſt week"),
    ("thıs week", T, "2026-11-30", "2026-12-01", "", "thıs week"),
    ("Auguſt", T, "2026-08-01", "2026-08-31", "", "Auguſt"),
    ("yeſterday", T, "2026-11-30", "2026-11-30", "", "yeſterday"),
    ("notes from laſt weeK", T, "2026-11-23", "2026-11-29", "notes", "laſt weeK"),
    ("ſix days ago", T, "2026-11-25", "2026-11-25", "", "ſix days ago"),
    ("THİS MONDAY", T, "2026-11-30", "2026-11-30", "", "THİS MONDAY"),
    ("ſince Monday", T, "2026-11-30", "2026-12-01", "", "ſince Monday"),  # since, not "before"
    ("ın 2025", T, "2025-01-01", "2025-12-31", "", "2025"),  # "in" cues the year
    # ---------------------------------------------------------------- told from a date: the days the words name
    ("what did we do the weekend before 4th October, 2026?", T, "2026-09-26", "2026-09-27", "what did we do?",
     "the weekend before 4th October, 2026"),
    ("the day after November 20", T, "2026-11-21", "2026-11-21", "", "the day after November 20"),
    ("the night before Nov 20", T, "2026-11-19", "2026-11-19", "", "the night before Nov 20"),
    ("notes from the week before 11/20", T, "2026-11-13", "2026-11-19", "notes", "the week before 11/20"),
    ("the week after Nov 20-22", T, "2026-11-23", "2026-11-29", "", "the week after Nov 20-22"),
    ("a few days before November 22", T, "2026-11-19", "2026-11-21", "", "a few days before November 22"),
    ("a couple of days after 11/20", T, "2026-11-21", "2026-11-22", "", "a couple of days after 11/20"),
    ("3 days after 2026-11-20", T, "2026-11-23", "2026-11-23", "", "3 days after 2026-11-20"),
    ("two weeks after June 1", T, "2026-06-12", "2026-06-18", "", "two weeks after June 1"),  # about June 15
    ("the month before May 2026", T, "2026-04-01", "2026-04-30", "", "the month before May 2026"),
    ("the year after 2020", T, "2021-01-01", "2021-12-31", "", "the year after 2020"),
    ("on the Monday before July 24, 2026 we met", T, "2026-07-20", "2026-07-20", "we met",
     "Monday before July 24, 2026"),
    ("the Saturday after October 24, 2026", T, "2026-10-31", "2026-10-31", "", "Saturday after October 24, 2026"),
    ("the first weekend of August 2026", T, "2026-08-01", "2026-08-02", "", "the first weekend of August 2026"),
    ("the last weekend of October 2026", T, "2026-10-31", "2026-11-01", "", "the last weekend of October 2026"),
    ("the first week of March", T, "2026-03-01", "2026-03-07", "", "the first week of March"),
    ("the second Tuesday of October", T, "2026-10-13", "2026-10-13", "", "the second Tuesday of October"),
    ("the last Friday of November", T, "2026-11-27", "2026-11-27", "", "the last Friday of November"),
    ("since the day after Nov 20", T, "2026-11-21", T, "", "since the day after Nov 20"),
    ("11月20日の前日の会議", T, "2026-11-19", "2026-11-19", "会議", "11月20日の前日"),
    ("11月20日の翌日", T, "2026-11-21", "2026-11-21", "", "11月20日の翌日"),
    ("11月20日の翌週の予定", T, "2026-11-23", "2026-11-29", "予定", "11月20日の翌週"),  # the calendar week
    ("10月7日の前の週末に何をした", T, "2026-10-03", "2026-10-04", "何をした", "10月7日の前の週末"),
    ("11月20日の3日前", T, "2026-11-17", "2026-11-17", "", "11月20日の3日前"),  # not three days before today
    ("11月20日の三日後のリリース", T, "2026-11-23", "2026-11-23", "リリース", "11月20日の三日後"),
    ("11月20日の前の金曜の会議", T, "2026-11-13", "2026-11-13", "会議", "11月20日の前の金曜"),
    ("11月20日の次の月曜日", T, "2026-11-23", "2026-11-23", "", "11月20日の次の月曜日"),  # not the next month
    ("10月20日の前月の売上", T, "2026-09-01", "2026-09-30", "売上", "10月20日の前月"),
    ("what did we ship the week of November 18?", T, "2026-11-16", "2026-11-22", "what did we ship?",
     "the week of November 18"),
    ("the weekend of Nov 18", T, "2026-11-21", "2026-11-22", "", "the weekend of Nov 18"),
    ("11月18日の週に何をした", T, "2026-11-16", "2026-11-22", "何をした", "11月18日の週"),
    ("11月18日の週次定例", T, "2026-11-18", "2026-11-18", "週次定例", "11月18日"),  # a weekly meeting, that day
    ("11月20日の翌週末", T, "2026-11-28", "2026-11-29", "", "11月20日の翌週末"),  # the next week's weekend
    ("11月20日の次の週末", T, "2026-11-21", "2026-11-22", "", "11月20日の次の週末"),
    ("11月20日の前日比の売上", T, "2026-11-20", "2026-11-20", "前日比の売上", "11月20日"),  # against the day before
    ("11月の前月比", T, "2026-11-01", "2026-11-30", "前月比", "11月"),
    # What is not told from a date keeps its earlier reading.
    ("notes before November 20", T, None, "2026-11-19", "notes", "before November 20"),
    ("the fifth Monday of February 2026", T, "2026-02-01", "2026-11-30", "the fifth", ("Monday", "February 2026")),
    # ---------------------------------------------------------------- days the calendar does not have
    # are not time words, and no part of them is read: they stay in the query as written.
    ("2025年2月29日の会議", T, NONE, NONE, NONE, NONE),
    ("2026年2月30日", T, NONE, NONE, NONE, NONE),
    ("2025-02-29の障害", T, NONE, NONE, NONE, NONE),
    ("Feb 29, 2025 notes", T, NONE, NONE, NONE, NONE),
    ("February 30 notes", T, NONE, NONE, NONE, NONE),
    ("the 31st of April", T, NONE, NONE, NONE, NONE),
    ("先月の31日", T, NONE, NONE, NONE, NONE),  # November has 30 days
    ("去年の2月29日", T, NONE, NONE, NONE, NONE),  # 2025 is no leap year
    ("2025年2月29日と先週の会議", T, "2026-11-23", "2026-11-29", "2025年2月29日と会議", "先週"),
    # A bare day after a date continues it, but not a number that starts the next expression.
    ("1月1日と1週前", T, "2026-01-01", "2026-11-29", "", ("1月1日", "1週前")),
    # A number that cannot be a day is not a date at all: the words around it read as they would alone.
    ("in March 32 tests failed", T, "2026-03-01", "2026-03-31", "32 tests failed", "March"),
    # A window may start after it ends: the words say so, and the search refuses it (test_a_search_reads_...).
    ("since 2030", T, "2030-01-01", T, "", "since 2030"),
]


def _date(value: str | None) -> datetime.date | None:
    return None if value is None else datetime.date.fromisoformat(value)


@pytest.mark.parametrize(
    "query, today, since, until, text, phrases",
    ROWS,
    ids=[f"{i:03d}-{row[0][:30]}@{row[1]}" for i, row in enumerate(ROWS)],
)
def test_find_time(query, today, since, until, text, phrases):
    got = find_time(query, _date(today))
    if phrases is None:
        assert got is None
        return
    if isinstance(phrases, str):
        phrases = (phrases,)
    assert got == TimeWindow(_date(since), _date(until), phrases, text)


# ------------------------------------------------------------------------- properties
# Any text is a query, so random and hostile text in both scripts must keep these promises:
#  - find_time never raises, and answers within a bounded time (Hypothesis' deadline, far above its cost);
#  - a window starts on or before its end, except an open range from a day after today ("since 2030",
#    "after today"), whose end is today: the one window the search refuses (retrieval.windowed);
#  - the text is the query minus its time expressions, precisely: each phrase is the query's own text at its
#    place, phrases in order and apart; the text loses a cut around each phrase (the phrase, the glue that only
#    attached it: in/on/of/the/for..., の/に/は/で/頃..., 's; and the list word between two phrases), and
#    nothing else, apart from tidying at the cuts and ends (whitespace, commas, emptied brackets, :;・).
#    So the text, whitespace read as spaces, is a subsequence of the query, and it equals the query without
#    its cuts once whitespace, commas, brackets and :;・ are set aside (_skeleton);
#  - reading only the rules a query's features allow finds what every rule would (the differential test).
# The seed (the run's, conftest.SEED) is printed; TIME_WORDS_SEED=N or MEMORIES_TEST_SEED=N replays a run,
# TIME_WORDS_EXAMPLES=N sets the run size.

import functools  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402

from conftest import SEED as RUN_SEED  # noqa: E402
from hypothesis import (  # noqa: E402
    HealthCheck,
    given,
    seed,
    settings,
    strategies as st,  # noqa: E402
)

from memory_search.search import timewords  # noqa: E402

SEED = int(os.environ.get("TIME_WORDS_SEED") or RUN_SEED)  # the run's seed unless told
EXAMPLES = int(os.environ.get("TIME_WORDS_EXAMPLES") or 300)
PROPERTY = settings(max_examples=EXAMPLES, deadline=datetime.timedelta(seconds=1), print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _seeded(test):
    """The test run from SEED, which it prints once (pytest shows it with a failure, or with -s)."""
    announced = []

    @functools.wraps(test)
    def announce(*args, **kwargs):
        if not announced:
            announced.append(print(f"{test.__name__}: seed {SEED}, {EXAMPLES} examples "
                                   f"(TIME_WORDS_SEED={SEED} replays them, TIME_WORDS_EXAMPLES=N sets how many)"))
        return test(*args, **kwargs)

    return seed(SEED)(announce)


_WORDS = [
    "先週", "から", "まで", "〜", "11月", "20日", "の", "月曜", "3日前", "三", "ヶ月前", "今年", "度",
    "last", "week", "since", "between", "and", "to", " ", "Nov", "20", "-", "/", "May", "may", "2026",
    "ago", "a couple of", "days", "(", ")", "、", ",", "'s", "T10:00", ".", "１", "２", "\x00", "\ud800",
    "the", "day", "weekend", "before", "after", "first", "last", "of", "Saturday", "a few", "前日", "翌週", "前の週末",
    "日後", "の週", "週次", "week of",
]
_LATIN = [
    "last", "this", "week", "weekend", "weeks", "month", "year", "day", "days", "ago", "since", "after", "before",
    "until", "till", "through", "between", "and", "or", "to", "from", "the", "of", "as of", "in", "on", "every",
    "today",
    "yesterday", "the day before yesterday", "Monday", "friday", "Fri", "Nov", "Nov.", "November", "May", "may",
    "March", "march", "Jan", "Jan.", "Sept", "August", "20th", "31st", "2026", "2025", "1999", "2099", "11/20",
    "2/29", "2/30", "11/20/2026", "2026-11-20", "2025-02-29", "2026-11", "2026/11/20", "T10:00", "T10:00:00Z",
    "a couple of", "three", "twelve", "an", "'s", "’s", "I", "we", "Monday.com", "v11.20", "3.11",
    "night", "few", "several", "first", "second", "fourth", "1st", "Saturday", "weekends", "months",
]
_JAPANESE = [
    "先週", "今週", "先々週", "今週末", "今日", "本日", "昨日", "一昨日", "きのう", "おととい", "今月", "先月",
    "先々月", "今年", "去年", "昨年", "一昨年", "おととし", "今年度", "11月", "20日", "31日", "2025年", "2月29日",
    "2025年2月29日",
    "2026年11月20日", "１１月２０日", "２０２６年", "3日前", "三日前", "十一日前", "2週間前", "3ヶ月前", "1年前",
    "月曜", "金曜日", "(金)", "（金）", "この前の", "前回の", "から", "まで", "以降", "以前", "時点", "現在", "より前",
    "より後", "〜",
    "～", "の", "に", "は", "で", "と", "や", "、", "頃", "ごろ", "毎週", "毎月", "第1", "3月期",
    # era forms, which are not read (令和5年 is no window) but must not break anything
    "令和5年", "令和元年5月1日", "平成31年4月30日", "昭和64年", "R5", "H31.4.30", "5年前半", "数日前", "先日",
    "前日", "翌日", "前週", "翌週", "前の週", "次の週", "前の週末", "直前の週末", "次の週末", "翌週末", "翌月", "前月",
    "3日後", "十日後",
]
_NOISE = [" ", "  ", "\u3000", "\t", "\n", ",", ".", "-", "–", "/", ":", ";", "・", "(", ")", "「", "」", "?", "？",
          "!", "\x00", "\ud800", "0", "9", "１", "２", "／", "－", "．", "ſ", "ı", "İ", "K", "ｋ"]
# (?i) reads ſ as s, ı and İ as i, K (the Kelvin sign) as k; a full-width ｋ it does not.
_ODD_LETTERS = [str.maketrans("sS", "ſſ"), str.maketrans("iI", "ıİ"), str.maketrans("kK", "KK"),
                str.maketrans("stk", "ſıK")]


@st.composite
def _word(draw) -> str:
    word = draw(st.sampled_from(_LATIN + _JAPANESE))
    spelling = draw(st.integers(0, 3 + len(_ODD_LETTERS)))
    if spelling == 1:
        return word.upper()
    if spelling == 2:
        return word.title()
    if spelling >= 4:
        return word.translate(_ODD_LETTERS[spelling - 4])
    return word


_SOUP = st.lists(st.one_of(_word(), _word(), st.sampled_from(_NOISE), st.text(max_size=4)), max_size=40)


@st.composite
def _hostile(draw) -> str:
    """Time words of both scripts in odd spellings, glue, noise and random text; sometimes repeated up to
    the 2,000 characters a search accepts."""
    query = "".join(draw(_SOUP))
    if query and draw(st.booleans()):
        query = (query * (2_000 // len(query) + 1))[: draw(st.integers(len(query), 2_000))]
    return query


_QUERIES = st.one_of(st.text(max_size=300), st.text(st.characters(codec="utf-8"), max_size=60), _hostile())
_TODAYS = st.one_of(st.just(datetime.date(2026, 12, 1)), st.dates())


def _skeleton(text: str) -> str:
    return "".join(c for c in text if not c.isspace() and c not in ",、，([（「【)]）」】:;・")


def _spaced(text: str) -> str:
    return "".join(" " if c.isspace() else c for c in text)


def _is_subsequence(short: str, long: str) -> bool:
    letters = iter(long)
    return all(c in letters for c in short)


_GLUE = re.compile(r"(?:\s|[,、と&や/]|'s|’s|頃|ごろ|には|では|にて|の|に|は|で|も"
                   r"|(?i:in|on|at|during|from|of|for|over|the|and|or))*")


def _check(window: TimeWindow | None, query: str, today: datetime.date | None = None) -> None:
    """Every promise above that one query and its window (find_time's answer) make."""
    read = timewords._read(query, today) if today is not None else None
    if window is None:
        assert read is None
        return
    assert window.phrases and all(p in query for p in window.phrases)
    assert window.since is None or isinstance(window.since, datetime.date)
    assert window.until is None or isinstance(window.until, datetime.date)
    if today is None:
        return
    if window.since is not None and window.until is not None:
        assert window.since <= window.until or window.until == today < window.since, window
    phrases, cuts = read
    spans = [(hit.start, hit.end) for hit in phrases]
    assert window.phrases == tuple(query[start:end] for start, end in spans)
    assert all(start < end for start, end in spans) and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert all(start < end for start, end in cuts) and all(a[1] < b[0] for a, b in zip(cuts, cuts[1:]))
    for cut_start, cut_end in cuts:
        inside = [(start, end) for start, end in spans if cut_start <= start and end <= cut_end]
        assert inside, (cut_start, cut_end, spans)
        between = [cut_start] + [edge for span in inside for edge in span] + [cut_end]
        for start, end in zip(between[::2], between[1::2]):
            # glue is read as the rules read it: full-width separators (／, ，) as ASCII
            assert _GLUE.fullmatch(query.translate(timewords._FULLWIDTH), start, end), query[cut_start:cut_end]
    assert all(any(a <= start and end <= b for a, b in cuts) for start, end in spans)
    kept = "".join(query[start:end] for start, end in zip([0] + [b for _, b in cuts], [a for a, _ in cuts] + [None]))
    assert _skeleton(window.text) == _skeleton(kept), (window.text, kept)
    assert _is_subsequence(_spaced(window.text), _spaced(query))


@PROPERTY
@given(_QUERIES, _TODAYS)
@_seeded
def test_any_text_keeps_the_promises(query, today):
    _check(find_time(query, today), query, today)


@PROPERTY
@given(st.lists(st.sampled_from(_WORDS), max_size=30), st.dates())
@_seeded
def test_time_word_soup_keeps_the_promises(words, today):
    query = "".join(words)
    _check(find_time(query, today), query, today)


def _readings(norm: str, today: datetime.date, rules) -> list[tuple]:
    return [(hit.start, hit.end, hit.since, hit.until, hit.kind) for hit in timewords._find_hits(norm, today, rules)]


def test_words_no_rule_reads_as_a_time_do_not_count_against_the_dates_a_query_may_name():
    # Found by the property below (seed 2488948418): 64 lowercase "march" with no day, which every rule but
    # the month's turns down, pushed every rule past MAX_CANDIDATES while the rules the query needs were not.
    norm = "march先々週lastlastlast" * 63 + "march先々週"
    every_rule = [(timewords._compiled(pattern), handler) for _, pattern, handler in timewords._RULES]
    today = datetime.date(2026, 12, 1)
    assert len(_readings(norm, today, every_rule)) == timewords.MAX_CANDIDATES
    assert _readings(norm, today, timewords._rules_for(norm)) == _readings(norm, today, every_rule)


@PROPERTY
@given(st.one_of(_hostile(), st.text(max_size=200)), _TODAYS)
@_seeded
def test_the_rules_a_query_could_need_read_what_every_rule_reads(query, today):
    norm = query.translate(timewords._FULLWIDTH)
    every_rule = [(timewords._compiled(pattern), handler) for _, pattern, handler in timewords._RULES]
    assert _readings(norm, today, timewords._rules_for(norm)) == _readings(norm, today, every_rule)


@PROPERTY
@given(_QUERIES, _TODAYS)
@_seeded
def test_a_search_reads_a_window_that_starts_by_its_end_or_refuses_it(query, today):
    from memory_search.errors import UsageError
    from memory_search.search.query import require_query
    from memory_search.search.retrieval import SearchRequest, windowed

    try:
        require_query(query[:2_000])
    except UsageError:  # blank, or text no search can take: no request is made of it
        with pytest.raises(UsageError):
            SearchRequest(query=query[:2_000], today=today)
        return
    request = SearchRequest(query=query[:2_000], today=today)
    found = find_time(request.query, today)
    backwards = found is not None and None not in (found.since, found.until) and found.since > found.until
    try:
        timed = windowed(request)
    except UsageError as refusal:
        assert backwards and "\n" not in str(refusal) and "starts after it ends" in str(refusal)
        return
    assert not backwards
    if timed is not None:
        filters = timed[0].filters
        assert filters.since is None or filters.until is None or filters.since <= filters.until


@pytest.mark.parametrize(
    "query",
    [
        "\x00",
        "\ud800先週\udfff",
        "先週\x00の",
        "x" * 2000,
        "先週のメモ and notes from Nov 20 " * 60,
        "1" * 2000,
        "11/20-" * 400,
        "〜" * 2000,
        "9999年12月31日から",
        "0001-01-01",
    ],
)
@pytest.mark.parametrize("today", [datetime.date(1, 1, 1), datetime.date(2026, 12, 1), datetime.date(9999, 12, 31)])
def test_never_raises_on_edges(query, today):
    _check(find_time(query, today), query)


def test_random_strings_never_raise():
    rng = random.Random(20261201)
    alphabet = "先週月曜日年前から〜0123456789/-.: NovMayaylstwekgo'、の\x00\ud83d"
    for _ in range(2000):
        query = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        _check(find_time(query, datetime.date(2026, 12, 1)), query)


def test_importing_compiles_nothing():
    """The patterns are compiled on first use, not at import, and a query compiles only what it could need: one
    without the makings of a time word compiles nothing, "may" the verb the look at the word before it, and
    先週 the rule that reads it (with what joins and removes phrases)."""
    import subprocess
    import sys

    from conftest import ROOT

    code = (
        "import datetime; from memory_search.search import timewords as t; today = datetime.date(2026, 12, 1); "
        "assert not t._PATTERNS; "
        "[t.find_time(q, today) for q in ('how do we tune the HNSW index', 'a holiday schedule', '日本語の月次資料')]; "
        "assert not t._PATTERNS, t._PATTERNS; "
        "t.find_time('this may help', today); assert list(t._PATTERNS) == [t._PREVIOUS_WORD], t._PATTERNS; "
        "t.find_time('先週', today); assert 1 < len(t._PATTERNS) < 10, t._PATTERNS"
    )
    subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(ROOT / "src")}, check=True)


def test_lookup_folds_exactly_the_letters_case_insensitive_matching_reads_as_ascii():
    """Every character that (?i) matches to an ASCII letter is spelt as that letter for lookup, so a word a
    pattern matched is always found ("laſt week" raised KeyError)."""
    import re
    import string
    import sys

    from memory_search.search.timewords import _fold

    any_letter = re.compile("(?i)[a-z]")
    read_as_ascii = {character: letter for character in map(chr, range(128, sys.maxunicode + 1))
                     if any_letter.fullmatch(character)
                     for letter in string.ascii_lowercase if re.fullmatch(f"(?i:{letter})", character)}
    assert read_as_ascii  # ſ, ı, İ, K in the Pythons we know
    assert {character: _fold(character) for character in read_as_ascii} == read_as_ascii
