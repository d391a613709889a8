#!/usr/bin/env python3
"""Every development set by mode, this tree against a git ref: one table. Development tooling, not installed.

    eval_all.py [--against main] [--sets NAME,...] [--eval ../shared/eval] [--work DIR]

For each set (the public sets in --eval, the sets of examples/eval, our questions over examples/memories, the
package-notes set when `make eval-notes` has built it, the time-bound set) it runs tools/eval/eval.py twice: over the
library of this working tree ("now") and over the library of --against, checked out into a temporary git worktree.
Both runs use this tree's tools/eval/eval.py, so the two sides are measured by the same code and only the library under
test differs. Each report is saved under --work, keyed by the library's source (the git tree of src/, with
uncommitted changes), the measuring code and the set's files: a run whose report exists is not run again, and the
embedding cache in the database makes indexing a set the other side has indexed cheap.

It prints nDCG@10 per set and mode (ref, now and their difference), marking with `*` a difference beyond noise
(the mean of the per-query differences more than two standard errors from zero), and flags every set where hybrid
falls below its better leg (keyword or semantic) beyond noise on this tree; then the conversation figures
(session@5, all sessions@5, turn@5), the answer-line figures of sets with answer lines (file@5, passage@5,
whole@5), the share of top-grade first hits of graded sets, the share of searches whose shown scores are out of
the list's order (which must be 0), and the abstention figures at --min-score 0.5 where the set has unanswerable
questions.

Examples:
  eval_all.py                                   # every set, against main
  eval_all.py --sets twins-ja,twins-en,locomo-dev
  eval_all.py --list                            # the sets' names
  eval_all.py --against HEAD~3 --limit-queries 300
  eval_all.py --no-against                      # this tree only

Environment: the variables eval.py reads (MEMORIES_DATABASE_URL, MEMORIES_DATA_DIR, VOYAGE_API_KEY...).
Exit codes: 0 every run finished (flags do not change it); 1 a run failed (its row says why); 2 bad usage."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools" / "eval"
EXAMPLES = ROOT / "examples" / "eval"
MODES = ("keyword", "semantic", "hybrid")
HARNESS = ("eval.py", "eval_lib.py", "../reports.py")  # the measuring code, part of every report's key
NOISE = 2.0  # standard errors of the mean per-query difference
# Runs a script with two folders first on sys.path: python -c BOOT FIRST SECOND SCRIPT ARGS...
BOOT = ("import runpy, sys; script = sys.argv[3]; sys.path[:0] = sys.argv[1:3]; sys.argv = [script, *sys.argv[4:]]; "
        "runpy.run_path(script, run_name='__main__')")


@dataclass
class EvalSet:
    name: str
    folder: Path
    split: str
    language: str | None = None  # index only the documents in this language (eval.py --language)
    abstain: Path | None = None  # unanswerable questions (eval.py --abstain)


def catalogue(eval_dir: Path, notes: Path, work: Path) -> list[EvalSet]:
    """Every set, in the order of the table; the generated ones live in `work`."""
    unanswerable = work / "sets" / "unanswerable"
    twins = EXAMPLES / "bilingual-twins"
    dev_notes, renamed = work / "sets" / "ja-dev-notes", work / "sets" / "twins-renamed"
    return [EvalSet("scifact-train", eval_dir / "scifact-train", "train", None, unanswerable / "scifact-train.jsonl"),
            EvalSet("jsquad-dev", eval_dir / "jsquad-dev", "dev", None, unanswerable / "jsquad-dev.jsonl"),
            EvalSet("jaquad-train", eval_dir / "jaquad-train", "train", None, unanswerable / "jaquad-train.jsonl"),
            EvalSet("locomo-dev", eval_dir / "locomo-dev", "dev", None, eval_dir / "locomo-dev" / "unanswerable.jsonl"),
            EvalSet("ja-questions-en-notes", EXAMPLES / "ja-questions-en-notes", "test", None,
                    unanswerable / "ja-questions-en-notes.jsonl"),
            EvalSet("en-questions-ja-notes", EXAMPLES / "en-questions-ja-notes", "test", None,
                    unanswerable / "en-questions-ja-notes.jsonl"),
            EvalSet("memories-questions", work / "sets" / "memories-questions", "test", None,
                    unanswerable / "memories-questions.jsonl"),
            EvalSet("package-notes-ja", notes, "ja", None, unanswerable / "package-notes.jsonl"),
            EvalSet("package-notes-en", notes, "en", None, unanswerable / "package-notes.jsonl"),
            EvalSet("time-bound", work / "time-set", "test"),
            EvalSet("twins-ja", twins, "ja"),
            EvalSet("twins-en", twins, "en"),
            EvalSet("twins-ja-on-en-pages", twins, "ja", "en"),
            EvalSet("twins-en-on-ja-pages", twins, "en", "ja"),
            EvalSet("twins-ja-on-ja-pages", twins, "ja", "ja"),
            EvalSet("twins-en-on-en-pages", twins, "en", "en"),
            EvalSet("ja-conversations", EXAMPLES / "ja-conversations", "dev", None,
                    EXAMPLES / "ja-conversations" / "unanswerable.jsonl"),
            EvalSet("web-archive", EXAMPLES / "web-archive", "test"),
            EvalSet("ja-dev-notes-ja", dev_notes, "ja", None, dev_notes / "unanswerable-ja.jsonl"),
            EvalSet("ja-dev-notes-en", dev_notes, "en", None, dev_notes / "unanswerable-en.jsonl"),
            EvalSet("twins-renamed-ja", renamed, "ja"),
            EvalSet("twins-renamed-en", renamed, "en")]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def digest(*parts: bytes | str) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode() if isinstance(part, str) else part)
        hasher.update(b"\0")
    return hasher.hexdigest()[:16]


def library_id(ref: str | None) -> str:
    """The library's source: the git tree of src/ at `ref`, or this tree's src/ with its uncommitted changes."""
    if ref is not None:
        return git("rev-parse", f"{ref}:src")
    changes = git("status", "--porcelain", "--untracked-files=all", "--", "src")
    if not changes:
        return git("rev-parse", "HEAD:src")
    files = sorted(line[3:] for line in changes.splitlines())
    return digest(git("rev-parse", "HEAD:src"), git("diff", "HEAD", "--", "src"),
                  *[(ROOT / name).read_bytes() for name in files if (ROOT / name).is_file()])


def set_id(item: EvalSet) -> str:
    files = [item.folder / "corpus.jsonl", item.folder / "queries.jsonl", item.folder / "qrels" / f"{item.split}.tsv"]
    if item.abstain is not None:
        files.append(item.abstain)
    return digest(item.name, item.split, item.language or "", *[path.read_bytes() for path in files])


def harness_id() -> str:
    return digest(*[(TOOLS / name).read_bytes() for name in HARNESS])


def prepare(work: Path, eval_dir: Path, notes: Path, wanted: list[EvalSet]) -> None:
    """The generated sets: unanswerable questions and examples/memories as a set; the time-bound set."""
    names = {item.name for item in wanted}
    if names & {"scifact-train", "jsquad-dev", "jaquad-train", "ja-questions-en-notes", "en-questions-ja-notes",
                "memories-questions", "package-notes-ja", "package-notes-en"}:
        run_tool([sys.executable, str(TOOLS / "abstention_sets.py"), str(work / "sets"), "--eval", str(eval_dir),
                  "--notes", str(notes)])
    if "time-bound" in names:
        run_tool([sys.executable, str(TOOLS / "time_questions.py"), str(work / "time-set")])
    if names & {"ja-dev-notes-ja", "ja-dev-notes-en"}:  # built from ../shared/eval/tech-notes-dev at run time
        result = subprocess.run([sys.executable, str(EXAMPLES / "ja-dev-notes" / "build.py"),
                                 str(work / "sets" / "ja-dev-notes"), "--articles", str(eval_dir / "tech-notes-dev")],
                                capture_output=True, text=True)
        if result.returncode == 3:  # the articles are absent: the set is skipped (no corpus.jsonl), with why
            print(f"eval_all.py: {result.stderr.strip()}", file=sys.stderr)
        elif result.returncode != 0:
            raise SystemExit(f"eval_all.py: error: ja-dev-notes/build.py failed: {result.stderr.strip()[-500:]}")
    if names & {"twins-renamed-ja", "twins-renamed-en"}:
        run_tool([sys.executable, str(EXAMPLES / "twins-renamed" / "build.py"), str(work / "sets" / "twins-renamed")])


def run_tool(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"eval_all.py: error: {Path(command[1]).name} failed: {result.stderr.strip()[-500:]}")


def checkout(ref: str, into: Path) -> Path:
    """`ref` in a temporary git worktree that uses this tree's environment (its .venv)."""
    git("worktree", "add", "--detach", "--quiet", str(into), ref)
    venv = ROOT / ".venv"
    if venv.exists():
        (into / ".venv").symlink_to(venv.resolve())
    return into


