-- Views over the ingest tables. Re-created by the first writer connection of each process, so they follow the code.

-- Per-document chunk counts and lengths (kbflow stats).
CREATE OR REPLACE VIEW document_stats AS
SELECT
    d.kb,
    d.source,
    d.doc_type,
    d.parse_backend,
    count(c.chunk_id)                                        AS chunks,
    count(c.chunk_id) FILTER (WHERE c.chunk_type = 'text')     AS text,
    count(c.chunk_id) FILTER (WHERE c.chunk_type = 'heading')  AS heading,
    count(c.chunk_id) FILTER (WHERE c.chunk_type = 'table')    AS "table",
    count(c.chunk_id) FILTER (WHERE c.chunk_type IN ('image', 'chart')) AS image,
    count(c.chunk_id) FILTER (WHERE c.chunk_type = 'equation') AS equation,
    count(c.chunk_id) FILTER (WHERE c.chunk_type NOT IN ('text', 'heading', 'table', 'image', 'chart', 'equation')) AS other,
    CAST(coalesce(median(length(c.content)), 0) AS BIGINT)  AS median_chars,
    coalesce(max(length(c.content)), 0)                      AS max_chars,
    d.dropped_furniture,
    d.dropped_empty + d.dropped_ghost                        AS dropped_empty
FROM documents d
LEFT JOIN chunks c ON c.kb = d.kb AND c.doc_md5 = d.doc_md5
GROUP BY ALL
ORDER BY d.kb, d.source;
