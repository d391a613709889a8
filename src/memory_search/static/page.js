// The knowledge-base page: overview, search, a memory opened, recent records and the graph, over /page/*.json.
// Every text from the server goes in as text (textContent); the one exception is a memory's body, which the
// server renders from Markdown with raw HTML off and dangerous links removed (faces/markdown_html.py).
// The page's state is its address: ?db=&q=&scope=&project=&tag=&since=&until=&include_superseded=true&open=PATH,
// and #recent or #graph-section when the timeline or the graph is the part looked at.
// Served with ?q=, the page holds the answer to that first search (#first-search), so it needs no second trip.
"use strict";

const TEXT = {
  en: {
    skip: "Skip to the search box", title: "Memories", db: "db", navSearch: "Search", navRecent: "Recent",
    navGraph: "Graph", signOut: "Sign out", overview: "Overview", refresh: "Refresh the index", indexing: "Indexing…", barFiles: "Files",
    barEmbeddings: "Embeddings", search: "Search", placeholder: "a question or keywords, Japanese or English",
    searchButton: "Search", filters: "Filters", scope: "Kind", scopeAll: "all", kind_session: "session",
    kind_web: "web page", kind_minutes: "minutes", kind_wiki: "wiki", kind_claude: "Claude Code", kind_other: "other", project: "Project",
    tags: "Tags (comma between)", since: "From", until: "To", datePlaceholder: "YYYY-MM-DD, or last week",
    superseded: "Include superseded and deprecated",
    scoreNote: "Score: the estimated probability that the memory answers the query, 0 to 1, on one scale in every " +
      "mode; 0.5 or more is likely an answer.",
    close: "Close", related: "Linked and related", frontmatter: "Frontmatter", recent: "Recent records",
    graph: "Graph", fullGraph: "Open the full graph",
    stateIndexed: (chunks) => `Indexed (${chunks} chunks)`, stateBuilding: "An index run is under way",
    stateMissing: "Not indexed yet", stateError: "Cannot read the index",
    files: "Files", chunks: "Chunks", embedded: "Embedded", waiting: "Waiting for embedding",
    lastUpdate: "Last update", model: "Model", stale: "Stale files", unreadable: "Unreadable", links: "Links",
    never: "never", remote: "on another machine (its indexer keeps the index up to date)",
    staleSummary: (n, c, d) => `${n} new, ${c} changed, ${d} deleted since the last run`,
    staleNew: "new", staleChanged: "changed", staleDeleted: "deleted",
    linksValue: (resolved, unresolved) => `${resolved} resolved, ${unresolved} unresolved`,
    started: "An index run started: new and changed files become searchable by keywords within seconds, by " +
      "meaning once embedded.",
    alreadyRunning: "An index run started less than a minute ago is still at work.",
    filesCount: (done, total, chunks) => `${done} / ${total} files · ${chunks} chunks`,
    embedCount: (done, total) => `${done} / ${total} chunks`, embedWaiting: "after the files",
    current: (path) => `Now: ${path}`,
    searching: "Searching…", noHits: "Nothing matched.", hitCount: (n, ms) => `${n} memories (${ms} ms)`,
    window: (words, since, until) => `Time words ${words} searched as ${since} … ${until}.`,
    windowOutside: "Nothing dated then matched: these are from any date.",
    staleHit: "changed since it was indexed", lines: "lines", related_links_to: "links to",
    related_linked_from: "linked from", related_similar: (value) => `similar ${value}`, nothingRelated: "nothing related yet",
    noFrontmatter: "none", problem: (text) => `The frontmatter could not be read (${text}); shown as text.`,
    noRecent: "No dated records (raw/<kind>/YYYY-MM-DD/).", recentUnavailable: (text) => `Recent records: ${text}`,
    recentSkipped: (folders) => `Could not read ${folders}: the records there are not listed (check the folder's permissions, or that its disk is mounted).`,
    graphSummary: (nodes, edges) => `${nodes} memories, ${edges} links`, graphEmpty: "No memory is indexed yet.",
    errorPrefix: "Error: ",
    legendInactive: "pale: superseded or deprecated", legendSize: "larger: more links",
  },
  ja: {
    skip: "検索欄へ移動", title: "メモリー", db: "DB", navSearch: "検索", navRecent: "最近の記録", navGraph: "グラフ", signOut: "サインアウト",
    overview: "概要", refresh: "インデックスを更新", indexing: "インデックス作成中…", barFiles: "ファイル",
    barEmbeddings: "埋め込み", search: "検索", placeholder: "質問やキーワード (日本語・英語)", searchButton: "検索",
    filters: "絞り込み", scope: "種類", scopeAll: "すべて", kind_session: "セッション", kind_web: "ウェブページ",
    kind_minutes: "議事録", kind_wiki: "wiki", kind_claude: "Claude Code", kind_other: "その他", project: "プロジェクト",
    tags: "タグ (カンマ区切り)", since: "開始日", until: "終了日", datePlaceholder: "YYYY-MM-DD や 先週",
    superseded: "廃止・置き換え済みの記録も含める",
    scoreNote: "スコア: その記録が質問に答えている見込み (0〜1、どの検索モードでも同じ尺度)。0.5 以上なら答えである可能性が高い。",
    close: "閉じる", related: "リンクと関連", frontmatter: "フロントマター", recent: "最近の記録", graph: "グラフ",
    fullGraph: "グラフを全画面で開く",
    stateIndexed: (chunks) => `索引済み (${chunks} チャンク)`, stateBuilding: "インデックスを作成中",
    stateMissing: "まだ索引がありません", stateError: "索引を読めません",
    files: "ファイル", chunks: "チャンク", embedded: "埋め込み済み", waiting: "埋め込み待ち", lastUpdate: "最終更新",
    model: "モデル", stale: "未反映のファイル", unreadable: "読めないファイル", links: "リンク", never: "なし",
    remote: "別のマシン上 (そちらのインデクサが更新します)",
    staleSummary: (n, c, d) => `前回から 新規 ${n}・変更 ${c}・削除 ${d}`,
    staleNew: "新規", staleChanged: "変更", staleDeleted: "削除",
    linksValue: (resolved, unresolved) => `解決 ${resolved}・未解決 ${unresolved}`,
    started: "インデックス作成を開始しました。新規・変更ファイルは数秒でキーワード検索でき、埋め込み後に意味検索できます。",
    alreadyRunning: "1 分以内に開始したインデックス作成がまだ動いています。",
    filesCount: (done, total, chunks) => `${done} / ${total} ファイル・${chunks} チャンク`,
    embedCount: (done, total) => `${done} / ${total} チャンク`, embedWaiting: "ファイルの後で",
    current: (path) => `処理中: ${path}`,
    searching: "検索中…", noHits: "該当する記録はありません。", hitCount: (n, ms) => `${n} 件 (${ms} ms)`,
    window: (words, since, until) => `時間の語 ${words} を ${since} 〜 ${until} として検索しました。`,
    windowOutside: "その期間に該当がないため、全期間から表示しています。",
    staleHit: "索引の後に変更されています", lines: "行", related_links_to: "リンク先", related_linked_from: "リンク元",
    related_similar: (value) => `類似 ${value}`, nothingRelated: "関連する記録はまだありません", noFrontmatter: "なし",
    problem: (text) => `フロントマターを読めません (${text})。本文として表示します。`,
    noRecent: "日付のある記録 (raw/<種類>/YYYY-MM-DD/) がありません。", recentUnavailable: (text) => `最近の記録: ${text}`,
    recentSkipped: (folders) => `${folders} を読めませんでした。そこにある記録は表示していません (フォルダの権限か、ディスクがマウントされているかを確認してください)。`,
    graphSummary: (nodes, edges) => `${nodes} 件の記録・${edges} 本のリンク`, graphEmpty: "まだ索引された記録がありません。",
    errorPrefix: "エラー: ",
    legendInactive: "薄い色: 廃止・置き換え済み", legendSize: "大きいほどリンクが多い",
  },
};