def evaluate(item: EvalSet, library: Path | None, report: Path, modes: list[str], limit: int | None) -> str | None:
    """Run eval.py on the set over the library in `library`/src (None: this tree's) and save its report;
    returns None, or the last line of the error."""
    partial = report.with_suffix(".partial")
    args = [str(item.folder), "--split", item.split, "--modes", ",".join(modes), "--save", str(partial), "--json"]
    if item.language:
        args += ["--language", item.language]
    if item.abstain is not None:
        args += ["--abstain", str(item.abstain)]
    if limit:
        args += ["--limit-queries", str(limit)]
    if library is None:
        command = [sys.executable, str(TOOLS / "eval.py"), *args]
    else:  # this tree's eval.py with the other library first on the path (eval.py puts this tree's src after it)
        command = [sys.executable, "-c", BOOT, str(library / "src"), str(TOOLS), str(TOOLS / "eval.py"), *args]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        return (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1]
    partial.replace(report)
    return None


def paired(base: dict[str, float], other: dict[str, float]) -> tuple[float, bool]:
    """The mean of other - base over the shared queries, and whether it lies beyond NOISE standard errors of 0."""
    shared = sorted(set(base) & set(other))
    if not shared:
        return float("nan"), False
    differences = [other[query] - base[query] for query in shared]
    mean = sum(differences) / len(differences)
    if len(differences) < 2:
        return mean, False
    spread = math.sqrt(sum((d - mean) ** 2 for d in differences) / (len(differences) - 1))
    return mean, abs(mean) > 1e-9 and abs(mean) > NOISE * spread / math.sqrt(len(differences))


