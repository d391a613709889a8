#!/usr/bin/env python3
"""Write the web-archive set in BEIR layout from its sources (pages/SITE/*.md, questions.tsv).

    python3 build.py [OUT_DIR]      (default: this folder)

Each page is what a web archiver saves when it converts a whole HTML page to Markdown: the article (pages/SITE/SLUG.md)
inside its site's chrome (skip links, navigation, a cookie banner, breadcrumbs, sidebars of popular and related
articles, newsletter and comment boxes, footers), the same on every page of a site except for the parts that name
the page. corpus.jsonl: one document per page, `_id` SITE/SLUG, metadata.path raw/web/<saved date>/<time>_<slug>.md
and metadata.frontmatter (kind web, title, url, saved_at). queries.jsonl and qrels/test.tsv from questions.tsv
(`_id` web-NNN, metadata.language); qrels/ja.tsv and qrels/en.tsv hold the questions of each language.
Standard library only; the output is a function of the sources."""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def read_page(path: Path) -> tuple[dict, str]:
    match = re.match(r"---\n(.*?)\n---\n", path.read_text(encoding="utf-8"), re.S)
    if not match:
        raise SystemExit(f"{path}: no header")
    head = dict(line.split(": ", 1) for line in match.group(1).splitlines())
    return head, path.read_text(encoding="utf-8")[match.end():].strip("\n")


def headings(body: str) -> list[str]:
    return [line[3:] for line in body.splitlines() if line.startswith("## ")]


def number(slug: str, low: int, high: int) -> int:
    """A stable pseudo-random number for a page (view counts, votes)."""
    return low + zlib.crc32(slug.encode()) % (high - low + 1)


def links(items: list[tuple[str, str]]) -> str:
    return "\n".join(f"*   [{title}]({url})" for title, url in items)


# ------------------------------------------------------------------ Field Notes (an English engineering blog)

FIELDNOTES = "https://fieldnotes.example.com"
FIELDNOTES_AUTHORS = {
    "Priya Raman": "Priya is a staff engineer working on data infrastructure. She writes about PostgreSQL, Python "
                   "and the operational side of boring technology, and maintains two small open-source libraries.",
    "Tomás Ortega": "Tomás leads a platform team of six. Before that he was a site reliability engineer at a "
                    "payments company. He cares about on-call health, security basics and writing things down.",
    "Jonas Berg": "Jonas builds event-driven systems and has opinions about Kafka, most of them earned the hard way. "
                  "He speaks at local meetups and runs the Field Notes newsletter.",
}
FIELDNOTES_POPULAR = [
    ("Zero-downtime schema migrations in PostgreSQL, the boring way", "/posts/zero-downtime-migrations/"),
    ("The on-call rotation that made our team stop dreading Fridays", "/posts/on-call-rotation/"),
    ("Cookie sessions or JWTs for a server-rendered app? We went back to cookies", "/posts/cookie-sessions-vs-jwt/"),
    ("Feature flags are a loan: pay them back", "/posts/feature-flags-are-a-loan/"),
    ("Ten PostgreSQL settings we change on every new database", "/posts/postgresql-settings/"),
]


