"""Reads of a knowledge base's landed documents and chunks (`documents`, `chunks`, `chunk_quality`).

Every function opens a short read-only connection (`chunk_term_batches` keeps it while its batches
are read): a missing warehouse raises FileNotFoundError.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from schemas.arrow import from_table
from schemas.chunk import CANDIDATE_COLUMNS, INDEX, Chunk
from warehouse import db


def chunk_files(db_path: Path, kb: str) -> list[Path]:
    """The chunk Parquet file of each document of `kb`, by source."""
    _, rows = db.query(db_path, "SELECT chunks_path FROM documents WHERE kb = ? ORDER BY source", [kb])
    return [Path(p) for (p,) in rows]


def kb_chunk_ids(db_path: Path, kb: str) -> set[str]:
    _, rows = db.query(db_path, "SELECT chunk_id FROM chunks WHERE kb = ?", [kb])
    return {chunk_id for (chunk_id,) in rows}


def chunk_ids_by_source(db_path: Path, kb: str) -> dict[str, set[str]]:
    """source → chunk ids of the documents `kb` holds."""
    by_source: dict[str, set[str]] = {}
    for source, chunk_id in db.query(db_path, "SELECT source, chunk_id FROM chunks WHERE kb = ?", [kb])[1]:
        by_source.setdefault(source, set()).add(chunk_id)
    return by_source


def chunk_term_batches(db_path: Path, kb: str, rows: int = 8192) -> Iterator[pa.RecordBatch]:
    """(chunk_id, tokens) of every chunk of `kb`, in document order, as Arrow record batches of about
    `rows` chunks: a reader holds one batch of terms at a time, never all of them as Python lists."""
    with db.connect(db_path, read_only=True) as con:
        yield from con.sql("SELECT chunk_id, tokens FROM chunks WHERE kb = ? ORDER BY source, chunk_index",
                           params=[kb]).to_arrow_reader(rows)


def chunk_pages(db_path: Path, kb: str) -> list[tuple[str, str, int, int]]:
    """(chunk_id, source, page_start, page_end) of every chunk of `kb`."""
    _, rows = db.query(db_path, "SELECT chunk_id, source, page_start, page_end FROM chunks WHERE kb = ?", [kb])
    return rows


def count_chunks(db_path: Path, kb: str | None = None) -> int:
    """Chunks of `kb`, or of every knowledge base."""
    if kb is None:
        return db.query(db_path, "SELECT count(*) FROM chunks")[1][0][0]
    return db.query(db_path, "SELECT count(*) FROM chunks WHERE kb = ?", [kb])[1][0][0]


def fetch_chunks(db_path: Path, kb: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
    """Candidate records (`CANDIDATE_COLUMNS`) by id, in one query for a whole batch."""
    ids = sorted(set(chunk_ids))
    if not ids:
        return {}
    cols = ", ".join(CANDIDATE_COLUMNS)
    with db.connect(db_path, read_only=True) as con:
        table = con.sql(f"SELECT {cols} FROM chunks WHERE kb = ? AND chunk_id IN (SELECT unnest(?::VARCHAR[]))",
                        params=[kb, ids]).to_arrow_table()
    return {c.chunk_id: c for c in from_table(table, Chunk)}


COVER, CONTENTS, FOREWORD = "cover", "contents", "foreword"
# a contents section's own heading ("Contents", "目 录 Contents", "目  次"), not a section under it; in RE2 (DuckDB's
# regexp) \s is ASCII only, \pZ the ideographic and em spaces a letter-spaced heading ("前\u2003\u2003言") is set with
_CONTENTS_SECTION = r"^[\s\pZ]*(contents|table of contents|目[\s\pZ]*录|目[\s\pZ]*次)[\s\pZ\w]*$"
_FOREWORD_SECTION = r"^[\s\pZ]*(foreword|preface|前[\s\pZ]*言)[\s\pZ]*$"  # a standard's or a book's foreword


def front_matter(db_path: Path, kb: str, sources: Sequence[str], part: str, n: int) -> dict[str, list[Chunk]]:
    """Candidate records of each source's cover (its first `n` chunks), contents (its first `n` index chunks
    or chunks of a contents section) or foreword (the first `n` chunks of its section), in document order; one query."""
    wanted = sorted(set(sources))
    if not wanted or n <= 0:
        return {}
    where, params = ("chunk_index < ?", [n]) if part == COVER else \
        ("regexp_matches(lower(section_path), ?)", [_FOREWORD_SECTION]) if part == FOREWORD else \
        ("(chunk_type = ? OR regexp_matches(lower(section_path), ?))", [INDEX, _CONTENTS_SECTION])
    cols = ", ".join(CANDIDATE_COLUMNS)
    with db.connect(db_path, read_only=True) as con:
        table = con.sql(f"SELECT {cols} FROM chunks WHERE kb = ? AND source IN (SELECT unnest(?::VARCHAR[])) "
                        f"AND {where} ORDER BY source, chunk_index", params=[kb, wanted, *params]).to_arrow_table()
    out: dict[str, list[Chunk]] = {}
    for c in from_table(table, Chunk):
        if len(out.setdefault(c.source, [])) < n:
            out[c.source].append(c)
    return out


def small_documents(db_path: Path, kb: str, sources: Sequence[str], max_chars: int) -> dict[str, list[Chunk]]:
    """Candidate records of every chunk of each source whose text is `max_chars` long at most, in document
    order; one query."""
    wanted = sorted(set(sources))
    if not wanted or max_chars <= 0:
        return {}
    with db.connect(db_path, read_only=True) as con:
        table = con.sql(f"SELECT {', '.join(CANDIDATE_COLUMNS)} FROM chunks WHERE kb = ? AND source IN "
                        "(SELECT unnest(?::VARCHAR[])) QUALIFY sum(length(content)) OVER (PARTITION BY source) <= ? "
                        "ORDER BY source, chunk_index", params=[kb, wanted, max_chars]).to_arrow_table()
    out: dict[str, list[Chunk]] = {}
    for c in from_table(table, Chunk):
        out.setdefault(c.source, []).append(c)
    return out


def document_covers(db_path: Path, kb: str, n: int, max_chars: int) -> dict[str, list[tuple[str, str]]]:
    """Per source of `kb`, (section path, opening `max_chars` of the text) of its first `n` chunks; one query."""
    out: dict[str, list[tuple[str, str]]] = {}
    with db.connect(db_path, read_only=True) as con:
        for source, section, text in con.execute(
                "SELECT source, section_path, substr(content, 1, ?) FROM chunks WHERE kb = ? AND chunk_index < ? "
                "ORDER BY source, chunk_index", [max_chars, kb, n]).fetchall():
            out.setdefault(source, []).append((section, text))
    return out


def kb_chunks(db_path: Path, kb: str) -> list[Chunk]:
    """Candidate records (`CANDIDATE_COLUMNS`) of every chunk of `kb`, in document order."""
    with db.connect(db_path, read_only=True) as con:
        table = con.sql(f"SELECT {', '.join(CANDIDATE_COLUMNS)} FROM chunks WHERE kb = ? ORDER BY source, chunk_index",
                        params=[kb]).to_arrow_table()
    return from_table(table, Chunk)


@dataclass(frozen=True)
class SectionSeed:
    """A ranked chunk whose section neighbours a question's context wants."""

    question: int  # index of the question in its batch
    rank: int  # the seed's rank among its question's seeds
    chunk_id: str
    source: str
    section_path: str
    chunk_index: int


