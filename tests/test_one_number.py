"""One number: every face lists the hits in the order of the score it shows, in every mode, and that score is
the probability that the hit answers; a Japanese note full of code is read as Japanese."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import index, search

RUNBOOK = """# 決済基盤 運用ランブック

決済 API（`payments-api`）と Webhook 受信（`webhook-receiver`）の運用手順をまとめる。

## Webhook の署名エラー

`SignatureVerificationError` がログに出たら、まず `STRIPE_WEBHOOK_SECRET` が最新か確認する。
ローテーション直後は旧シークレットで署名されたイベントが数分届くので、
`kubectl logs deploy/webhook-receiver -n payments --since=10m` で件数を見て、減っていれば待つ。
増え続けるなら `kubectl rollout restart deploy/webhook-receiver -n payments` で再起動する。

```bash
kubectl -n payments get secret stripe-webhook -o jsonpath='{.data.secret}' | base64 -d | sha256sum
```

## デプロイ

`make deploy ENV=prod` を実行する。`helm upgrade --install payments-api charts/payments-api -f values/prod.yaml`
が走り、`/healthz` が 200 を返すまで `kubectl rollout status` で待つ。失敗したら `helm rollback payments-api` で戻す。

## オンコールの引き継ぎ

引き継ぎは毎週月曜の 10:00 (JST)。`pd schedule show --id P7Q2ZX1 --since monday` で次の当番を確認し、
`#payments-oncall` に `pd incident list --statuses triggered,acknowledged --service-ids PAYMENTS_API` の結果を貼る。

```bash
pd schedule override create --schedule-id P7Q2ZX1 --user-email next.oncall@example.com --start "$(date -Iseconds)"
pd incident list --statuses triggered,acknowledged --service-ids PAYMENTS_API,WEBHOOK_RECEIVER
kubectl -n payments get events --sort-by=.lastTimestamp | tail -n 50 > handover-$(date +%F).log
gh issue list --repo acme/payments --label incident --state open --json number,title,assignees
```

未解決の `SignatureVerificationError` や `HighErrorRate` は引き継ぎメモに書く。

## オンコール当番の心得

オンコール当番はいつでも 15 分以内に応答できるようにしておく。ノート PC と充電器を持ち歩き、
移動中で応答できないときは副当番に一言連絡する。当番中に起きたことは翌朝の朝会で共有する。

## ダッシュボード

