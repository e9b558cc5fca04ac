"""A BM25 index of a local corpus, built once in DuckDB and cached on disk; searched in memory.

Why not DuckDB's `fts` extension: the extension is downloaded at run time (no
network here), and the PyPI `duckdb-extension-fts` wheels stop at 1.5.5 while
this project runs duckdb 2.x. The index is three tables:

    docs(docid, id, title, url, text)
    terms(term_id, term, df)                  sorted by term
    postings(term_id, docid, weight)          sorted by term_id

`weight` is the document's whole BM25 contribution for the term (idf and length
normalisation included), so a query's score is a sum of weights. A search reads
the postings into arrays once (a term's postings are one slice) and scores in
numpy, as bm25s does with its sparse matrix; only the hits' documents are read
from DuckDB. Both sides split words with the same Python tokenizer (`tokens`):
DuckDB's RE2 compiles the Unicode word class anew for every query (~2 ms).

The index lives in `<corpus>.bm25.duckdb` (or `index_dir`); it records the
corpus's path, size, mtime and k1/b, and is rebuilt when any of them changes.
It is built under a temporary name and renamed, so a crash leaves no half index.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from ...store.db import relation_batches
from .config import LocalCorpusConfig

INDEX_VERSION = 2  # 2: words split in Python, for the index and the query alike
WORD = re.compile(r"[^\W_]+")  # letters and digits of any script (str.isalnum), lower-cased first
MAX_TERM_CHARS = 64  # longer "words" are hashes and base64: never queried
STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "he", "in", "is", "it", "its",
    "of", "on", "or", "s", "she", "that", "the", "their", "this", "to", "was", "were", "which", "will", "with",
))  # fmt: skip
CORPUS_COLUMNS = {"id": "VARCHAR", "title": "VARCHAR", "text": "VARCHAR", "url": "VARCHAR"}


class CorpusError(Exception):
    """The corpus cannot be read or indexed; the message says which file and why."""


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    url: str | None
    text: str


@dataclass(frozen=True)
class Hit:
    document: Document
    score: float


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def tokens(text: str) -> list[str]:
    """The terms of a text as the index counts them: words, lower-cased, no stopwords or overlong "words"."""
    return [word for word in WORD.findall(text.lower()) if len(word) <= MAX_TERM_CHARS and word not in STOPWORDS]


def index_path(config: LocalCorpusConfig) -> Path:
    corpus = config.path.resolve()
    if config.index_dir is None:
        return corpus.with_name(corpus.name + ".bm25.duckdb")
    digest = hashlib.sha1(str(corpus).encode()).hexdigest()[:10]  # two corpora may share a stem
    return config.index_dir / f"{corpus.stem}-{digest}.bm25.duckdb"


def fingerprint(config: LocalCorpusConfig) -> str:
    corpus = config.path.resolve()
    stat = corpus.stat()
    return json.dumps({
        "version": INDEX_VERSION, "corpus": str(corpus), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
        "k1": config.k1, "b": config.b,
    }, sort_keys=True)  # fmt: skip


def source_sql(connection: duckdb.DuckDBPyConnection, corpus: Path) -> str:
    """A SELECT of id, title, text, url (all VARCHAR, url NULL when absent) from the corpus file."""
    path = sql_string(str(corpus))
    if corpus.suffix.lower() == ".parquet":
        present = {row[0] for row in connection.execute(f"DESCRIBE SELECT * FROM read_parquet({path})").fetchall()}
        missing = {"id", "title", "text"} - present
        if missing:
            raise CorpusError(f"{corpus}: missing column(s) {', '.join(sorted(missing))}")
        url = "url::VARCHAR" if "url" in present else "NULL::VARCHAR"
        return (
            f"SELECT id::VARCHAR AS id, title::VARCHAR AS title, text::VARCHAR AS text, {url} AS url "
            f"FROM read_parquet({path})"
        )
    columns = "{" + ", ".join(f"{sql_string(k)}: {sql_string(v)}" for k, v in CORPUS_COLUMNS.items()) + "}"
    return f"SELECT id, title, text, url FROM read_json({path}, format='auto', columns={columns})"


def build_index(config: LocalCorpusConfig, target: Path) -> None:
    """Write the index of `config.path` to `target` (atomically)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.with_name(f"{target.name}.building-{os.getpid()}-{threading.get_ident()}")
    building.unlink(missing_ok=True)
    stamp = fingerprint(config)  # before reading: a corpus that changes meanwhile is indexed again next time
    connection = duckdb.connect(str(building))
    try:
        fill_index(connection, config, stamp)
        connection.execute("CHECKPOINT")
    except (duckdb.Error, CorpusError) as exc:
        connection.close()
        building.unlink(missing_ok=True)
        # DuckDB's messages span lines and quote the SQL; the user gets the first sentence's worth, on one line.
        reason = " ".join(str(exc).split()).split(" LINE 1:")[0].split(" Try setting")[0][:300]
        raise CorpusError(f"{config.path}: cannot index the corpus: {reason}") from None
    connection.close()
    os.replace(building, target)


