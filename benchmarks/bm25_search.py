"""BM25 search of the local corpus (coa's web_search over a JSONL corpus) against bm25s, the same queries.

    pip install bm25s scipy                       # the baseline only; factory needs neither
    python benchmarks/bm25_search.py              # 20,000 documents, 300 queries, top 10
    python benchmarks/bm25_search.py --docs 100000 --queries 500

The corpus is synthetic and seeded: words drawn from a 30,000-word vocabulary with Zipf frequencies,
80-400 words a document, queries of 2-5 mid-frequency words. Three searchers answer the same queries
in this process, one after another:

- factory: `CorpusIndex.search` (postings in numpy arrays, only the hits' documents read from DuckDB);
- before: the same index searched as it was until issue 31 (the query split by DuckDB's RE2, then
  SQL over the postings and the documents), kept here to measure the change;
- bm25s (BM25 "lucene", the same k1 and b), indexed from factory's own tokens, so both score the
  same terms: its top 10 is compared with factory's, as it comes and with equal scores put in file order
  (factory breaks ties by file order, bm25s does not; its scores differ from factory's by a constant).

Writes benchmarks/results/bm25_search.json (ms per query, the ratio to bm25s, ranking agreement).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.results_file import report  # noqa: E402
from factory.coa.tools.bm25 import STOPWORDS, CorpusIndex, tokens  # noqa: E402
from factory.coa.tools.config import LocalCorpusConfig  # noqa: E402

K1, B = 1.2, 0.75


def write_corpus(path: Path, docs: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(30_000)]
    weights = [1 / (i + 1) ** 1.05 for i in range(len(vocab))]
    with path.open("w") as out:
        for i in range(docs):
            words = rng.choices(vocab, weights, k=rng.randint(80, 400))
            out.write(json.dumps({"id": f"d{i}", "title": " ".join(words[:6]), "text": " ".join(words[6:])}) + "\n")
    return vocab


def before_search(index: CorpusIndex, query: str, k: int) -> list[str]:
    """The pre-issue-31 search, verbatim in its SQL: RE2 split, term ids, postings sum, documents joined."""
    cursor = index.connection.cursor()
    row = cursor.execute(r"SELECT regexp_extract_all(lower(?), '[\pL\pN]+')", [query]).fetchone()
    terms = list(dict.fromkeys(term for term in row[0] if term not in STOPWORDS))
    ids = [r[0] for r in cursor.execute("SELECT term_id FROM terms WHERE term IN (SELECT unnest(?::VARCHAR[]))", [terms]).fetchall()]  # fmt: skip
    if not ids:
        return []
    id_list = ", ".join(str(int(term_id)) for term_id in ids)
    rows = cursor.execute(f"""
        WITH top AS (SELECT docid, sum(weight) AS score FROM postings WHERE term_id IN ({id_list})
                     GROUP BY docid ORDER BY score DESC, docid LIMIT {int(k)})
        SELECT d.id FROM top JOIN docs d USING (docid) ORDER BY top.score DESC, top.docid
    """).fetchall()
    return [r[0] for r in rows]


def per_query_ms(search, queries: list[str]) -> float:
    started = time.perf_counter()
    for query in queries:
        search(query)
    return round((time.perf_counter() - started) / len(queries) * 1e3, 3)


def bm25s_searcher(corpus: Path):
    try:
        import bm25s
    except ImportError:
        return None, None
    docs = [json.loads(line) for line in corpus.open()]
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    started = time.perf_counter()
    retriever.index([tokens(d["title"] + " " + d["text"]) for d in docs], show_progress=False)
    built = time.perf_counter() - started
    ids = [d["id"] for d in docs]

    def search(query: str, k: int = 10, ties_by_file_order: bool = False) -> list[str]:
        """bm25s's top k; with ties_by_file_order, equal scores ordered as factory orders them (file order)."""
        found, scores = retriever.retrieve([tokens(query)], k=k * 2 if ties_by_file_order else k, show_progress=False)
        ranked = list(zip(found[0], scores[0]))
        if ties_by_file_order:  # scores equal to float32 precision are ties
            ranked = sorted(ranked, key=lambda pair: (-round(float(pair[1]), 4), int(pair[0])))[:k]
        return [ids[i] for i, _ in ranked]

    return search, built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results/bm25_search.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="factory-bm25-") as folder:
        corpus = Path(folder) / "corpus.jsonl"
        vocab = write_corpus(corpus, args.docs, args.seed)
        rng = random.Random(args.seed + 1)
        queries = [" ".join(rng.choices(vocab[20:5000], k=rng.randint(2, 5))) for _ in range(args.queries)]
        started = time.perf_counter()
        index = CorpusIndex.open(LocalCorpusConfig(path=corpus, k1=K1, b=B))
        figures = {
            "docs": args.docs,
            "queries": args.queries,
            "factory_build_and_load_s": round(time.perf_counter() - started, 2),
        }
        ours = lambda q: [hit.document.id for hit in index.search(q, 10)]  # noqa: E731
        figures["factory_ms_per_query"] = per_query_ms(ours, queries)
        figures["before_ms_per_query"] = per_query_ms(lambda q: before_search(index, q, 10), queries)
        figures["speedup_over_before"] = round(figures["before_ms_per_query"] / figures["factory_ms_per_query"], 1)
        baseline, built = bm25s_searcher(corpus)
        if baseline is not None:
            figures["bm25s_build_s"] = round(built, 2)
            figures["bm25s_ms_per_query"] = per_query_ms(baseline, queries)
            figures["factory_over_bm25s"] = round(figures["factory_ms_per_query"] / figures["bm25s_ms_per_query"], 2)
            same = [ours(q) == baseline(q) for q in queries]
            same_up_to_ties = [ours(q) == baseline(q, ties_by_file_order=True) for q in queries]
            figures["same_top10_order"] = round(sum(same) / len(same), 3)
            figures["same_top10_order_ties_by_file_order"] = round(sum(same_up_to_ties) / len(same), 3)
        index.close()
    report(args.out, "current", figures)  # printed, and saved beside earlier entries
    return 0


if __name__ == "__main__":
    sys.exit(main())