function chooseLanguage() {
  for (const language of navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || "en"]) {
    if (/^ja\b/i.test(language)) return "ja";
    if (/^en\b/i.test(language)) return "en";
  }
  return "en";
}

const LANG = chooseLanguage();
const T = TEXT[LANG];
const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const $ = (id) => document.getElementById(id);
const number = (value) => Number(value).toLocaleString(LANG);

window.addEventListener("error", (event) => {
  document.body.dataset.errors = (document.body.dataset.errors || "") + event.message + "\n";
});

function element(tag, attributes = {}, ...children) {
  const made = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") made.textContent = value;
    else if (key === "className") made.className = value;
    else made.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) made.append(child);
  return made;
}

function translateStatic() {
  document.documentElement.lang = LANG;
  for (const node of document.querySelectorAll("[data-i18n]")) {
    const value = T[node.dataset.i18n];
    if (typeof value === "string") node.textContent = value;
  }
  for (const node of document.querySelectorAll("[data-i18n-placeholder]")) node.placeholder = T[node.dataset.i18nPlaceholder];
}

// --- the address --------------------------------------------------------------------------------

const VIEWS = ["overview", "recent", "graph-section"];  // the parts of the page an address can point at

function readAddress() {
  const query = new URLSearchParams(location.search);
  return {
    db: query.get("db") || "", q: query.get("q") || "", scope: query.get("scope") || "all",
    project: query.get("project") || "", tags: query.getAll("tag"), since: query.get("since") || "",
    until: query.get("until") || "", superseded: /^(1|true|yes)$/i.test(query.get("include_superseded") || ""),
    open: query.get("open") || "", view: VIEWS.includes(location.hash.slice(1)) ? location.hash.slice(1) : "",
  };
}

