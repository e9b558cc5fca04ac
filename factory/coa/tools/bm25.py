"""A BM25 index of a local corpus, built once in DuckDB and cached on disk.

Why plain SQL and not DuckDB's `fts` extension: the extension is downloaded at
run time (no network here), and the PyPI `duckdb-extension-fts` wheels stop at
1.5.5 while this project runs duckdb 2.x. The index is three tables:

    docs(docid, id, title, url, text)
    terms(term_id, term, df)                  sorted by term
    postings(term_id, docid, weight)          sorted by term_id

`weight` is the document's whole BM25 contribution for the term (idf and length
normalisation included), so a query is one filtered scan and a sum. Sorting by
term_id lets DuckDB's zone maps skip the row groups of other terms.

The index lives in `<corpus>.bm25.duckdb` (or `index_dir`); it records the
corpus's path, size, mtime and k1/b, and is rebuilt when any of them changes.
It is built under a temporary name and renamed, so a crash leaves no half index.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .config import LocalCorpusConfig

INDEX_VERSION = 1
TOKEN_PATTERN = r"[\pL\pN]+"  # letters and digits of any script; RE2 syntax
MAX_TERM_CHARS = 64  # longer "words" are hashes and base64: never queried
STOPWORDS = (
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "he", "in", "is", "it", "its",
    "of", "on", "or", "s", "she", "that", "the", "their", "this", "to", "was", "were", "which", "will", "with",
)  # fmt: skip
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


def tokens_sql(expression: str) -> str:
    return f"regexp_extract_all(lower({expression}), {sql_string(TOKEN_PATTERN)})"


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
    stopwords = ", ".join(sql_string(word) for word in STOPWORDS)
    connection.execute(f"""
        CREATE TEMP TABLE tf AS
        SELECT term, docid, count(*)::INTEGER AS tf
        FROM (SELECT docid, unnest({tokens_sql("title || ' ' || text")}) AS term FROM docs)
        WHERE length(term) <= {MAX_TERM_CHARS} AND term NOT IN ({stopwords})
        GROUP BY term, docid
    """)
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
        # The same DuckDB expression as the index, so both sides split words alike.
        row = self.connection.cursor().execute(f"SELECT {tokens_sql('?')}", [query]).fetchone()
        return list(dict.fromkeys(term for term in row[0] if term not in STOPWORDS))

    def search(self, query: str, k: int) -> list[Hit]:
        cursor = self.connection.cursor()
        terms = self.query_terms(query)
        ids = [row[0] for row in cursor.execute(
            "SELECT term_id FROM terms WHERE term IN (SELECT unnest(?::VARCHAR[]))", [terms]).fetchall()]  # fmt: skip
        if not ids:
            return []
        id_list = ", ".join(str(int(term_id)) for term_id in ids)  # literals: the scan can use zone maps
        rows = cursor.execute(f"""
            WITH top AS (SELECT docid, sum(weight) AS score FROM postings WHERE term_id IN ({id_list})
                         GROUP BY docid ORDER BY score DESC, docid LIMIT {int(k)})
            SELECT d.id, d.title, d.url, d.text, top.score FROM top JOIN docs d USING (docid)
            ORDER BY top.score DESC, top.docid
        """).fetchall()
        return [Hit(Document(*row[:4]), float(row[4])) for row in rows]

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