def fill_index(connection: duckdb.DuckDBPyConnection, config: LocalCorpusConfig, stamp: str) -> None:
    corpus = config.path.resolve()
    connection.execute(f"CREATE TABLE raw AS {source_sql(connection, corpus)}")
    bad = connection.execute("SELECT count(*) FROM raw WHERE id IS NULL OR text IS NULL").fetchone()[0]
    if bad:
        raise CorpusError(f"{bad} document(s) have no id or no text (expected rows with id, title and text)")
    # rowid follows the file's order, so ties rank the same on every build.
    connection.execute(
        "CREATE TABLE docs AS SELECT rowid::INTEGER AS docid, id, coalesce(title, '') AS title, url, text "
        "FROM raw ORDER BY docid"
    )
    connection.execute("DROP TABLE raw")
    count_terms(connection)
    n_docs = connection.execute("SELECT count(*) FROM docs").fetchone()[0]
    if n_docs == 0:  # every search would answer "no results": a wrong file, not an empty web
        raise CorpusError("no documents (expected rows with id, title and text)")
    total = connection.execute("SELECT coalesce(sum(tf), 0) FROM tf").fetchone()[0]
    avgdl = max(float(total) / max(n_docs, 1), 1.0)
    connection.execute(f"""
        CREATE TABLE terms AS
        SELECT (row_number() OVER (ORDER BY term) - 1)::INTEGER AS term_id, term, df,
               ln(1 + ({n_docs} - df + 0.5) / (df + 0.5)) AS idf
        FROM (SELECT term, count(*) AS df FROM tf GROUP BY term) ORDER BY term
    """)
    k1, b = config.k1, config.b
    connection.execute(f"""
        CREATE TABLE postings AS
        WITH lengths AS (SELECT docid, sum(tf) AS len FROM tf GROUP BY docid)
        SELECT t.term_id, f.docid,
               (t.idf * f.tf * ({k1} + 1) / (f.tf + {k1} * (1 - {b} + {b} * l.len / {avgdl})))::FLOAT AS weight
        FROM tf f JOIN terms t USING (term) JOIN lengths l USING (docid)
        ORDER BY t.term_id, f.docid
    """)
    connection.execute("CREATE TABLE meta AS SELECT ? AS fingerprint, ? AS n_docs", [stamp, n_docs])


def count_terms(connection: duckdb.DuckDBPyConnection) -> None:
    """TEMP table tf(term, docid, tf): each document's term counts, tokenized in Python a batch at a time."""
    connection.execute("CREATE TEMP TABLE tf (term VARCHAR, docid INTEGER, tf INTEGER)")
    cursor = connection.cursor()
    for batch in relation_batches(cursor.sql("SELECT docid, title || ' ' || text FROM docs ORDER BY docid"), 4096):
        terms, docids, counts = [], [], []
        for docid, text in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
            for term, count in Counter(tokens(text)).items():
                terms.append(term)
                docids.append(docid)
                counts.append(count)
        rows = pa.table({"term": terms, "docid": pa.array(docids, pa.int32()), "tf": pa.array(counts, pa.int32())})
        connection.register("tf_batch", rows)
        connection.execute("INSERT INTO tf SELECT * FROM tf_batch")
        connection.unregister("tf_batch")
    cursor.close()