function address(state) {
  const query = new URLSearchParams();
  if (state.db) query.set("db", state.db);
  if (state.q) query.set("q", state.q);
  if (state.q && state.scope && state.scope !== "all") query.set("scope", state.scope);
  if (state.q && state.project) query.set("project", state.project);
  if (state.q) for (const tag of state.tags) query.append("tag", tag);
  if (state.q && state.since) query.set("since", state.since);
  if (state.q && state.until) query.set("until", state.until);
  if (state.q && state.superseded) query.set("include_superseded", "true");
  if (state.open) query.set("open", state.open);
  const text = query.toString();
  return location.pathname + (text ? "?" + text : "") + (state.view ? "#" + state.view : "");
}

let state = readAddress();

function go(changes, replace = false) {
  if (changes.open && !("view" in changes)) changes = { ...changes, view: "" };  // the memory opened is the view
  state = { ...state, ...changes };
  const target = address(state);
  if (target !== location.pathname + location.search + location.hash) {
    history[replace ? "replaceState" : "pushState"](null, "", target);
  }
  return render();
}

function showView() {  // after the parts above it are drawn, so it lands where it stays
  if (state.view && !state.open) $(state.view).scrollIntoView({ block: "start" });
}

// --- talking to the server ----------------------------------------------------------------------

async function getJson(path, parameters = {}) {
  const query = new URLSearchParams();
  if (state.db) query.set("db", state.db);
  for (const [key, value] of Object.entries(parameters)) {
    for (const item of Array.isArray(value) ? value : [value]) if (item !== "" && item !== null && item !== undefined) query.append(key, item);
  }
  const response = await fetch(path + "?" + query.toString(), { headers: { Accept: "application/json" }, credentials: "same-origin" });
  let body = null;
  try { body = await response.json(); } catch (failure) { body = null; }
  if (!response.ok) throw new Error((body && body.error) || response.status + " " + response.statusText);
  return body;
}

function showError(failure) {
  const alert = $("alert");
  alert.textContent = T.errorPrefix + failure.message;
  alert.hidden = false;
  document.body.dataset.lastError = failure.message;
}

// --- the overview and the index run -------------------------------------------------------------

let overview = null;

