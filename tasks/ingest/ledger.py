"""Ledger: the record of one ingest run, kept as the flow reports what happened to each file.

It owns the run's `ingest_runs` row, one `FileOutcome` per file (rejected, skipped, landed, failed,
removed), the `ingest_failures` rows, and the manifest rows of files that did not land; it logs
each event through the logger it is given (the flow's run logger) and writes its rows through
`warehouse.db`. The run's totals are counted from the outcomes when it finishes.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from schemas.errors import IndexIncompleteError
from schemas.ingest import IngestFailure, IngestRun, KBRoot, ManifestEntry
from schemas.settings import Settings
from tasks.common.lock import clear_sync_pending, mark_sync_pending, sync_pending
from tasks.index import snapshot
from tasks.index.sync import IndexSummary
from tasks.ingest import manifest as mf
from tasks.ingest.discover import Discovery, Rejection, SourceFile
from tasks.ingest.land import LandedChunks
from tasks.ingest.parse import ParsedOutput
from tasks.ingest.workers import Prepared, describe_failure
from warehouse import db, published
from warehouse.chunks import count_chunks


SHOWN_FILES = 50  # past this many files, the outcome table lists failures and sums up the rest


@dataclass
class FileOutcome:
    source: str
    status: str  # landed / skipped (unchanged) / removed / failed / rejected
    chunks: int = 0
    parse_seconds: float = 0.0
    parse_cached: bool = False
    reason: str = ""
    change: str = ""  # added / changed (landed files)

    @property
    def is_failure(self) -> bool:
        """Failed, rejected, or landed but not indexed (the rows the outcome table always lists)."""
        return self.status in ("failed", "rejected") or self.reason.startswith("not indexed")


@dataclass
class IngestSummary:
    run_id: str
    kb: str
    home: str
    outcomes: list[FileOutcome] = field(default_factory=list)
    index: IndexSummary = field(default_factory=IndexSummary)
    runner: str = "default"

    def _count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def landed(self) -> int:
        return self._count("landed")

    @property
    def added(self) -> int:
        return sum(o.status == "landed" and o.change == mf.ADDED for o in self.outcomes)

    @property
    def changed(self) -> int:
        return sum(o.status == "landed" and o.change == mf.CHANGED for o in self.outcomes)

    @property
    def renamed(self) -> int:  # moved files: the same document under a new name
        return sum(o.status == "landed" and o.change == mf.RENAMED for o in self.outcomes)

    @property
    def skipped(self) -> int:
        return self._count("skipped")

    @property
    def removed(self) -> int:
        return self._count("removed")

    @property
    def failed(self) -> int:
        return sum(o.status in ("failed", "rejected") for o in self.outcomes)

    @property
    def headline(self) -> str:
        return (f"kbflow ingest run {self.run_id} into kb {self.kb!r}: {self.added} added, {self.changed} changed, "
                f"{self.skipped} unchanged, {self.removed} removed, {self.failed} failed")

    def shown_outcomes(self, limit: int = SHOWN_FILES) -> list[FileOutcome]:
        """The outcome table's rows: one per file up to `limit` files; past it, one per failure (at
        most `limit`) and one per status for the rest (files counted, chunks and parse time summed),
        so a 50,000-file run prints a few lines; every failure is in `ingest_failures` too."""
        if len(self.outcomes) <= limit:
            return self.outcomes
        failed = [o for o in self.outcomes if o.is_failure]
        rows = failed[:limit]
        if len(failed) > limit:
            rows.append(FileOutcome(f"… {len(failed) - limit:,} more failures", "failed",
                                    reason=f"all of them: table ingest_failures, run_id {self.run_id}"))
        groups: dict[tuple[str, str], list[FileOutcome]] = {}
        for o in self.outcomes:
            if not o.is_failure:
                groups.setdefault((o.status, o.change), []).append(o)
        for (status, change), group in groups.items():
            rows.append(FileOutcome(f"({len(group):,} files)", status, sum(o.chunks for o in group),
                                    sum(o.parse_seconds for o in group), change=change,
                                    reason=group[0].reason if status in ("skipped", "removed") else ""))
        return rows

    def outcome_rows(self) -> list[dict]:
        """The flow run's outcome table (`shown_outcomes`)."""
        return [{"source": o.source, "status": o.status, "change": o.change, "chunks": o.chunks,
                 "parse_s": round(o.parse_seconds, 2), "cached": o.parse_cached, "reason": o.reason}
                for o in self.shown_outcomes()]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class IngestLedger:
    """One ingest run's bookkeeping: `open` → `discovered` → `planned` → `landed`/`failed` per file
    → `save_notes` → `removed` → `indexed` → `finish`."""

    def __init__(self, settings: Settings, kb: str, run_id: str, runner: str = "default", flow_run_id: str = "",
                 log: logging.Logger | logging.LoggerAdapter | None = None):
        self.db_path, self.home, self.kb, self.settings = settings.db_path, settings.home, kb, settings
        db.set_busy_wait(settings.runtime.warehouse_wait_s)
        self.pipeline_key = mf.pipeline_key(settings)
        self.log = log or logging.getLogger("kbflow.ingest")
        self.run = IngestRun(run_id=run_id, kb=kb, flow_run_id=flow_run_id, started_at=_now(), finished_at=None,
                             status="running", files_seen=0, files_landed=0, files_failed=0, chunks_landed=0,
                             parse_backend=settings.ingest.parse_backend, task_runner=runner)
        self.summary = IngestSummary(run_id, kb, str(settings.home), runner=runner)
        self.failures: list[IngestFailure] = []
        self.notes: list[ManifestEntry] = []  # manifest rows of files that did not land this run
        self.landed_files: list[tuple[str, Path]] = []  # (source, chunks Parquet) for the index stage
        self._by_path: dict[str, ManifestEntry] = {}
        self._reindexed = 0
        self.interrupted = 0  # earlier runs found dead (`open`)
        self.quiet = False  # nothing to land, remove or re-index, and the stores agree (`planned`)

    def open(self) -> list[ManifestEntry]:
        """Mark the runs that died `interrupted`, save this run's row (`running`) and return the KB's
        manifest as the run starts."""
        if interrupted := db.mark_interrupted(self.db_path):  # we hold the lock: those runs are dead
            self.interrupted = interrupted
            self.log.warning("%d earlier ingest run(s) of %s were interrupted; this run completes their work",
                             interrupted, self.home)
        db.save_run(self.db_path, self.run)
        manifest = db.load_manifest(self.db_path, self.kb)
        self._by_path = {e.path: e for e in manifest}
        return manifest

    def source_root(self, paths: list[str], manifest: list[ManifestEntry]) -> Path:
        """The KB's root for source names (`mf.resolve_root`), recorded when it is new or changed."""
        recorded = db.kb_root(self.db_path, self.kb)
        root = mf.resolve_root(paths, manifest, recorded, self.settings.runtime.source_root)
        if str(root) != recorded:
            db.record_kb_root(self.db_path, KBRoot(self.kb, str(root), _now()))
            self.log.info("kb %r: source names are relative to %s", self.kb, root)
        return root

    def fail(self, path: str, md5: str, stage: str, kind: str, reason: str, source: str) -> None:
        """A failure row and the file's outcome: `rejected` at discovery, `failed` at a later stage."""
        self.log.warning("%s: %s (%s)", path, reason, kind)
        self.failures.append(IngestFailure(self.run.run_id, self.kb, path, md5, stage, kind, reason, _now()))
        self.summary.outcomes.append(FileOutcome(source, "rejected" if stage == "discover" else "failed",
                                                 reason=reason))

    def _note(self, path: str, source: str, md5: str, status: str, reason: str) -> None:
        old = self._by_path.get(path)
        # keep the name of a version still landed under it, so a later removal finds it
        self.notes.append(ManifestEntry(self.kb, path, source or (old.source if old else ""), md5, status, 0,
                                        self.pipeline_key, self.run.run_id, _now(), reason[:500]))

    def discovered(self, found: Discovery) -> None:
        self.run.files_seen = len(found.sources) + len(found.rejected)
        for rejection in found.rejected:
            self.reject(rejection)

    def reject(self, rejection: Rejection) -> None:
        """A path discovery turned down; a file that is there gets a manifest row saying why."""
        self.fail(rejection.path, rejection.md5, "discover", rejection.error_kind, rejection.reason, rejection.path)
        if Path(rejection.path).is_file() or Path(rejection.path).is_symlink():
            status = mf.DUPLICATE if rejection.error_kind == "DuplicateFileError" else mf.REJECTED
            self._note(rejection.path, "", rejection.md5, status, rejection.reason)

    def planned(self, plan: mf.Plan) -> None:
        """What the plan settles before any parsing: folders kept, unchanged files, duplicates; and
        whether the run is `quiet` (else the KB is marked: its stores are about to change)."""
        self._reindexed = len(plan.reindex)
        chunks = None if plan.todo or plan.removed or plan.reindex else self.stores_agree()
        self.quiet = chunks is not None
        if self.quiet:
            self.summary.index = IndexSummary(bm25_chunks=chunks)
        else:
            mark_sync_pending(self.settings.home, self.kb)
        rechunk = sum(1 for t in plan.todo if (e := self._by_path.get(str(t.src.path))) is not None
                      and e.md5 == t.src.md5 and e.pipeline_key and e.pipeline_key != self.pipeline_key)
        if rechunk:  # said before any work starts: the operator can stop it
            self.log.warning("settings that shape chunks or vectors ([ingest], [index], [llm]) changed since the last "
                             "ingest of kb %r: %d document(s) will be re-chunked and re-embedded", self.kb, rechunk)
        for root in plan.kept_roots:
            self.log.warning("%s found no files: nothing under it is removed from kb %r (an unmounted share must "
                             "not empty the KB; use `kbflow rm` to delete documents)", root, self.kb)
        for src, entry in plan.skipped:
            self.skipped(src, entry)
        for src, holder in plan.duplicates:
            self.duplicate(src, holder)

    def stores_agree(self) -> int | None:
        """The KB's chunk count when its stores agree by cheap checks — no write left unfinished
        (`sync_pending`), no earlier run died, and DuckDB, the published vectors (exported from Chroma
        by the last writer) and BM25 hold as many chunks — else None (the index stage repairs)."""
        from tasks.index.bm25 import BM25Index
        import pyarrow.parquet as pq

        gen = published.current(self.db_path)
        if self.interrupted or sync_pending(self.settings.home, self.kb) or gen is None:
            return None
        try:
            chunks = count_chunks(self.db_path, self.kb)
            vectors = pq.read_metadata(gen / snapshot.VECTORS / f"{self.kb}.parquet").num_rows
            bm25 = BM25Index.read_count(self.settings.bm25_dir / self.kb).chunks
        except Exception:  # a store missing or unreadable: the index stage finds out which
            return None
        return chunks if chunks == vectors == bm25 else None

    def skipped(self, src: SourceFile, entry: ManifestEntry) -> None:
        self.summary.outcomes.append(FileOutcome(src.source, "skipped", entry.chunk_count, reason="unchanged"))

    def duplicate(self, src: SourceFile, holder: str) -> None:
        reason = f"same content as {holder}, already in kb {self.kb!r} (skipped)"
        self.fail(str(src.path), src.md5, "discover", "DuplicateFileError", reason, src.source)
        self._note(str(src.path), "", src.md5, mf.DUPLICATE, reason)

    def failed(self, src: SourceFile, stage: str, exc: Exception) -> None:
        """A file whose parse, chunk or land stage raised (the run goes on with the others)."""
        self.file_failed(src, *describe_failure(stage, exc))

    def file_failed(self, src: SourceFile, stage: str, kind: str, reason: str) -> None:
        self.fail(str(src.path), src.md5, stage, kind, reason, src.source)
        self._note(str(src.path), src.source, src.md5, mf.FAILED, reason)

    def batch(self, prepared: list[Prepared], errors: dict[str, Exception], embedded: int = 0) -> list[tuple[str, Path]]:
        """A batch of files after landing: each landed, or failed at its stage (`errors`: at landing);
        a file a stop left unfinished gets no row (the next run does it). `embedded`: texts a Dask
        worker encoded for the batch. Returns the (source, chunks Parquet) of the files landed."""
        landed = []
        self.summary.index.embedded += embedded
        for p in prepared:
            if p.stage == "interrupted":
                continue
            if not p.ok:
                self.file_failed(p.todo.src, p.stage, p.error_kind, p.reason)
            elif p.todo.src.source in errors:
                self.failed(p.todo.src, "land", errors[p.todo.src.source])
            else:
                self.landed(p.todo, p.parsed, p.chunked)
                landed.append((p.todo.src.source, p.chunked.chunks_path))
        if prepared:
            self.log.info("landed %d of %d files (%d chunks) in one batch; %d landed so far", len(landed),
                          len(prepared), sum(p.chunked.chunk_count for p in prepared if p.ok), len(self.landed_files))
        return landed

    def landed(self, todo: mf.Todo, parsed: ParsedOutput, chunked: LandedChunks, embedded: int = 0) -> None:
        """A file landed in DuckDB; `embedded`: texts a Dask worker encoded for it. (Logged at debug
        level: a run of 50,000 files must not print a line per file; `batch` logs one per batch.)"""
        src = todo.src
        self.summary.index.embedded += embedded
        self.log.debug("%s: %s, %d chunks (%s, %s)", src.source, todo.change, chunked.chunk_count, parsed.key.backend,
                       "cached parse" if parsed.cached else f"parsed in {parsed.seconds:.1f}s")
        self.summary.outcomes.append(FileOutcome(src.source, "landed", chunked.chunk_count, parsed.seconds,
                                                 parsed.cached, change=todo.change))
        self.run.enrich_calls += chunked.enrich_calls
        self.run.enrich_fallbacks += chunked.enrich_fallbacks
        self.landed_files.append((src.source, chunked.chunks_path))

    def save_notes(self) -> None:
        """Write the manifest rows of the files that did not land (before removals, which may delete them)."""
        db.upsert_manifest(self.db_path, self.notes)

    def removed(self, entries: list[ManifestEntry], errors: dict[str, str]) -> None:
        """Manifest paths gone from their folder, removed unless `errors` holds their removal's error."""
        for entry in entries:
            if entry.path in errors:
                self.fail(entry.path, entry.md5, "remove", errors[entry.path].split(":", 1)[0], errors[entry.path],
                          entry.source or entry.path)
            elif entry.source:  # (a file that was only ever rejected leaves just its manifest row)
                self.log.info("%s: removed (no longer under the given folder)", entry.source)
                self.summary.outcomes.append(FileOutcome(entry.source, "removed", entry.chunk_count,
                                                         reason="file no longer found"))

    def indexed(self, index: IndexSummary | None, errors: dict[str, str]) -> None:
        """The index stage's summary (None when the stage failed as a whole) and each document's error
        (`*`: every document), landed in DuckDB but missing from the indexes: the next run indexes them.
        One warning per reason, not per document (a 50,000-file run without its model logs one line)."""
        if index is not None:
            index.embedded += self.summary.index.embedded  # encoded on the Dask workers
            self.summary.index = index
        by_reason: dict[str, list[str]] = {}
        for source, reason in errors.items():
            by_reason.setdefault(reason, []).append(source)
            self.failures.append(IngestFailure(self.run.run_id, self.kb, source, "", "index",
                                               reason.split(":", 1)[0], reason, _now()))
        for reason, sources in by_reason.items():
            more = f" and {len(sources) - 1} more document(s)" if len(sources) > 1 else ""
            self.log.warning("%s%s: not indexed: %s", sources[0], more, reason)
        for outcome in self.summary.outcomes:
            reason = errors.get(outcome.source, errors.get("*"))
            if reason is not None and outcome.status in ("landed", "skipped"):
                outcome.reason = f"not indexed: {reason}"

    def finish(self, interrupted: bool = False) -> IngestRun:
        """Record the failures and the run's final row (totals, status); log the run's summary line.
        `interrupted`: stopped by SIGTERM at a safe point (the next run completes its work)."""
        db.record_failures(self.db_path, self.failures)
        run, s = self.run, self.summary
        run.files_landed, run.files_failed = s.landed, s.failed
        run.files_added, run.files_changed = s.added, s.changed
        run.files_skipped, run.files_removed = s.skipped, s.removed
        run.files_reindexed = self._reindexed + s.index.repaired
        run.chunks_landed = sum(o.chunks for o in s.outcomes if o.status == "landed")
        run.chunks_indexed, run.chunks_embedded = s.index.chunks, s.index.embedded
        run.finished_at = _now()
        run.status = ("interrupted" if interrupted else "completed" if not self.failures
                      else "completed_with_failures")
        db.save_run(self.db_path, run)
        if self.quiet:  # the indexes did not change: a warehouse-only generation links them
            published.publish(self.db_path)
        else:
            snapshot.publish(self.settings, self.kb)
        if not interrupted and not any(f.stage == "index" for f in self.failures):
            clear_sync_pending(self.settings.home, self.kb)  # the stores agree again (and are published)
        self.log.info("kb %r: %d added, %d changed, %d unchanged (skipped), %d removed, %d failed or rejected",
                      self.kb, s.added, s.changed, s.skipped, s.removed, s.failed)
        return run

    def raise_if_unindexed(self) -> None:
        """Documents that landed but never reached the indexes fail the run (exit 1, Prefect Failed)."""
        unindexed = [f for f in self.failures if f.stage == "index"]
        if unindexed:
            exc = IndexIncompleteError(self.kb, f"{len(unindexed)} document(s) landed but not indexed "
                                                f"({unindexed[0].reason}); the next `kbflow ingest` indexes them")
            exc.summary = self.summary
            raise exc