@dataclass(frozen=True)
class Neighbour:
    question: int
    seed_id: str
    chunk: Chunk  # CANDIDATE_COLUMNS filled


def _neighbours(db_path: Path, sql: str, params: list) -> list[Neighbour]:
    """Run a query selecting (qi, seed_id, CANDIDATE_COLUMNS…) as the chunks found for questions' seeds."""
    with db.connect(db_path, read_only=True) as con:
        rows = con.sql(sql, params=params).to_arrow_table()
    chunks = from_table(rows.drop_columns(["qi", "seed_id"]), Chunk)
    return [Neighbour(qi, seed_id, chunk)
            for qi, seed_id, chunk in zip(rows.column("qi").to_pylist(), rows.column("seed_id").to_pylist(), chunks)]


def section_neighbours(db_path: Path, kb: str, seeds: Sequence[SectionSeed], *, before: int,
                       after: int) -> list[Neighbour]:
    """Per seed, the other chunks of its source from `before` before it to `after` after it whose
    section path is the seed's or under it (any, when the seed has none); by question, then seed
    rank, then the chunks after the seed before those before it, nearest first. One query."""
    if not seeds:
        return []
    cols = ", ".join(f"c.{name}" for name in CANDIDATE_COLUMNS)
    # the seeds travel as parallel list parameters (no registered Python objects: the read-only
    # connection has external access disabled)
    sql = f"""
        WITH seeds AS (
            SELECT unnest(?::BIGINT[]) AS qi, unnest(?::BIGINT[]) AS seed_rank, unnest(?::VARCHAR[]) AS seed_id,
                   unnest(?::VARCHAR[]) AS seed_source, unnest(?::VARCHAR[]) AS seed_section,
                   unnest(?::BIGINT[]) AS seed_index)
        SELECT s.qi, s.seed_id, {cols}
        FROM seeds s JOIN chunks c
          ON c.kb = ? AND c.source = s.seed_source
         AND c.chunk_index BETWEEN s.seed_index - ? AND s.seed_index + ? AND c.chunk_index <> s.seed_index
         AND (s.seed_section = '' OR c.section_path = s.seed_section
              OR starts_with(c.section_path, s.seed_section || ' > '))
        ORDER BY s.qi, s.seed_rank, c.chunk_index < s.seed_index, abs(c.chunk_index - s.seed_index)"""
    params = [[s.question for s in seeds], [s.rank for s in seeds], [s.chunk_id for s in seeds],
              [s.source for s in seeds], [s.section_path for s in seeds], [s.chunk_index for s in seeds],
              kb, before, after]
    return _neighbours(db_path, sql, params)