async function loadOverview() {
  try {
    overview = await getJson("/page/overview.json");
  } catch (failure) {
    $("state-text").textContent = T.stateError + ": " + failure.message;
    $("state").dataset.state = "error";
    return;
  }
  const dbs = $("db");
  if (dbs.options.length !== overview.dbs.length) {
    dbs.replaceChildren(...overview.dbs.map((name) => element("option", { value: name, text: name })));
  }
  dbs.value = overview.db;
  const status = overview.status;
  $("refresh").hidden = !overview.refresh;
  const figures = $("figures");
  figures.replaceChildren();
  const figure = (name, value, key) => figures.append(element("div", { className: "figure", "data-key": key },
    element("dt", { text: name }), element("dd", { text: value })));
  if (!status) {
    $("state").dataset.state = "missing";
    $("state-text").textContent = T.stateMissing + " — " + overview.problem;
    $("stale").hidden = true;
    return;
  }
  $("state").dataset.state = status.building ? "building" : "indexed";
  $("state-text").textContent = status.building ? T.stateBuilding : T.stateIndexed(number(status.chunks));
  figure(T.files, number(status.files), "files");
  figure(T.chunks, number(status.chunks), "chunks");
  figure(T.embedded, number(status.embedded), "embedded");
  figure(T.waiting, number(status.waiting_for_embeddings), "waiting");
  figure(T.lastUpdate, status.last_indexed_at ? new Date(status.last_indexed_at.replace(/([+-]\d\d)(\d\d)$/, "$1:$2")).toLocaleString(LANG) : T.never, "last");
  figure(T.model, `${status.model.model} (${status.model.provider}, ${status.model.dimension})`, "model");
  if (status.pending) {
    const pending = status.pending;
    figure(T.stale, number(pending.new + pending.changed + pending.deleted), "stale");
  } else {
    figure(T.stale, T.remote, "stale");
  }
  if (status.unreadable.length) figure(T.unreadable, number(status.unreadable.length), "unreadable");
  if (status.links) figure(T.links, T.linksValue(number(status.links.resolved), number(status.links.unresolved)), "links");
  const stale = status.stale, staleBox = $("stale");
  const count = stale ? stale.new.length + stale.changed.length + stale.deleted.length : 0;
  staleBox.hidden = !count;
  if (count) {
    $("stale-summary").textContent = T.staleSummary(status.pending.new, status.pending.changed, status.pending.deleted);
    $("stale-list").replaceChildren(...["new", "changed", "deleted"].flatMap((key) => stale[key].map((path) =>
      element("li", {}, element("span", { className: "badge", text: T["stale" + key[0].toUpperCase() + key.slice(1)] }), " ",
        element("span", { className: "path", text: path })))));
  }
  if (status.building) watchProgress(status);
}

function drawProgress(answer) {
  const box = $("progress");
  box.hidden = !answer.building;
  document.body.dataset.building = answer.building ? "1" : "";
  if (!answer.building) return;
  const progress = answer.progress || { phase: "files", files: { done: 0, total: 0, chunks: 0 }, embeddings: null, current: null };
  const files = progress.files || { done: 0, total: 0, chunks: 0 };
  $("files-bar").max = Math.max(files.total, 1);
  $("files-bar").value = progress.phase === "embeddings" ? Math.max(files.total, 1) : files.done;
  $("files-count").textContent = T.filesCount(number(files.done), number(files.total), number(files.chunks));
  const embeddings = progress.embeddings;
  $("embed-bar").max = Math.max(embeddings ? embeddings.total : 1, 1);
  $("embed-bar").value = embeddings ? embeddings.done : 0;
  $("embed-count").textContent = embeddings ? T.embedCount(number(embeddings.done), number(embeddings.total)) : T.embedWaiting;
  $("current").textContent = progress.phase === "files" && progress.current ? T.current(progress.current) : "";
  box.dataset.phase = progress.phase;
}

let progressTimer = null, wasBuilding = false, polling = false;

async function pollProgress() {
  clearTimeout(progressTimer);
  if (polling) return;
  polling = true;
  let answer;
  try {
    answer = await getJson("/page/progress.json");
  } catch (failure) {
    answer = { building: false };
  }
  drawProgress(answer);
  const lastRun = overview && overview.status ? overview.status.last_indexed_at : null;
  if ((wasBuilding && !answer.building) || (answer.last_indexed_at && answer.last_indexed_at !== lastRun)) {
    loadOverview();  // a run ended (here or anywhere): new figures
  }
  if (!wasBuilding && answer.building) $("state").dataset.state = "building";
  wasBuilding = answer.building;
  polling = false;
  progressTimer = setTimeout(pollProgress, answer.building ? 700 : 4000);
}

function watchProgress(status) {
  if (!wasBuilding) { wasBuilding = true; drawProgress({ building: true, progress: status.progress }); }
  pollProgress();
}

async function refresh() {
  const button = $("refresh");
  button.disabled = true;
  try {
    const query = new URLSearchParams(state.db ? { db: state.db } : {});
    const response = await fetch("/page/refresh?" + query.toString(), {
      method: "POST", credentials: "same-origin", headers: { "X-Memory-Search-CSRF": CSRF, Accept: "application/json" } });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.statusText);
    $("refresh-note").textContent = body.started ? T.started : T.alreadyRunning;
    setTimeout(pollProgress, 300);
  } catch (failure) {
    $("refresh-note").textContent = T.errorPrefix + failure.message;
  } finally {
    button.disabled = false;
  }
}