@dataclass(frozen=True)
class Postings:
    """The postings in memory: term -> term_id, and each term's (docids, weights) as one slice."""

    term_ids: dict[str, int]
    starts: np.ndarray  # starts[t]..starts[t + 1]: term t's postings
    docids: np.ndarray
    weights: np.ndarray

    @classmethod
    def load(cls, connection: duckdb.DuckDBPyConnection) -> "Postings":
        term_ids = dict(connection.execute("SELECT term, term_id FROM terms").fetchall())
        columns = connection.execute("SELECT term_id, docid, weight FROM postings ORDER BY term_id, docid").fetchnumpy()
        starts = np.searchsorted(np.asarray(columns["term_id"]), np.arange(len(term_ids) + 1))
        return cls(term_ids, starts, np.asarray(columns["docid"]), np.asarray(columns["weight"]))

    def top(self, terms: list[str], k: int) -> list[tuple[int, float]]:
        """(docid, score) of the k best documents, best first, ties by docid (as the index's SQL ranked them)."""
        spans = [
            (self.starts[t], self.starts[t + 1]) for t in (self.term_ids.get(term) for term in terms) if t is not None
        ]
        if not spans or k <= 0:
            return []
        docids = np.concatenate([self.docids[a:b] for a, b in spans])
        found, where = np.unique(docids, return_inverse=True)
        scores = np.bincount(where, weights=np.concatenate([self.weights[a:b] for a, b in spans]).astype(np.float64))
        order = np.lexsort((found, -scores))[:k]
        return [(int(found[i]), float(scores[i])) for i in order]


def is_current(target: Path, config: LocalCorpusConfig) -> bool:
    if not target.exists():
        return False
    try:
        with duckdb.connect(str(target), read_only=True) as connection:
            stored = connection.execute("SELECT fingerprint FROM meta").fetchone()[0]
    except duckdb.Error:
        return False  # an older or broken index: rebuild it
    return stored == fingerprint(config)


class CorpusIndex:
    """Search and look up documents of one indexed corpus (thread-safe: a cursor per call)."""

    def __init__(self, path: Path):
        self.path = path
        self.connection = duckdb.connect(str(path), read_only=True)
        self.postings = Postings.load(self.connection.cursor())

    @classmethod
    def open(cls, config: LocalCorpusConfig) -> CorpusIndex:
        """The corpus's index, built first when missing or stale. Raises CorpusError."""
        if not config.path.exists():
            raise CorpusError(f"{config.path}: corpus file not found")
        if not config.path.is_file():
            raise CorpusError(f"{config.path}: not a file (give a JSONL or parquet corpus)")
        target = index_path(config)
        if not is_current(target, config):
            build_index(config, target)
        return cls(target)

    def query_terms(self, query: str) -> list[str]:
        return list(dict.fromkeys(tokens(query)))

    def search(self, query: str, k: int) -> list[Hit]:
        top = self.postings.top(self.query_terms(query), int(k))
        if not top:
            return []
        docids = [docid for docid, _ in top]  # = ANY(list): ~6x faster than IN (literals) over the docs' texts
        rows = self.connection.cursor().execute(
            "SELECT docid, id, title, url, text FROM docs WHERE docid = ANY(?::INTEGER[])", [docids]
        )
        found = {row[0]: Document(*row[1:]) for row in rows.fetchall()}
        return [Hit(found[docid], score) for docid, score in top]

    def document(self, doc_id: str) -> Document | None:
        return self._first("id", doc_id)

    def document_by_url(self, url: str) -> Document | None:
        return self._first("url", url)

    def _first(self, column: str, value: str) -> Document | None:
        row = (
            self.connection.cursor()
            .execute(f"SELECT id, title, url, text FROM docs WHERE {column} = ? ORDER BY docid LIMIT 1", [value])
            .fetchone()
        )
        return Document(*row) if row else None

    def close(self) -> None:
        self.connection.close()