@dataclass(frozen=True)
class HeadingAsk:
    """A heading a question writes out ("标题“2 Section 2”下的第一段"), or an article it names ("第六十条"),
    looked for in one source of its hits."""

    question: int  # index of the question in its batch
    seed_id: str  # the hit whose source is searched
    source: str
    heading: str  # as `heading_key` writes it; an article's number as a law writes it; a caption's opening (RE2)


def heading_key(heading: str) -> str:
    """A heading as compared: lower case, no white space, a typographic apostrophe as "'"."""
    return re.sub(r"\s+", "", heading.lower()).replace("’", "'")


# the asks as a table `asks` (qi, seed_id, source, heading) for one query, and its four list parameters
_ASKS = """
        WITH asks AS (
            SELECT unnest(?::BIGINT[]) AS qi, unnest(?::VARCHAR[]) AS seed_id, unnest(?::VARCHAR[]) AS source,
                   unnest(?::VARCHAR[]) AS heading)"""


def _asks_params(asks: Sequence[HeadingAsk]) -> list:
    return [[a.question for a in asks], [a.seed_id for a in asks], [a.source for a in asks], [a.heading for a in asks]]


def headed_chunks(db_path: Path, kb: str, asks: Sequence[HeadingAsk], n: int) -> list[Neighbour]:
    """Per ask, the first `n` chunks of its source whose own section (the last heading of their section path)
    is the heading asked, with its number or without it ("Chart with caption" asks "2.3.1 Chart with caption"),
    in document order; one query."""
    if not asks:
        return []
    cols = ", ".join(f"c.{name}" for name in CANDIDATE_COLUMNS)
    own = "lower(list_last(string_split(c.section_path, ' > ')))"
    key = "replace(regexp_replace({}, '\\s+', '', 'g'), '’', chr(39))"  # `heading_key` in SQL
    unnumbered = f"regexp_replace({own}, '^\\s*[0-9]+(\\.[0-9]+)*\\.?\\s+', '')"
    sql = f"""{_ASKS}
        SELECT a.qi, a.seed_id, {cols}
        FROM asks a JOIN chunks c ON c.kb = ? AND c.source = a.source
         AND a.heading IN ({key.format(own)}, {key.format(unnumbered)})
        QUALIFY row_number() OVER (PARTITION BY a.qi, c.source, a.heading ORDER BY c.chunk_index) <= ?
        ORDER BY a.qi, c.source, c.chunk_index"""
    return _neighbours(db_path, sql, [*_asks_params(asks), kb, n])