// --- search -------------------------------------------------------------------------------------

let searched = null;  // the search the results on screen answer
let firstSearch = JSON.parse(document.getElementById("first-search").textContent || "null");

function fillForm() {
  $("q").value = state.q;
  $("scope").value = state.scope;
  $("project").value = state.project;
  $("tags").value = state.tags.join(", ");
  $("since").value = state.since;
  $("until").value = state.until;
  $("superseded").checked = state.superseded;
  if (state.scope !== "all" || state.project || state.tags.length || state.since || state.until || state.superseded) $("filters").open = true;
}

function readForm() {
  return {
    q: $("q").value.trim(), scope: $("scope").value, project: $("project").value.trim(),
    tags: $("tags").value.split(/[,、]/).map((tag) => tag.trim()).filter(Boolean),
    since: $("since").value.trim(), until: $("until").value.trim(), superseded: $("superseded").checked,
  };
}

function snippetWithMarks(text, marks) {
  const characters = Array.from(text), parts = [];  // marks count code points, as Python does
  let at = 0;
  for (const [start, end] of marks) {
    if (start < at || end > characters.length) continue;
    parts.push(characters.slice(at, start).join(""), element("mark", { text: characters.slice(start, end).join("") }));
    at = end;
  }
  parts.push(characters.slice(at).join(""));
  return parts;
}

function openLink(relpath, label, className) {
  const link = element("a", { href: address({ ...state, open: relpath, view: "" }), "data-open": relpath, className }, label);
  return link;
}

async function runSearch() {
  const key = JSON.stringify([state.db, state.q, state.scope, state.project, state.tags, state.since, state.until, state.superseded]);
  if (key === searched) return;
  searched = key;
  const results = $("results"), status = $("search-status");
  if (!state.q) {
    results.replaceChildren(); status.textContent = ""; $("window").hidden = true; $("score-note").hidden = true;
    document.body.dataset.results = "";
    return;
  }
  status.textContent = T.searching;
  const started = performance.now();
  let answer = firstSearch;
  firstSearch = null;  // it answers the address the page was served for, once
  try {
    answer = answer || await getJson("/page/search.json", { q: state.q, scope: state.scope === "all" ? "" : state.scope,
      project: state.project, tag: state.tags, since: state.since, until: state.until,
      include_superseded: state.superseded ? "true" : "" });
  } catch (failure) {
    if (key !== searched) return;
    status.textContent = T.errorPrefix + failure.message;
    status.classList.add("failed");
    results.replaceChildren();
    $("window").hidden = true; $("score-note").hidden = true;
    document.body.dataset.results = "";
    return;
  }
  if (key !== searched) return;  // a later search is under way
  status.classList.remove("failed");
  const window_ = answer.window, windowBox = $("window");
  windowBox.hidden = !window_;
  if (window_) {
    windowBox.textContent = T.window(window_.words.map((word) => `“${word}”`).join(", "), window_.since || "…", window_.until || "…")
      + (window_.inside ? "" : " " + T.windowOutside);
  }
  $("score-note").hidden = !answer.hits.length;
  status.textContent = answer.hits.length ? T.hitCount(answer.hits.length, answer.took_ms) : T.noHits;
  results.replaceChildren(...answer.hits.map((hit) => {
    const lines = hit.start_line ? `:${hit.start_line}-${hit.end_line}` : "";
    const link = openLink(hit.relpath, null, "hit");
    link.append(element("span", { className: "where", text: hit.relpath + lines }), " ",
      element("span", { className: "hit-title", text: hit.title }), " ",
      element("span", { className: "score", title: T.scoreNote, text: `(${hit.score.toFixed(2)})` }));
    const details = [T["kind_" + (hit.kind || "other")] || hit.kind, hit.date, hit.status !== "active" ? hit.status : null]
      .filter(Boolean).join(" · ");
    return element("li", { "data-path": hit.relpath }, link,
      element("p", { className: "snippet" }, ...snippetWithMarks(hit.snippet, hit.marks)),
      element("p", { className: "hit-meta" }, details, hit.stale ? element("span", { className: "badge warn", text: T.staleHit }) : null));
  }));
  document.body.dataset.results = String(answer.hits.length);
  document.body.dataset.searchMs = String(Math.round(performance.now() - started));
  if (!window.firstSearchAt) window.firstSearchAt = performance.now();
}