def fieldnotes(head: dict, body: str, slug: str, others: list[tuple[str, str]]) -> str:
    day = dt.date.fromisoformat(head["published"])
    minutes = max(3, len(body.split()) // 220)
    related = others[:3] + [("How we review pull requests in a remote team", "/posts/remote-code-review/"),
                            ("Postmortems that people actually read", "/posts/postmortems-people-read/")]
    return f"""[Skip to main content](#main)

[![Field Notes logo]({FIELDNOTES}/static/logo.svg) Field Notes]({FIELDNOTES}/)

*   [Articles]({FIELDNOTES}/posts/)
*   [Topics]({FIELDNOTES}/topics/)
*   [Newsletter]({FIELDNOTES}/newsletter/)
*   [Talks]({FIELDNOTES}/talks/)
*   [About]({FIELDNOTES}/about/)
*   [Search]({FIELDNOTES}/search/)

**We value your privacy.** We use cookies to keep you signed in to comments, to remember your preferences such as the
dark theme and, with your consent, to measure how our articles are read so that we can write better ones. You can
accept all cookies, reject non-essential cookies, or choose which cookies to allow. You can change your mind at any
time from the "Cookie settings" link at the bottom of every page. Read our [Cookie Policy]({FIELDNOTES}/cookies/) and
[Privacy Policy]({FIELDNOTES}/privacy/) for details.

[Accept all cookies]  [Reject non-essential]  [Manage preferences]

[Home]({FIELDNOTES}/) › [Articles]({FIELDNOTES}/posts/) › {head['title']}

# {head['title']}

By [{head['author']}]({FIELDNOTES}/authors/{head['author'].lower().replace(' ', '-').replace('á', 'a')}/) · \
{MONTHS[day.month - 1]} {day.day}, {day.year} · {minutes} min read

{body}

* * *

Share this article: [Twitter](https://twitter.com/intent/tweet?url={head['url']}) · \
[LinkedIn](https://www.linkedin.com/sharing/share-offsite/?url={head['url']}) · \
[Hacker News](https://news.ycombinator.com/submitlink?u={head['url']}) · [Copy link]

### About the author

**{head['author']}**: {FIELDNOTES_AUTHORS[head['author']]}

## Related articles

{links([(title, FIELDNOTES + url) for title, url in related])}

## Popular this month

{chr(10).join(f"{i}.  [{title}]({FIELDNOTES}{url})" for i, (title, url) in enumerate(FIELDNOTES_POPULAR, 1))}

## Subscribe to the Field Notes newsletter

One e-mail a month with new articles on running software in production, a few links we found useful, and nothing
else. No tracking pixels; unsubscribe with one click. 8,400 engineers read it.

[Email address]  [Subscribe]

## Comments ({number(slug, 3, 41)})

Comments are moderated and appear after review. Be kind, stay on topic, and do not post personal data. [Sign in to
comment]({FIELDNOTES}/login/?next=/posts/{slug}/) with GitHub or e-mail.

* * *

**Field Notes**: [About]({FIELDNOTES}/about/) · [Contact]({FIELDNOTES}/contact/) · \
[Write for us]({FIELDNOTES}/write-for-us/) · [Code of conduct]({FIELDNOTES}/conduct/)

**Topics**: [Databases]({FIELDNOTES}/topics/databases/) · [Kubernetes]({FIELDNOTES}/topics/kubernetes/) · \
[Observability]({FIELDNOTES}/topics/observability/) · [Python]({FIELDNOTES}/topics/python/) · \
[Security]({FIELDNOTES}/topics/security/) · [Career]({FIELDNOTES}/topics/career/)

**Legal**: [Privacy Policy]({FIELDNOTES}/privacy/) · [Cookie Policy]({FIELDNOTES}/cookies/) · \
[Cookie settings]({FIELDNOTES}/cookies/#settings) · [Terms of Use]({FIELDNOTES}/terms/) · [Imprint]({FIELDNOTES}/imprint/)

© 2019–2025 Field Notes. Articles are licensed under CC BY-SA 4.0 unless noted otherwise; code samples under the MIT
licence. Built with Hugo, hosted in Frankfurt. [RSS feed]({FIELDNOTES}/index.xml)
"""


# ------------------------------------------------------------------ Stowaway (an English documentation site)

STOWAWAY = "https://docs.stowaway.example.org/v2.4"
STOWAWAY_NAV = [
    ("Getting started", [("Introduction", "/getting-started/introduction/"),
                         ("Installation", "/getting-started/installation/"),
                         ("Quick start: your first backup", "/getting-started/quick-start/"),
                         ("Choosing a repository backend", "/getting-started/backends/")]),
    ("Guides", [("Scheduling backups", "/guides/scheduling/"), ("Retention and pruning", "/guides/retention-and-pruning/"),
                ("Restoring files", "/guides/restoring-files/"), ("Backing up databases", "/guides/databases/"),
                ("Encryption and keys", "/guides/encryption-and-keys/"),
                ("Running the REST server", "/guides/rest-server/")]),
    ("Reference", [("Command line", "/reference/command-line/"),
                   ("Configuration file reference", "/reference/configuration/"),
                   ("Environment variables", "/reference/environment/"),
                   ("Repository format", "/reference/repository-format/")]),
    ("Help", [("Troubleshooting", "/help/troubleshooting/"), ("FAQ", "/help/faq/"), ("Changelog", "/help/changelog/"),
              ("Security policy", "/help/security/")]),
]


def stowaway(head: dict, body: str, slug: str, others: list[tuple[str, str]]) -> str:
    pages = [(title, url) for _, items in STOWAWAY_NAV for title, url in items]
    index = next(i for i, (title, _) in enumerate(pages) if title == head["title"])
    previous, following = pages[index - 1], pages[(index + 1) % len(pages)]
    nav = "\n".join(f"*   {section}\n" + "\n".join(f"    *   [{title}]({STOWAWAY}{url})" for title, url in items)
                    for section, items in STOWAWAY_NAV)
    toc = "\n".join(f"*   [{h}](#{re.sub(r'[^a-z0-9]+', '-', h.lower()).strip('-')})" for h in headings(body))
    day = dt.date.fromisoformat(head["published"])
    return f"""[Skip to content](#content)

[![Stowaway](https://docs.stowaway.example.org/img/logo.svg) Stowaway Documentation](https://docs.stowaway.example.org/)

v2.4 (latest) ▾ · [Download](https://stowaway.example.org/download/) · [GitHub](https://github.com/stowaway/stowaway) · \
[Forum](https://forum.stowaway.example.org/)

Search the docs… ⌘K

This site uses cookies for anonymous usage statistics (which pages are read, how search is used). No advertising, no
tracking across sites. [OK]  [Learn more](https://stowaway.example.org/privacy/)

{nav}

[Docs](https://docs.stowaway.example.org/) › {head['section']} › {head['title']}

On this page

{toc}

# {head['title']}

{body}

* * *

[Edit this page on GitHub](https://github.com/stowaway/stowaway/edit/main/docs/{slug}.md) · Last updated on \
{MONTHS[day.month - 1]} {day.day}, {day.year}

Was this page helpful?  [👍 Yes]  [👎 No]

[← Previous: {previous[0]}]({STOWAWAY}{previous[1]})    [Next: {following[0]} →]({STOWAWAY}{following[1]})

* * *

Stowaway is free software under the BSD-2-Clause licence. © 2021–2025 The Stowaway authors. Documentation licensed
under CC BY 4.0.

[Community forum](https://forum.stowaway.example.org/) · [Matrix chat](https://matrix.to/#/#stowaway:matrix.org) · \
[Report a bug](https://github.com/stowaway/stowaway/issues/new) · [Sponsor](https://github.com/sponsors/stowaway) · \
[Privacy](https://stowaway.example.org/privacy/)

Version: v2.4 · Older versions: [v2.3](https://docs.stowaway.example.org/v2.3/) · \
[v2.2](https://docs.stowaway.example.org/v2.2/) · [v1.x (unmaintained)](https://docs.stowaway.example.org/v1/)
"""


# ------------------------------------------------------------------ ログの森 (a Japanese personal tech blog)

ROGNOMORI = "https://rognomori.example.jp"
ROGNOMORI_CATEGORIES = {"rust-cli-distribution": "Rust", "zfs-home-nas": "自宅サーバー",
                        "nextjs-stale-cache": "フロントエンド", "go-context-timeouts": "Go",
                        "stripe-subscriptions": "個人開発"}
ROGNOMORI_POPULAR = [
    ("自宅の Wi-Fi を見直したら在宅勤務の会議が途切れなくなった", "/entry/2024/11/home-wifi"),
    ("家の NAS を ZFS で組み直した話 (RAIDZ からミラーへ)", "/entry/2025/04/zfs-home-nas"),
    ("PostgreSQL のバックアップを pgBackRest に移した", "/entry/2024/09/pgbackrest"),
    ("Go の context とタイムアウトの設計で気をつけていること", "/entry/2025/06/go-context-timeouts"),
    ("エンジニアが家庭菜園を始めて 1 年たった", "/entry/2024/12/kitchen-garden"),
]


def rognomori(head: dict, body: str, slug: str, others: list[tuple[str, str]]) -> str:
    day = dt.date.fromisoformat(head["published"])
    category = ROGNOMORI_CATEGORIES[slug]
    toc = "\n".join(f"{i}.  [{h}](#toc{i})" for i, h in enumerate(headings(body), 1))
    related = others[:3] + [("SQLite を本番で使ってみて 1 年", "/entry/2024/10/sqlite-in-production")]
    return f"""[コンテンツへスキップ](#main)

[![ログの森]({ROGNOMORI}/wp-content/uploads/logo.png)]({ROGNOMORI}/)

**ログの森**
エンジニアの森下が、仕事と趣味で試したことを書き残すブログ

*   [ホーム]({ROGNOMORI}/)
*   [記事一覧]({ROGNOMORI}/entry/)
*   [カテゴリー]({ROGNOMORI}/category/)
*   [このブログについて]({ROGNOMORI}/about/)
*   [お問い合わせ]({ROGNOMORI}/contact/)

当サイトでは、サービスの向上とアクセス状況の分析のため、Cookie を使用しています。「同意する」をクリックすると、
Cookie の使用に同意したことになります。Cookie の設定はいつでも変更できます。詳しくは
[プライバシーポリシー]({ROGNOMORI}/privacy-policy/) をご覧ください。

[同意する]  [設定を変更]

[ホーム]({ROGNOMORI}/) > [{category}]({ROGNOMORI}/category/{category}/) > {head['title']}

# {head['title']}

{day.year}年{day.month}月{day.day}日 公開 ・ 約 {max(3, len(body) // 600)} 分で読めます

カテゴリー: [{category}]({ROGNOMORI}/category/{category}/)

**目次**

{toc}

{body}

* * *

この記事が役に立ったら、シェアしていただけるとうれしいです。

[X でポスト]  [はてなブックマーク ({number(slug, 12, 380)})]  [Facebook]  [リンクをコピー]

### この記事を書いた人

**森下 蒼** (もりした あおい)
Web 系の会社でバックエンドとインフラを担当しているエンジニア。Go と Rust と PostgreSQL が好き。週末は家庭菜園と
自作 NAS の世話をしています。お仕事のご依頼は [お問い合わせ]({ROGNOMORI}/contact/) からどうぞ。
[X](https://x.com/aoi_morishita) ・ [GitHub](https://github.com/aoi-morishita)

## 関連記事

{links([(title, ROGNOMORI + url) for title, url in related])}

## コメントを残す

メールアドレスが公開されることはありません。 * が付いている欄は必須項目です。コメントは承認されてから表示されます。

コメント *
名前 *
メール *
サイト

[コメントを送信]

## 人気記事

{chr(10).join(f"{i}.  [{title}]({ROGNOMORI}{url})" for i, (title, url) in enumerate(ROGNOMORI_POPULAR, 1))}

## カテゴリー

*   [Go (12)]({ROGNOMORI}/category/Go/)
*   [Rust (7)]({ROGNOMORI}/category/Rust/)
*   [インフラ (18)]({ROGNOMORI}/category/インフラ/)
*   [自宅サーバー (9)]({ROGNOMORI}/category/自宅サーバー/)
*   [フロントエンド (6)]({ROGNOMORI}/category/フロントエンド/)
*   [個人開発 (11)]({ROGNOMORI}/category/個人開発/)
*   [雑記 (23)]({ROGNOMORI}/category/雑記/)

## アーカイブ

*   [2025年7月 (2)]({ROGNOMORI}/entry/2025/07/)
*   [2025年6月 (3)]({ROGNOMORI}/entry/2025/06/)
*   [2025年5月 (2)]({ROGNOMORI}/entry/2025/05/)
*   [2025年4月 (4)]({ROGNOMORI}/entry/2025/04/)
*   [2025年3月 (3)]({ROGNOMORI}/entry/2025/03/)

* * *

© 2021-2025 ログの森 ・ [プライバシーポリシー]({ROGNOMORI}/privacy-policy/) ・ [免責事項]({ROGNOMORI}/disclaimer/) ・ \
[お問い合わせ]({ROGNOMORI}/contact/)

当ブログはアフィリエイトプログラムに参加しています。記事内のリンクから商品を購入されると、運営者に収益が発生する
ことがあります。記事の内容は公開時点の情報です。

Powered by WordPress ・ Theme by Cocoon
"""


# ------------------------------------------------------------------ ハコネクト ヘルプセンター (a Japanese help centre)

HAKONECT = "https://help.hakonect.example.jp/hc/ja"
HAKONECT_SECTIONS = [
    ("はじめに", ["ハコネクトとは", "アカウントを作成する", "デスクトップアプリをインストールする",
              "スマートフォンアプリをインストールする"]),
    ("ファイルの管理", ["ファイルをアップロードする", "削除したファイルを元に戻す", "以前のバージョンに戻す",
                 "フォルダを整理する"]),
    ("ファイルの共有", ["フォルダを共有する", "共有リンクに有効期限とパスワードを設定する", "共有相手の権限を変更する"]),
    ("アカウントとセキュリティ", ["パスワードを変更する・忘れたとき", "2 段階認証を設定する・スマートフォンを機種変更するとき",
                      "ログイン中の端末を確認する"]),
    ("プランと容量", ["料金プランの比較", "保存容量が足りなくなったときの対処", "支払い方法を変更する", "解約する"]),
    ("デスクトップアプリ", ["同期するフォルダを選ぶ", "デスクトップアプリの同期が止まるときに確認すること",
                    "プロキシ環境で使う"]),
]
HAKONECT_POPULAR = ["パスワードを変更する・忘れたとき", "保存容量が足りなくなったときの対処", "削除したファイルを元に戻す",
                    "料金プランの比較", "2 段階認証を設定する・スマートフォンを機種変更するとき"]
HAKONECT_COMMUNITY = [
    "共有リンクを送った相手がファイルを開けないと言っています",
    "スマートフォンで撮った写真が自動でアップロードされません",
    "退職した社員のファイルを別のメンバーに移す方法はありますか?",
    "Mac の同期フォルダを外付けの SSD に移したい",
    "請求書の宛名を会社名に変更できますか?",
]


def hakonect(head: dict, body: str, slug: str, others: list[tuple[str, str]]) -> str:
    sidebar = "\n\n".join(f"### {section}\n\n" + "\n".join(
        f"*   [{title}]({HAKONECT}/articles/{1000 + 97 * i + 13 * j})" for j, title in enumerate(titles))
        for i, (section, titles) in enumerate(HAKONECT_SECTIONS))
    day = dt.date.fromisoformat(head["published"])
    voters = number(slug, 40, 900)
    helpful = voters * number(slug[::-1], 55, 92) // 100
    return f"""[メインコンテンツにスキップ](#main)

[![ハコネクト ヘルプセンター]({HAKONECT}/logo.png)]({HAKONECT})

[ハコネクトのサイトへ](https://www.hakonect.example.jp/) ・ [ログイン](https://app.hakonect.example.jp/login) ・ \
[お問い合わせ]({HAKONECT}/requests/new) ・ 言語: 日本語 ▾

当サイトは、お客様の利便性の向上とサービスの改善のために Cookie を使用しています。サイトの閲覧を続けることで、
Cookie の使用に同意したものとみなされます。詳しくは [Cookie ポリシー](https://www.hakonect.example.jp/cookie-policy) を
ご覧ください。  [閉じる]

## どのようなことでお困りですか?

[キーワードで検索 (例: 共有リンク、容量、パスワード、同期)]

[ヘルプセンター]({HAKONECT}) > [{head['section']}]({HAKONECT}/sections/{head['section']}) > {head['title']}

## カテゴリー

{sidebar}

# {head['title']}

更新日: {day.year}年{day.month}月{day.day}日

{body}

* * *

この記事は役に立ちましたか?

[はい]  [いいえ]

{voters} 人中 {helpful} 人がこの記事が役に立ったと言っています

## 関連する記事

{links([(title, HAKONECT + url) for title, url in others[:3]])}

## 問題が解決しない場合

ヘルプセンターの記事で解決しない場合は、お問い合わせフォームからご連絡ください。有料プランをご利用のお客様は、
チャットでのサポートもご利用いただけます (平日 10:00〜18:00、祝日と年末年始を除く)。お問い合わせの際は、
お使いの端末、アプリのバージョン、表示されたメッセージをお知らせいただくと、回答が早くなります。

[お問い合わせフォーム]({HAKONECT}/requests/new)  [チャットで相談]

## よく見られている記事

{chr(10).join(f"{i}.  [{title}]({HAKONECT}/articles/{2000 + i})" for i, title in enumerate(HAKONECT_POPULAR, 1))}

## コミュニティの新着の質問

{chr(10).join(f"*   [{title}](https://community.hakonect.example.jp/t/{5000 + i})" for i, title in
              enumerate(HAKONECT_COMMUNITY))}

[コミュニティを見る](https://community.hakonect.example.jp/)

## 障害・メンテナンス情報

現在、障害は発生していません。9月21日 (日) 2:00〜5:00 に定期メンテナンスを行います。この間、デスクトップアプリの
同期とファイルのアップロードが一時的に止まります。[稼働状況を確認する](https://status.hakonect.example.jp/)

* * *

[ハコネクト](https://www.hakonect.example.jp/) ・ [料金](https://www.hakonect.example.jp/pricing) ・ \
[法人向け](https://www.hakonect.example.jp/business) ・ [セキュリティ](https://www.hakonect.example.jp/security) ・ \
[ステータス](https://status.hakonect.example.jp/) ・ [開発者向け API](https://developers.hakonect.example.jp/)

[利用規約](https://www.hakonect.example.jp/terms) ・ [プライバシーポリシー](https://www.hakonect.example.jp/privacy) ・ \
[Cookie ポリシー](https://www.hakonect.example.jp/cookie-policy) ・ \
[特定商取引法に基づく表記](https://www.hakonect.example.jp/tokushoho)

© 2025 Hakonect Inc.
"""


SITES = {"fieldnotes": fieldnotes, "stowaway": stowaway, "rognomori": rognomori, "hakonect": hakonect}
CLOCKS = ["091204", "101530", "113045", "134512", "152210", "170840", "201115", "213350"]


def main(out: Path) -> None:
    documents = []
    for site, render in SITES.items():
        paths = sorted((HERE / "pages" / site).glob("*.md"))
        pages = [(path.stem, *read_page(path)) for path in paths]
        for index, (slug, head, body) in enumerate(pages):
            others = [(other["title"], other["url"].split("example.jp/hc/ja")[-1].split(".example.com")[-1]
                       .split(".example.jp")[-1].split("/v2.4")[-1])
                      for other_slug, other, _ in pages[index + 1:] + pages[:index]]
            text = render(head, body, slug, others)
            saved = dt.date.fromisoformat(head["saved"])
            clock = CLOCKS[zlib.crc32(slug.encode()) % len(CLOCKS)]
            saved_at = dt.datetime.combine(saved, dt.time(int(clock[:2]), int(clock[2:4]), int(clock[4:])))
            documents.append({"_id": f"{site}/{slug}", "title": head["title"], "text": text, "metadata": {
                "path": f"raw/web/{saved}/{clock}_{slug}.md", "language": "ja" if site in ("rognomori", "hakonect")
                else "en", "frontmatter": {"kind": "web", "title": head["title"], "url": head["url"],
                                           "status": "active", "saved_at": saved_at.isoformat()}}})
    ids = {doc["_id"] for doc in documents}
    with open(HERE / "questions.tsv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    queries, qrels = [], []
    for number_, row in enumerate(rows, start=1):
        if row["page"] not in ids:
            raise SystemExit(f"questions.tsv: unknown page {row['page']}")
        query_id = f"web-{number_:03d}"
        queries.append({"_id": query_id, "text": row["question"], "metadata": {"language": row["language"]}})
        qrels.append((query_id, row["page"], row["language"]))
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    for name, items in (("corpus.jsonl", documents), ("queries.jsonl", queries)):
        (out / name).write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items),
                                encoding="utf-8")
    for split, language in (("test", None), ("ja", "ja"), ("en", "en")):
        (out / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
            f"{query_id}\t{doc_id}\t1\n" for query_id, doc_id, lang in qrels if language in (None, lang)),
            encoding="utf-8")
    sizes = sorted(len(doc["text"]) for doc in documents)
    print(f"{len(documents)} pages ({sizes[0]}-{sizes[-1]} characters), {len(queries)} questions -> {out}",
          file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
