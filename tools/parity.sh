#!/usr/bin/env bash
# Byte-for-byte behaviour check between two checkouts: run the same commands on a copy of
# examples/memories and write each one's stdout, stderr and exit code under OUT; then `diff -r`
# the OUT folders of two checkouts. Volatile figures (durations, timestamps, sizes) are masked.
#
#   tools/parity.sh REPO OUT     # REPO: a checkout with its .venv built (make install)
set -uo pipefail
REPO=$(cd "$1" && pwd)
OUT=$2
PY="$REPO/.venv/bin/python"
MEM=/tmp/memory-search-parity/memories   # one fixed path: results print absolute paths
DATA=$(mktemp -d /tmp/memory-search-parity-data.XXXXXX)
rm -rf "$MEM" "$OUT" && mkdir -p "$(dirname "$MEM")" "$OUT"
cp -R "$REPO/examples/memories" "$MEM"
export MEMORIES_DIR="$MEM" MEMORIES_DATA_DIR="$DATA" MEMORIES_NO_DAEMON=1 HOME="$DATA/home"
unset MEMORIES_DATABASE_URL COCOINDEX_DATABASE_URL VOYAGE_API_KEY MEMORIES_TABLE MEMORIES_SEARCH_LOG
mkdir -p "$HOME"
n=0
mask() {
  sed -E -e 's/\([0-9]+\.[0-9] s\)/(N s)/g' -e 's/"duration_secs": [0-9.]+/"duration_secs": N/' \
    -e 's/"seconds": [0-9.]+/"seconds": N/' -e 's/"last_indexed_at": "[^"]*"/"last_indexed_at": T/' \
    -e 's/last indexed [0-9T:+-]+/last indexed T/' -e 's/"index_bytes": [0-9]+/"index_bytes": N/' \
    -e 's/chunks, [0-9.]+ MB/chunks, N MB/' -e 's/memory-search-parity-data\.[A-Za-z0-9]+/DATA/g'
}
run() {  # run NAME SCRIPT ARGS...
  n=$((n + 1))
  local name; name=$(printf '%02d_%s' "$n" "$1"); shift
  local script=$1; shift
  (cd /tmp && "$PY" "$REPO/scripts/$script.py" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"; echo $? >"$OUT/$name.code")
  mask <"$OUT/$name.out" >"$OUT/$name.out.m" && mv "$OUT/$name.out.m" "$OUT/$name.out"
  mask <"$OUT/$name.err" >"$OUT/$name.err.m" && mv "$OUT/$name.err.m" "$OUT/$name.err"
}
for script in search recent similar related index stats export db; do run "help_$script" "$script" --help; done
run index_first index --json
run index_noop index
run index_dry index --dry-run
run index_dry_json index --dry-run --json
run stats stats
run stats_json stats --json
run verify stats --verify
run verify_json stats --verify --json
run q_ja search "セッション要約の保存先"
run q_en search "how do we tune the HNSW index" --top 3
run q_json_explain search "コミット規約" --format json --explain
run q_keyword search "ERR_PGVECTOR_DIM_MISMATCH" --mode keyword --explain
run q_semantic search "backup schedule" --mode semantic --format json
run q_scope_wiki search "コミット規約" --scope wiki --top 5
run q_scope_session search "pgvector" --scope session --format json
run q_superseded search "dev setup" --include-superseded --format json
run q_project search "release" --project agents --format json
run q_tag search "embedding" --tag search --format json
run q_since_until search "meeting" --since 2026-10-15 --until 2026-11-15 --format json
run q_where search "release" --where '{"duration_minutes": {"$gte": 30}}' --format json
run q_min_score search "HNSW" --min-score 0.5 --format json
run q_no_dedupe search "HNSW" --no-dedupe --top 5 --format json
run q_no_hits search "x" --scope web --project nobody
run q_no_hits_json search "x" --scope web --project nobody --format json
run e_empty search ""
run e_top search "x" --top 0
run e_where search "x" --where '{"a": {"$regex": 1}}'
run e_where_json search "x" --where '{'
run e_date search "x" --since 2026-13-01
run e_scope search "x" --scope nowhere
run e_long search "$(printf 'a%.0s' $(seq 1 2100))"
run e_missing search "x" --memories /nonexistent/memories
run recent recent
run recent_json recent --kind all --top 20 --format json
run recent_paths recent --kind all --format paths
run recent_web recent --kind web
run recent_project recent --kind session --project agents --top 3
run recent_days recent --days 0
run similar similar wiki/search/embedding-model.md --top 5
run similar_json similar wiki/dev/commit-conventions.md --format json --include-superseded
run similar_missing similar wiki/nope.md
run related related wiki/search/embedding-model.md --top 5
run related_json related wiki/dev/commit-conventions.md --format json
run related_outside related /etc/passwd
run export_jsonl export --scope wiki
run export_csv export --format csv --project agents
run export_json export --format json --since 2026-11-01
run index_rebuild index --rebuild --json
run stats_after stats --json
run db_status db status
"$PY" "$REPO/scripts/db.py" stop >/dev/null 2>&1
rm -rf "$DATA"
echo "$n commands written to $OUT"