// --- a memory -----------------------------------------------------------------------------------

let shown = null, opener = null;

function reasonText(reason) {
  if (reason === "links to") return T.related_links_to;
  if (reason === "linked from") return T.related_linked_from;
  const similar = /^similar (.+)$/.exec(reason);
  return similar ? T.related_similar(similar[1]) : reason;
}

function frontmatterValue(value) {
  if (value === null || value === undefined) return element("dd", { text: "" });
  if (Array.isArray(value) && value.every((item) => item === null || typeof item !== "object")) {
    return element("dd", { className: "tags" }, ...value.map((item) => element("span", { className: "badge", text: String(item) })));
  }
  return element("dd", { text: typeof value === "object" ? JSON.stringify(value) : String(value) });
}

async function openMemory() {
  const reader = $("reader");
  if (!state.open) {
    reader.hidden = true; shown = null; document.body.classList.remove("reading");
    return;
  }
  if (shown === state.db + "\n" + state.open) return;
  shown = state.db + "\n" + state.open;
  let memory;
  try {
    memory = await getJson("/page/memory.json", { path: state.open });
  } catch (failure) {
    memory = { title: T.errorPrefix + failure.message, relpath: state.open, end_line: null, html: "", frontmatter: {},
      related: [], problem: null, failed: true };
  }
  reader.hidden = false;
  document.body.classList.add("reading");
  $("reader-title").textContent = memory.title;
  $("reader-path").textContent = memory.end_line ? `${memory.relpath}:1-${memory.end_line}` : memory.relpath;
  reader.classList.toggle("failed", !!memory.failed);
  // Why the frontmatter is shown as text, and why the body is (a note too large or too slow to render).
  const notes = [memory.problem && T.problem(memory.problem), memory.plain_text].filter(Boolean);
  $("reader-problem").hidden = !notes.length;
  if (notes.length) $("reader-problem").textContent = notes.join(" ");
  $("reader-text").innerHTML = memory.html;  // rendered and sanitised on the server (markdown_html.py)
  const entries = Object.entries(memory.frontmatter);
  $("frontmatter").replaceChildren(...(entries.length ? entries.flatMap(([key, value]) =>
    [element("dt", { text: key }), frontmatterValue(value)]) : [element("dd", { text: T.noFrontmatter })]));
  $("reader-side").hidden = !!memory.failed;
  $("related").replaceChildren(...(memory.related.length ? memory.related.map((entry) => element("li", {},
    openLink(entry.relpath, entry.title, "related-link"),
    element("span", { className: "reason", text: entry.reasons.map(reasonText).join(", ") + " · " + (T["kind_" + entry.kind] || entry.kind) })))
    : [element("li", { className: "note", text: T.nothingRelated })]));
  document.body.dataset.open = memory.relpath;
  if (drawnGraph) drawnGraph.select(memory.relpath);
  $("reader-title").focus({ preventScroll: true });
  reader.scrollIntoView({ block: "start" });
}

function closeMemory() {
  const back = opener;
  go({ open: "" }).then(() => { if (back && document.contains(back)) back.focus(); });
}

// --- recent records -----------------------------------------------------------------------------

async function loadRecent() {
  const timeline = $("timeline");
  let answer;
  try {
    answer = await getJson("/page/recent.json");
  } catch (failure) {
    timeline.replaceChildren(element("li", { className: "note", text: T.recentUnavailable(failure.message) }));
    return;
  }
  const skipped = (answer.skipped || []).length
    ? [element("li", { className: "note", text: T.recentSkipped(answer.skipped.map((item) => `${item.folder} (${item.reason})`).join(", ")) })]
    : [];
  if (!answer.records.length) {
    timeline.replaceChildren(element("li", { className: "note", text: T.noRecent }), ...skipped);
    return;
  }
  const days = new Map();
  for (const record of answer.records) {
    const day = record.date || "—";
    (days.get(day) || days.set(day, []).get(day)).push(record);
  }
  timeline.replaceChildren(...[...days].map(([day, records]) => element("li", { className: "day" },
    element("h3", {}, element("time", { datetime: day, text: day })),
    element("ol", {}, ...records.map((record) => element("li", { className: "entry", "data-kind": record.kind },
      element("time", { className: "clock", text: (record.time || "").slice(0, 5) }), " ",
      element("span", { className: "badge kind-" + record.kind, text: T["kind_" + record.kind] || record.kind }), " ",
      openLink(record.relpath, record.title, "entry-link"),
      record.project ? element("span", { className: "project", text: " · " + record.project }) : null))))), ...skipped);
}