def hybrid_shortfall(report: dict) -> tuple[float, bool] | None:
    """Hybrid against the better of its legs (by mean nDCG@10), query by query: (mean difference, beyond noise)."""
    scores = report.get("per_query", {})
    if not all(mode in scores for mode in MODES):
        return None
    results = report["results"]
    best = "keyword" if results["keyword"]["ndcg@10"] >= results["semantic"]["ndcg@10"] else "semantic"
    return paired(scores[best], scores["hybrid"])


def cell(value: float | None, width: int = 7, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"{'-':>{width}}"
    return f"{value:>+{width}.4f}" if signed else f"{value:>{width}.4f}"


Row = tuple[EvalSet, "dict | None", "dict | None", "str | None"]  # set, ref report, now report, error


def table(rows: list[Row], modes: list[str], ref_name: str) -> str:
    width = max([len(item.name) for item, *_ in rows] + [10])
    head = f"{'set':<{width}} {'n':>5}" + "".join(f" | {mode:^24}" for mode in modes) + " |"
    sub = f"{'':<{width}} {'':>5}" + "".join(f" | {ref_name[:7]:>7} {'now':>7} {'delta':>8}" for _ in modes) + " |"
    lines = [f"nDCG@10 of a search for ten; delta = now - {ref_name}, * beyond noise (the mean per-query difference "
             f"exceeds {NOISE:g} standard errors)", head, sub, "-" * len(sub)]
    flags = []
    for item, ref, now, error in rows:
        count = (now or ref or {}).get("queries")
        line = f"{item.name:<{width}} {count if count is not None else '-':>5}"
        for mode in modes:
            before = ref["results"][mode]["ndcg@10"] if ref and mode in ref["results"] else None
            after = now["results"][mode]["ndcg@10"] if now and mode in now["results"] else None
            delta, beyond = (paired(ref["per_query"][mode], now["per_query"][mode])
                             if before is not None and after is not None else (None, False))
            line += f" | {cell(before)} {cell(after)} {cell(delta, 7, True)}{'*' if beyond else ' '}"
        lines.append(line + " |" + (f" {error}" if error else ""))
        shortfall = hybrid_shortfall(now) if now else None
        if shortfall and shortfall[1] and shortfall[0] < 0:
            flags.append(f"  {item.name}: hybrid {shortfall[0]:+.4f} nDCG@10 against its better leg, query by query")
    lines += ["", "hybrid below max(keyword, semantic) beyond noise on this tree:" + ("" if flags else " none")]
    return "\n".join(lines + flags)


def side_tables(rows: list[Row], modes: list[str], ref_name: str) -> str:
    """The conversation, best-first and abstention figures of the sets that have them, ref -> now."""
    out = []
    conversation = [(item, ref, now) for item, ref, now, _ in rows if now and now.get("conversation")]
    if conversation:
        out += ["", f"conversation questions, first five hits ({ref_name} -> now)",
                f"{'set':<22} {'mode':<9} {'category':<14} {'session@5':>17} {'all sessions@5':>17} {'turn@5':>17}"]
        for item, ref, now in conversation:
            for mode in modes:
                for group, figures in now["conversation"].get(mode, {}).items():
                    before = ((ref or {}).get("conversation") or {}).get(mode, {}).get(group, {})
                    label = figures["name"] if group == "all" else f"{group} {figures['name']}"
                    out.append(f"{item.name:<22} {mode:<9} {label:<14}" + "".join(
                        f" {cell(before.get(key), 8)}{cell(figures[key], 9)}"
                        for key in ("session", "all_sessions", "turn")))
    answered = [(item, ref, now) for item, ref, now, _ in rows if now and now.get("passage")]
    if answered:
        out += ["", f"questions with answer lines, first five hits ({ref_name} -> now): file = the answering file "
                    f"among them; passage = a hit whose shown lines overlap the answer's; whole = one whose lines "
                    f"hold all of them",
                f"{'set':<22} {'mode':<9} {'label':<12} {'file@5':>17} {'passage@5':>17} {'whole@5':>17}"]
        for item, ref, now in answered:
            for mode in modes:
                for label, figures in now["passage"].get(mode, {}).items():
                    before = ((ref or {}).get("passage") or {}).get(mode, {}).get(label, {})
                    out.append(f"{item.name:<22} {mode:<9} {label:<12}" + "".join(
                        f" {cell(before.get(key), 8)}{cell(figures.get(key), 9)}"
                        for key in ("file", "passage", "whole")))
    graded = [(item, ref, now) for item, ref, now, _ in rows if now and now.get("best_first")]
    if graded:
        out += ["", f"best first: the share of questions whose first hit has their top grade, the page in the "
                    f"question's language ({ref_name} -> now)"]
        for item, ref, now in graded:
            before = (ref or {}).get("best_first") or {}
            out.append(f"{item.name:<22}" + "".join(
                f"  {mode} {cell(before.get(mode), 6)} ->{cell(now['best_first'].get(mode), 7)}" for mode in modes))
    ordered = [(item, ref, now) for item, ref, now, _ in rows if now and now.get("out_of_order")]
    if ordered:
        out += ["", f"out of order: the share of searches whose shown scores contradict the list's order, which must "
                    f"be 0 ({ref_name} -> now)"]
        for item, ref, now in ordered:
            before = (ref or {}).get("out_of_order") or {}
            out.append(f"{item.name:<22}" + "".join(
                f"  {mode} {cell(before.get(mode), 6)} ->{cell(now['out_of_order'].get(mode), 7)}" for mode in modes))
        disordered = [item.name for item, _, now in ordered if any(now["out_of_order"].values())]
        out.append("sets with a search out of order on this tree: " + (", ".join(disordered) or "none"))
    abstaining = [(item, ref, now) for item, ref, now, _ in rows if now and now.get("abstention")]
    if abstaining:
        out += ["", f"at --min-score 0.5 ({ref_name} -> now): abstain = the unanswerable questions left with no "
                    f"result; keep = the answerable ones that keep their relevant document"]
        for item, ref, now in abstaining:
            line = f"{item.name:<22}"
            for mode in modes:
                before = ((ref or {}).get("abstention") or {}).get(mode, {})
                after = now["abstention"].get(mode, {})
                line += (f"  {mode} abstain {cell(before.get('abstain'), 6)} ->{cell(after.get('abstain'), 7)}"
                         f" keep {cell(before.get('keep'), 6)} ->{cell(after.get('keep'), 7)}")
            out.append(line)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    sections = __doc__.split("\n\n")
    parser = argparse.ArgumentParser(prog="eval_all.py", description="\n\n".join(sections[:5]),
                                     epilog="\n\n".join(sections[5:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="main", metavar="REF", help="the git ref to compare with (default main)")
    parser.add_argument("--no-against", action="store_true", help="measure this tree only")
    parser.add_argument("--sets", help="comma-separated set names (default: every set whose files exist)")
    parser.add_argument("--list", action="store_true", help="print the sets' names and folders, and exit")
    parser.add_argument("--modes", default=",".join(MODES), help="eval.py modes (default keyword,semantic,hybrid)")
    parser.add_argument("--eval", dest="eval_dir", type=Path, default=ROOT.parent / "shared" / "eval",
                        help="the public sets (default ../shared/eval)")
    parser.add_argument("--notes", type=Path, default=Path("/tmp/memory-search-package-notes/set"),
                        help="the package-notes set `make eval-notes` builds, if present")
    parser.add_argument("--work", type=Path, default=Path("/tmp/memory-search-eval-all"),
                        help="where generated sets and saved reports are kept (default /tmp/memory-search-eval-all)")
    parser.add_argument("--limit-queries", type=int, metavar="N", help="score a sample of N queries of each set")
    parser.add_argument("--fresh", action="store_true", help="run every set again even when its report is saved")
    args = parser.parse_args(argv)

    work, eval_dir, notes = args.work.resolve(), args.eval_dir.resolve(), args.notes.resolve()
    modes = args.modes.split(",")
    everything = catalogue(eval_dir, notes, work)
    if args.list:
        for item in everything:
            print(f"{item.name:<24} {item.folder} --split {item.split}"
                  + (f" --language {item.language}" if item.language else ""))
        return 0
    wanted = everything
    if args.sets:
        known = {item.name: item for item in everything}
        unknown = [name for name in args.sets.split(",") if name not in known]
        if unknown:
            print(f"eval_all.py: error: unknown set {', '.join(unknown)}: see eval_all.py --list", file=sys.stderr)
            return 2
        wanted = [known[name] for name in args.sets.split(",")]
    ref = None
    if not args.no_against:
        try:
            ref = git("rev-parse", "--verify", "--quiet", f"{args.against}^{{commit}}")
        except subprocess.CalledProcessError:
            print(f"eval_all.py: error: {args.against!r} is not a commit of this repository", file=sys.stderr)
            return 2
    work.mkdir(parents=True, exist_ok=True)
    prepare(work, eval_dir, notes, wanted)
    present = []
    for item in wanted:
        if not (item.folder / "corpus.jsonl").is_file():
            print(f"eval_all.py: skipping {item.name}: {item.folder} has no corpus.jsonl", file=sys.stderr)
            continue
        if item.abstain is not None and not item.abstain.is_file():
            item.abstain = None
        present.append(item)

    harness = harness_id()
    sides = {"now": library_id(None)} | ({"ref": library_id(ref)} if ref else {})
    reports = work / "reports"
    reports.mkdir(exist_ok=True)
    tree, failed, rows = None, False, []
    try:
        for number, item in enumerate(present, 1):
            results, error = {}, None
            for side, library in sides.items():
                key = digest(library, harness, set_id(item), ",".join(modes), str(args.limit_queries or ""))
                report = reports / f"{item.name}-{key}.json"
                if args.fresh or not report.is_file():
                    print(f"[{number}/{len(present)}] {item.name}: {side}", file=sys.stderr, flush=True)
                    if side == "ref" and tree is None:
                        tree = checkout(ref, Path(tempfile.mkdtemp(prefix="memory-search-ref-")) / "tree")
                    problem = evaluate(item, tree if side == "ref" else None, report, modes, args.limit_queries)
                    if problem:
                        error, failed = f"{side}: {problem}", True
                        continue
                results[side] = json.loads(report.read_text(encoding="utf-8"))
            rows.append((item, results.get("ref"), results.get("now"), error))
    finally:
        if tree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
            shutil.rmtree(tree.parent, ignore_errors=True)
    ref_name = args.against if ref else "-"
    print(table(rows, modes, ref_name))
    print(side_tables(rows, modes, ref_name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