Grafana の `payments / overview` で p95 レイテンシ（目標 300ms 以下）とエラー率（目標 0.1% 以下）を見る。
"""

OTHERS = {
    "wiki/dev/git.md": ("Git の運用", "# Git の運用\n\nブランチは `feature/<issue>` で切り、`git rebase main` してから"
                        "プルリクエストを出す。レビューは二人。マージは squash で行う。\n"),
    "wiki/dev/python.md": ("Python 環境", "# Python 環境\n\n`uv venv` で仮想環境を作り、"
                           "`uv pip sync requirements.txt` で入れる。バージョンは 3.11 に揃える。"
                           "`ruff check` と `pytest -q` を CI で回す。\n"),
    "wiki/ops/backup.md": ("バックアップ", "# バックアップ\n\n毎晩 2 時に `pg_dump` でデータベースのダンプを取り、"
                           "S3 の `backups/` へ送る。保存期間は 30 日。復元は月に一度リハーサルする。\n"),
    "wiki/ops/alerts.md": ("アラート設計", "# アラート設計\n\nアラートは症状に対して出す。`HighErrorRate` は 5 分間の"
                           "エラー率が 1% を超えたら鳴る。夜間は重大度 critical だけが電話を鳴らす。\n"),
    "wiki/team/meetings.md": ("定例ミーティング", "# 定例ミーティング\n\nチーム定例は毎週水曜の 14:00。議事録は"
                              "Notion に残す。四半期の振り返りは最終週の金曜に行う。\n"),
    "wiki/en/oncall.md": ("On-call policy", "# On-call policy\n\nThe on-call engineer acknowledges a page within 15 "
                          "minutes. Escalate to the secondary after 30 minutes without progress.\n"),
    "wiki/en/release.md": ("Release process", "# Release process\n\nWe cut a release branch every second Tuesday, "
                           "run the smoke tests, then tag `vX.Y.Z` and publish the changelog.\n"),
    "wiki/en/kafka.md": ("Kafka consumers", "# Kafka consumers\n\nConsumers commit offsets after processing. Set "
                         "`max.poll.interval.ms` above the slowest batch, or the group rebalances.\n"),
    "wiki/en/postgres.md": ("Postgres tuning", "# Postgres tuning\n\nWe raised `shared_buffers` to 8GB and "
                            "`work_mem` to 64MB; autovacuum runs more often on the events table.\n"),
}


@pytest.fixture
def runbook(env, memories):
    memories.write("wiki/ops/payments-runbook.md", RUNBOOK, title="決済基盤 運用ランブック")
    for path, (title, body) in OTHERS.items():
        memories.write(path, body, title=title)
    index(env, memories)
    return memories


def test_a_japanese_runbook_full_of_code_shows_the_section_that_answers_first_above_half(env, runbook):
    (first, *_) = search(env, runbook, "オンコールの引き継ぎはいつ")
    assert Path(first["path"]).name == "payments-runbook.md"
    lines = RUNBOOK.split("\n")
    heading = lines.index("## オンコールの引き継ぎ") + 1 + 3  # the file's lines: the frontmatter's three first
    assert first["start_line"] <= heading + 1 <= first["end_line"], first
    assert first["score"] >= 0.5
    assert Path(search(env, runbook, "オンコールの引き継ぎはいつ", "--min-score", "0.5")[0]["path"]).name == \
        "payments-runbook.md"


QUESTIONS = ("オンコールの引き継ぎはいつ", "SignatureVerificationError が出たときの対処", "デプロイに失敗したら",
             "when is the on-call handover", "how do we roll back a failed deploy", "Kafka のリバランスを避けるには",
             "バックアップの保存期間", "postgres memory settings", "helm rollback payments-api")


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_hits_are_listed_in_the_order_of_the_score_shown_in_every_mode(env, runbook, mode):
    for question in QUESTIONS:
        for extra in ((), ("--no-dedupe",)):
            scores = [hit["score"] for hit in search(env, runbook, question, "--mode", mode, "--top", "20", *extra)]
            assert scores == sorted(scores, reverse=True), (question, extra, scores)


def test_the_library_lists_hits_in_the_order_of_their_scores(env, runbook):
    import memory_search

    with memory_search.open(memories_dir=str(runbook.root)) as memories:
        for question in QUESTIONS:
            scores = [hit.score for hit in memories.search(question, top=20)]
            assert scores == sorted(scores, reverse=True), (question, scores)


def test_hits_from_outside_the_window_a_question_names_follow_in_the_order_of_their_scores(env, memories):
    import datetime as dt

    today = dt.date.today()
    last_week = today - dt.timedelta(days=today.weekday() + 4)  # a Thursday of last week
    memories.session(last_week.isoformat(), "10-00", "Team lunch", "# Team lunch\n\nWe picked the ramen place.\n")
    before_it = today - dt.timedelta(days=today.weekday() + 10)  # three days before last week: around it
    memories.session(before_it.isoformat(), "10-00", "Rolled back the payments deploy",
                     "# Rolled back the payments deploy\n\nThe payments deploy failed its health check, so we ran "
                     "`helm rollback payments-api` and the rollback restored the previous release.\n")
    index(env, memories)
    for mode in ("hybrid", "keyword", "semantic"):
        hits = search(env, memories, "payments deploy rollback last week", "--mode", mode)
        if mode != "keyword":  # inside the window first, then the days around it (keywords match nothing inside)
            assert [hit["title"] for hit in hits] == ["Team lunch", "Rolled back the payments deploy"], mode
        scores = [hit["score"] for hit in hits]
        assert scores == sorted(scores, reverse=True), (mode, scores)


OPS_JA = [("証明書の更新", "社内 CA の証明書は毎年 3 月に更新する。担当は基盤チームで、"
           "手順は `cert-renew.sh` にまとめた。"),
          ("ログの保存期間", "アプリのログは 90 日、監査ログは 7 年保存する。期限を過ぎたものは夜間ジョブが消す。"),
          ("障害の振り返り", "障害の振り返りは発生から 5 営業日以内に書き、金曜の定例で読み合わせる。"),
          ("依存の更新", "依存ライブラリの更新は Renovate が毎週月曜にまとめてプルリクエストを出す。"),
          ("権限の申請", "本番 DB の読み取り権限は申請フォームから出し、上長の承認で 24 時間だけ付く。")]
OPS_EN = [("Certificate renewal", "The internal CA certificate is renewed every March by the platform team; "
           "the steps are in `cert-renew.sh`."),
          ("Log retention", "Application logs are kept for 90 days and audit logs for seven years; a nightly job "
           "deletes what has expired."),
          ("Postmortems", "A postmortem is written within five business days and read together at the Friday review."),
          ("Dependency updates", "Renovate opens one pull request with the week's dependency updates every Monday."),
          ("Access requests", "Read access to the production database is requested through the form and granted "
           "for 24 hours once a manager approves.")]


def test_a_question_on_a_tool_the_notes_never_name_is_left_empty_in_either_language(env, memories):
    # Operations notes in both languages, enough of each for the index's baselines: a question about a tool the
    # notes never mention is left empty at 0.5 whether it is asked in Japanese or English, and a question a note
    # answers keeps that note above 0.5 in both.
    for i in range(60):
        title, text = OPS_JA[i % 5]
        memories.write(f"wiki/ja/ops-{i}.md", f"# {title} ({i})\n\n{text} 第 {i} 版。\n", title=f"{title} {i}")
        title, text = OPS_EN[i % 5]
        memories.write(f"wiki/en/ops-{i}.md", f"# {title} ({i})\n\n{text} Revision {i}.\n", title=f"{title} {i}")
    index(env, memories)
    for question in ("Kafka のコンシューマーラグが増え続けるときに見るべき指標は?",
                     "Which metrics should we watch when the Kafka consumer lag keeps growing?"):
        assert search(env, memories, question, "--min-score", "0.5") == [], question
    for question, folder in (("社内 CA の証明書は何月に更新する?", "/ja/"),
                             ("In which month is the internal CA certificate renewed?", "/en/")):
        (first, *_) = search(env, memories, question)
        assert folder in first["path"] and first["score"] >= 0.5, (question, first["path"], first["score"])