// --- the graph ----------------------------------------------------------------------------------

let drawnGraph = null, graphFor = null;

async function loadGraph() {
  if (graphFor === state.db) return;
  graphFor = state.db;
  const root = $("graph"), summary = $("graph-summary");
  root.replaceChildren();
  $("graph-link").href = "/graph" + (state.db ? "?db=" + encodeURIComponent(state.db) : "");
  let data;
  try {
    [data] = await Promise.all([getJson("/graph/data.json"), graphScript()]);
  } catch (failure) {
    summary.textContent = failure.message;
    return;
  }
  const projects = new Set(data.nodes.map((node) => node.project).filter(Boolean));
  const tags = new Set(data.nodes.flatMap((node) => node.tags));
  $("projects").replaceChildren(...[...projects].sort().map((name) => element("option", { value: name })));
  $("tag-names").replaceChildren(...[...tags].sort().map((name) => element("option", { value: name })));
  summary.textContent = data.nodes.length ? T.graphSummary(number(data.nodes.length), number(data.edges.length)) : T.graphEmpty;
  if (!data.nodes.length) return;
  drawnGraph = MemoryGraph.draw(root, data, (id) => { opener = null; go({ open: id }); });
  if (state.open) drawnGraph.select(state.open);
  document.body.dataset.nodes = String(data.nodes.length);
}

function graphScript() {  // graph.js, fetched once the graph is wanted: the first search does not wait for it
  if (window.MemoryGraph) return Promise.resolve();
  return new Promise((resolve, reject) => {
    document.head.append(element("script", { src: "/graph/graph.js" }));
    document.head.lastChild.addEventListener("load", resolve);
    document.head.lastChild.addEventListener("error", () => reject(new Error("cannot load /graph/graph.js")));
  });
}

function graphWhenSeen() {
  const section = $("graph-section");
  if (!("IntersectionObserver" in window)) return loadGraph();
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) { observer.disconnect(); loadGraph(); }
  });
  observer.observe(section);
}

// --- putting it together ------------------------------------------------------------------------

async function render() {
  fillForm();
  await Promise.all([runSearch(), openMemory()]);
}

function wire() {
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = readForm();
    if (!form.q) return;
    searched = null;  // the same search again asks the server again
    go({ ...form, open: "", view: "" });
  });
  $("refresh").addEventListener("click", refresh);
  $("close").addEventListener("click", closeMemory);
  $("db").addEventListener("change", () => {
    state = { ...readAddress(), db: $("db").value, open: "" };
    history.pushState(null, "", address(state));
    searched = null; graphFor = null; drawnGraph = null;
    start();
  });
  document.addEventListener("click", (event) => {  // a link to a memory opens it here, keeping the search
    const link = event.target.closest("a[data-open]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    opener = link.closest("#results, #timeline") ? link : opener;
    go({ open: link.dataset.open });
  });
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(event.target.tagName);
    if (event.key === "/" && !typing) { event.preventDefault(); $("q").focus(); $("q").select(); return; }
    if (event.key === "Escape" && state.open && !typing) { event.preventDefault(); closeMemory(); return; }
    if ((event.key === "ArrowDown" || event.key === "ArrowUp") && (event.target.id === "q" || event.target.classList.contains("hit"))) {
      const hits = [...document.querySelectorAll("#results a.hit")];
      if (!hits.length) return;
      event.preventDefault();
      const at = hits.indexOf(event.target);
      const next = event.key === "ArrowDown" ? Math.min(at + 1, hits.length - 1) : at - 1;
      (next < 0 ? $("q") : hits[next]).focus();
    }
  });
  window.addEventListener("popstate", () => { state = readAddress(); render(); });
  window.addEventListener("hashchange", () => { state = { ...state, view: readAddress().view }; });
}

async function start() {
  document.body.dataset.ready = "";
  await render();  // the search first: the overview's count of the directory waits for it
  await Promise.all([loadOverview(), loadRecent()]);
  pollProgress();
  showView();
  graphWhenSeen();
  document.body.dataset.ready = "1";
}

translateStatic();
wire();
start().catch((failure) => { showError(failure); document.body.dataset.errors = (document.body.dataset.errors || "") + failure.message + "\n"; });