def numbered_chunks(db_path: Path, kb: str, asks: Sequence[HeadingAsk]) -> list[Neighbour]:
    """Per ask whose `heading` is a section's number ("6.3.2.1.7"), the first chunk of its source whose own section
    (the last heading of its section path) is numbered so (not a contents line listing it); one query."""
    if not asks:
        return []
    cols = ", ".join(f"c.{name}" for name in CANDIDATE_COLUMNS)
    own = "trim(list_last(string_split(c.section_path, ' > ')))"
    sql = f"""{_ASKS}
        SELECT a.qi, a.seed_id, {cols}
        FROM asks a JOIN chunks c ON c.kb = ? AND c.source = a.source AND starts_with({own}, a.heading)
         AND regexp_matches(substr({own}, length(a.heading) + 1), '^(?:[\\s\u3000]|$)')
        QUALIFY row_number() OVER (PARTITION BY a.qi, a.source, a.heading ORDER BY c.chunk_index) = 1
        ORDER BY a.qi, c.source, c.chunk_index"""
    return _neighbours(db_path, sql, [*_asks_params(asks), kb])


def article_chunks(db_path: Path, kb: str, asks: Sequence[HeadingAsk]) -> list[Neighbour]:
    """Per ask whose `heading` is an article's number as a law writes it ("第六十条"), the first chunk of its
    source where that article begins (the number opens the chunk, a line or a sentence, and a space follows
    it: not "依照本法第六十条的规定"); one query."""
    if not asks:
        return []
    cols = ", ".join(f"c.{name}" for name in CANDIDATE_COLUMNS)
    sql = f"""{_ASKS}
        SELECT a.qi, a.seed_id, {cols}
        FROM asks a JOIN chunks c ON c.kb = ? AND c.source = a.source AND contains(c.content, a.heading)
         AND regexp_matches(c.content, '(?:^|[\\s。；;：:])' || a.heading || '[\\s\u3000]')
        QUALIFY row_number() OVER (PARTITION BY a.qi, a.source, a.heading ORDER BY c.chunk_index) = 1
        ORDER BY a.qi, c.source, c.chunk_index"""
    return _neighbours(db_path, sql, [*_asks_params(asks), kb])


def captioned_chunks(db_path: Path, kb: str, asks: Sequence[HeadingAsk]) -> list[Neighbour]:
    """Per ask whose `heading` is a pattern (RE2, matched case-insensitively) a figure's caption opens with ("Figure
    4-68 …", "图7:…"), the first chunk of its source whose caption opens with it, else the first one of whose lines
    does (a Markdown copy's caption line, or a passage citing the figure: "Figure 4-68 shows …"); one query."""
    if not asks:
        return []
    cols, names = ", ".join(f"c.{name}" for name in CANDIDATE_COLUMNS), ", ".join(CANDIDATE_COLUMNS)
    sql = f"""{_ASKS}, found AS (
            SELECT a.qi, a.seed_id, a.heading, {cols},
                   regexp_matches(coalesce(c.caption, ''), '(?i)^\\s*' || a.heading) AS by_caption
            FROM asks a JOIN chunks c ON c.kb = ? AND c.source = a.source)
        SELECT qi, seed_id, {names} FROM found
        WHERE by_caption OR regexp_matches(content, '(?im)^\\s*' || heading)
        QUALIFY row_number() OVER (PARTITION BY qi, source, heading ORDER BY by_caption DESC, chunk_index) = 1
        ORDER BY qi, source, chunk_index"""
    return _neighbours(db_path, sql, [*_asks_params(asks), kb])


def chunk_quality(db_path: Path, kb: str | None = None) -> tuple[list[str], list[tuple]]:
    """(columns, rows) of the `chunk_quality` view, one row per document, by kb and source.
    duckdb.CatalogException when the warehouse predates the view."""
    where, params = ("WHERE kb = ?", [kb]) if kb else ("", [])
    return db.query(db_path, f"SELECT * FROM chunk_quality {where} ORDER BY kb, source", params)


def chunk_quality_totals(db_path: Path) -> list[tuple]:
    """Per kb (descending): chunks, heading-only chunks, their share of text chunks, fragments,
    heading chains, the longest chain."""
    _, rows = db.query(db_path, """
        SELECT kb, sum(total_chunks), sum(heading_only_chunks),
               round(sum(heading_only_chunks) / sum(text_chunks), 3), sum(fragments), sum(heading_chains),
               max(longest_heading_chain)
        FROM chunk_quality GROUP BY kb ORDER BY kb DESC""")
    return rows
