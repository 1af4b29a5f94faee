"""Re-ingestion plan: compare what discovery found with the KB's manifest (SPEC §2 item 11).

A file is *unchanged* — skipped without parsing, chunking or embedding — when the manifest holds
its path with the same MD5 and pipeline key, landed, and DuckDB still holds that version under
the same source name with its Parquet on disk, read by no older layout of the OCR backend.
Everything else found is processed: *added* when the KB holds no version under its source name,
*changed* when it replaces one.

A manifest path is *removed* (deleted from DuckDB, Chroma and BM25) only when it lies under a
folder given to this run, that folder yielded files, and discovery did not find it there. A file
given on its own never removes anything else; neither does a folder that is empty or missing
(an unmounted share must not wipe the KB). A file found but rejected (corrupt, too large, ...)
keeps its last landed version: a bad edit does not delete the good one.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from schemas.ingest import ManifestEntry
from schemas.settings import REINGEST_GROUPS, Settings
from tasks.ingest.discover import Discovery, SourceFile
from tasks.ingest.parse.ocr import read_by_older_layout

# Landed (DuckDB) and index states of a manifest row; the others describe the last attempt.
LANDED, INDEXED, FAILED, REJECTED, DUPLICATE = "landed", "indexed", "failed", "rejected", "duplicate"
ADDED, CHANGED, RENAMED = "added", "changed", "renamed"

# Bump when the chunking code changes what it makes of the same input, so every file is redone.
PIPELINE_VERSION = "4"  # 2: MinerU tables whose cell stacks the labels of the rows it spans; 3: a Markdown table's
# caption paragraph ("Table 2-2 …") read as its caption (text_reader.READER_VERSION 2); 4: BM25 terms of letter-spaced
# words ("前  言" is 前言, tasks.common.text.TOKENIZER_VERSION)


def pipeline_key(settings: Settings) -> str:
    """The re-ingestion key: a hash of the settings groups that shape a document's chunks and
    vectors (`REINGEST_GROUPS`). Retrieval, answer and runtime settings never force a re-ingest."""
    values = {name: str(value) for group in REINGEST_GROUPS
              for name, value in dataclasses.asdict(getattr(settings, group)).items()}
    values["version"] = PIPELINE_VERSION
    return hashlib.md5(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Todo:
    src: SourceFile
    change: str  # added / changed


@dataclass
class Plan:
    todo: list[Todo] = field(default_factory=list)  # parse → chunk → land → index
    skipped: list[tuple[SourceFile, ManifestEntry]] = field(default_factory=list)  # unchanged
    removed: list[ManifestEntry] = field(default_factory=list)  # delete from every store
    duplicates: list[tuple[SourceFile, str]] = field(default_factory=list)  # (file, source it duplicates)
    kept_roots: list[str] = field(default_factory=list)  # folders that found nothing: no removal under them

    @property
    def reindex(self) -> list[tuple[SourceFile, ManifestEntry]]:
        """Unchanged files whose last landing never reached Chroma (a failed or killed index stage)."""
        return [(src, entry) for src, entry in self.skipped if entry.status == LANDED]

    @property
    def held_sources(self) -> set[str]:
        """Source names held by files found this run (to land or unchanged): a removed path under one
        of them loses only its manifest row, not the document now landed under that name."""
        return {t.src.source for t in self.todo} | {src.source for src, _ in self.skipped}


def under(path: str, root: Path) -> bool:
    return Path(path).is_relative_to(root) and Path(path) != root


def given_folders(paths: list[str], found: Discovery) -> tuple[list[Path], list[str]]:
    """The given paths that are folders and yielded at least one file; and those that yielded none."""
    empty = set(found.empty_roots)
    folders, kept = [], []
    for given in paths:
        root = Path(given).expanduser().absolute()
        if not root.is_dir():
            continue
        if str(root) in empty:
            kept.append(str(root))
        else:
            folders.append(root)
    return folders, kept


def plan_reingest(paths: list[str], found: Discovery, manifest: list[ManifestEntry],
                  landed: dict[str, tuple[str, str, str]], key: str) -> Plan:
    """Decide, per discovered file and per manifest row, what this run does.

    `landed` is source → (doc_md5, chunks_path, parser_version) of the documents the KB holds in
    DuckDB; one an older OCR layout read is not unchanged (`ocr.read_by_older_layout`: a scheduled
    re-ingest after an upgrade reads its scanned pages again, its text documents stay as they are).
    """
    plan = Plan()
    renamed: set[str] = set()  # old source names of the documents renamed (moved) this run
    by_path = {e.path: e for e in manifest}
    path_of_source = {e.source: e.path for e in manifest}
    source_of_md5 = {md5: source for source, (md5, *_) in landed.items()}
    for src in found.sources:
        entry = by_path.get(str(src.path))
        have = landed.get(src.source)
        if (entry is not None and entry.md5 == src.md5 and entry.status in (LANDED, INDEXED)
                and entry.pipeline_key == key and entry.source == src.source
                and have is not None and have[0] == src.md5 and Path(have[1]).is_file()
                and not read_by_older_layout(have[2])):
            plan.skipped.append((src, entry))
            continue
        holder = source_of_md5.get(src.md5)
        if holder is not None and holder != src.source:
            holder_path = path_of_source.get(holder)
            # the same content is in the KB under another name whose file still exists: a copy,
            # not a rename (a rename's old path is gone: its document is renamed, not removed)
            if holder_path and holder_path != str(src.path) and Path(holder_path).exists():
                plan.duplicates.append((src, holder))
                continue
            if have is None:
                plan.todo.append(Todo(src, RENAMED))
                renamed.add(holder)
                continue
        plan.todo.append(Todo(src, CHANGED if have is not None else ADDED))

    folders, plan.kept_roots = given_folders(paths, found)
    seen = {str(s.path) for s in found.sources}
    # found but rejected: the file is there, its last good version stays (a broken link is gone)
    seen |= {r.path for r in found.rejected if r.error_kind != "MissingFileError"}
    for entry in manifest:
        if entry.source in renamed and entry.status in (LANDED, INDEXED):
            continue  # its new row replaces it when the renamed document lands
        if entry.path not in seen and any(under(entry.path, root) for root in folders):
            plan.removed.append(entry)
    return plan


def resolve_root(paths: list[str], manifest: list[ManifestEntry], recorded: str | None, setting: str = "") -> Path:
    """The folder the KB's source names are relative to: the `source_root` setting, else the root
    recorded by the KB's first ingest, else (a home from before roots were recorded) the root its
    manifest's names were made against, else this run's first given folder (a file's folder)."""
    if setting:
        return Path(setting).expanduser().absolute()
    if recorded:
        return Path(recorded)
    roots: dict[str, int] = {}
    for e in manifest:
        if e.source and e.path.endswith("/" + e.source):
            root = e.path[:-len(e.source) - 1]
            roots[root] = roots.get(root, 0) + 1
    if roots:
        return Path(max(sorted(roots), key=roots.__getitem__))
    first = Path(paths[0]).expanduser().absolute() if paths else Path.cwd()
    return first if first.is_dir() else first.parent
