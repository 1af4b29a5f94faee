-- Chunk-quality views (SPEC §3; the table of seed 000 §13.1). Re-created by the first writer
-- connection of each process, after views.sql. Lengths are length(content): Unicode code points, as Python's len().
--
-- Definitions shared by the views below:
--   heading chunk      : chunk_type = 'heading' (a chunk that is only a heading: MinerU text with
--                        text_level > 0, or a merged chain of headings)
--   heading-only chunk : a heading chunk with length(content) < 20 (seed "纯标题切片（<20字）");
--                        a heading chunk of >= 20 chars is not counted as heading-only
--   heading chain      : a maximal run of >= 2 consecutive heading chunks (any length) in
--                        chunk_index order within one document (seed "连续标题链（≥2个）": e.g. the
--                        21 consecutive appendix headings of 3.docx)
--   text-bearing chunk : chunk_type IN ('text', 'heading', 'list')
--   body fragment      : chunk_type = 'text' AND length(content) < 100  (seed "正文碎片（<100字）")

-- Runs of consecutive heading chunks per document, in chunk_index order, including runs of one
-- (gaps and islands: within a document, row_number() over all chunks minus row_number() over the
-- heading chunks is constant along a run of headings and changes whenever another chunk
-- interrupts it).
CREATE OR REPLACE VIEW heading_runs AS
WITH ordered AS (
    SELECT
        kb,
        doc_md5,
        source,
        chunk_index,
        chunk_type = 'heading' AS is_heading,
        row_number() OVER (PARTITION BY kb, doc_md5 ORDER BY chunk_index) AS pos
    FROM chunks
),
islands AS (
    SELECT
        kb,
        doc_md5,
        source,
        chunk_index,
        pos - row_number() OVER (PARTITION BY kb, doc_md5 ORDER BY chunk_index) AS island
    FROM ordered
    WHERE is_heading
)
SELECT
    kb,
    doc_md5,
    any_value(source) AS source,
    min(chunk_index)  AS first_chunk_index,
    max(chunk_index)  AS last_chunk_index,
    count(*)          AS run_length
FROM islands
GROUP BY kb, doc_md5, island;

-- One row per document (kb, source): exactly the metrics of seed 000 §13.1.
--   total_chunks          总切片数     every chunk of the document
--   text_chunks           文本切片     total - table - image/chart (headings, lists, equations, code
--                                      count as text, as in the seed: 1.docx 65 = 60 + 3 + 2)
--   table_chunks          表格切片     chunk_type = 'table'
--   image_chunks          图片切片     chunk_type IN ('image', 'chart')
--   heading_only_chunks   纯标题切片   heading-only chunks (see above)
--   heading_only_share    its share    heading_only_chunks / text_chunks, 3 decimals; NULL without
--                                      text chunks. The seed's percentages are shares of 文本切片:
--                                      16/60 = 27%, 61/144 = 42%, 97/385 = 25% (not of 总切片数,
--                                      which would give 25%, 32%, 24%).
--   fragments             正文碎片     body fragments (see above)
--   median_text_chars     文本中位长度 median length of text-bearing chunks (1 decimal; NULL if none)
--   max_text_chars        文本最大长度 max length of text-bearing chunks (NULL if none)
--   heading_chains        连续标题链   heading chains (see above)
--   longest_heading_chain              headings in the longest chain (0 when there is none)
CREATE OR REPLACE VIEW chunk_quality AS
WITH counts AS (
    SELECT
        d.kb,
        d.source,
        d.doc_md5,
        count(c.chunk_id)                                                        AS total_chunks,
        count(c.chunk_id) FILTER (WHERE c.chunk_type = 'table')                  AS table_chunks,
        count(c.chunk_id) FILTER (WHERE c.chunk_type IN ('image', 'chart'))      AS image_chunks,
        count(c.chunk_id) FILTER (WHERE c.chunk_type = 'heading' AND length(c.content) < 20)
                                                                                 AS heading_only_chunks,
        count(c.chunk_id) FILTER (WHERE c.chunk_type = 'text' AND length(c.content) < 100)
                                                                                 AS fragments,
        round(median(length(c.content)) FILTER (WHERE c.chunk_type IN ('text', 'heading', 'list')), 1)
                                                                                 AS median_text_chars,
        max(length(c.content)) FILTER (WHERE c.chunk_type IN ('text', 'heading', 'list'))
                                                                                 AS max_text_chars
    FROM documents d
    LEFT JOIN chunks c ON c.kb = d.kb AND c.doc_md5 = d.doc_md5
    GROUP BY d.kb, d.source, d.doc_md5
),
chains AS (
    SELECT kb, doc_md5, count(*) AS heading_chains, max(run_length) AS longest_heading_chain
    FROM heading_runs
    WHERE run_length >= 2
    GROUP BY kb, doc_md5
)
SELECT
    q.kb,
    q.source,
    q.total_chunks,
    q.total_chunks - q.table_chunks - q.image_chunks                             AS text_chunks,
    q.table_chunks,
    q.image_chunks,
    q.heading_only_chunks,
    round(q.heading_only_chunks / nullif(q.total_chunks - q.table_chunks - q.image_chunks, 0), 3)
                                                                                 AS heading_only_share,
    q.fragments,
    q.median_text_chars,
    q.max_text_chars,
    coalesce(h.heading_chains, 0)                                                AS heading_chains,
    coalesce(h.longest_heading_chain, 0)                                         AS longest_heading_chain
FROM counts q
LEFT JOIN chains h ON h.kb = q.kb AND h.doc_md5 = q.doc_md5
ORDER BY q.kb, q.source;

-- Chunk lengths per kb and chunk_type in fixed buckets, zero-filled so every (kb, chunk_type)
-- present has all eight buckets; ORDER BY kb, chunk_type, bucket_order sorts them numerically.
CREATE OR REPLACE VIEW chunk_length_hist AS
WITH buckets(bucket_order, bucket, min_chars, max_chars) AS (
    VALUES (1, '0-19', 0, 19), (2, '20-49', 20, 49), (3, '50-99', 50, 99), (4, '100-199', 100, 199),
           (5, '200-399', 200, 399), (6, '400-799', 400, 799), (7, '800-999', 800, 999),
           (8, '1000+', 1000, NULL)
),
lengths AS (
    SELECT kb, chunk_type, length(content) AS chars FROM chunks
),
types AS (
    SELECT DISTINCT kb, chunk_type FROM lengths
)
SELECT
    t.kb,
    t.chunk_type,
    b.bucket_order,
    b.bucket,
    b.min_chars,
    b.max_chars,
    count(l.chars) AS chunks
FROM types t
CROSS JOIN buckets b
LEFT JOIN lengths l
    ON l.kb = t.kb AND l.chunk_type = t.chunk_type
   AND l.chars >= b.min_chars AND (b.max_chars IS NULL OR l.chars <= b.max_chars)
GROUP BY ALL
ORDER BY t.kb, t.chunk_type, b.bucket_order;

-- One row per section of a document: (kb, source, section_path), '' being the text before the
-- first heading. A section that recurs later in the document spans from its first to its last chunk.
CREATE OR REPLACE VIEW section_stats AS
SELECT
    kb,
    source,
    section_path,
    count(*)             AS chunks,
    sum(length(content)) AS total_chars,
    min(chunk_index)     AS first_chunk_index,
    max(chunk_index)     AS last_chunk_index,
    min(page_start)      AS first_page,
    max(page_end)        AS last_page
FROM chunks
GROUP BY kb, source, section_path
ORDER BY kb, source, first_chunk_index;
