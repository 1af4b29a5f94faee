"""What `kbflow` checks before any flow (or Prefect server) starts: the knowledge base exists, the
question set can be read, a run id is known, and `--out` will not clobber kbflow's state or a file
kbflow did not write. Each failure is one `UserError` with its exit code (schemas/errors.py)."""
from __future__ import annotations

import hashlib
import json
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from schemas.errors import OutputRefusedError, QuestionSetError, UnknownKbError, UnknownRunError
from schemas.settings import Settings, check_kb_name
from tasks.qa.questions import FORMATS, QuestionSet, read_questions

REPORT_MARK = '<meta name="generator" content="kbflow report">'  # warehouse/report.py writes it
_PATHISH = re.compile(r"^\S+$")


def require_kb(settings: Settings, kb: str) -> str:
    """`kb`, when this home's warehouse holds documents of it; else an error listing those it holds."""
    from warehouse.catalog import known_kbs

    check_kb_name(kb)
    known = known_kbs(settings.db_path)  # WarehouseMissingError (6) when there is no warehouse at all
    if kb not in known:
        have = f"the knowledge bases here are: {', '.join(known)}" if known else \
            "this home has no knowledge base yet (kbflow ingest PATH --kb NAME)"
        raise UnknownKbError(f"no knowledge base {kb!r} in {settings.home}: {have}")
    return kb


def check_answer_settings(settings: Settings) -> None:
    """Settings a QA run reads only at its first question, checked before it starts (SettingsError, 2)."""
    from tasks.qa.fusion import check_fusion_settings

    check_fusion_settings(settings.retrieval)


def require_run(settings: Settings, run: str) -> str:
    from warehouse.catalog import recent_runs, run_exists

    if not run_exists(settings.db_path, run):
        recent = recent_runs(settings.db_path)
        hint = f"recent runs: {', '.join(recent)}" if recent else "no batch-QA run yet (kbflow ask)"
        raise UnknownRunError(f"no batch-QA run or eval named {run!r} in {settings.db_path}: {hint}")
    return run


def looks_like_a_file(text: str) -> bool:
    """A question-set path rather than a question: no spaces, and a known suffix or a folder separator."""
    return bool(_PATHISH.match(text)) and (Path(text).suffix.lower() in FORMATS or "/" in text or "\\" in text)


def check_question_file(arg: str) -> None:
    """Fail now (before the KB is even looked up) when `arg` names a question file that is not there."""
    path = Path(arg).expanduser()
    if path.is_file():
        read_questions(path)  # format and encoding
    elif path.exists():
        raise QuestionSetError(f"{arg}: not a question file (a directory?)")
    elif looks_like_a_file(arg):
        raise QuestionSetError(f"{arg}: no such question file")


def question_set(arg: str, settings: Settings) -> tuple[str, QuestionSet]:
    """The question file `arg` names (checked and read now), or `arg` itself as a one-question set
    written to HOME/qa/asked/ (a temporary file when the home is read-only)."""
    path = Path(arg).expanduser()
    if not path.is_file():
        if path.exists():
            raise QuestionSetError(f"{arg}: not a question file (a directory?)")
        if looks_like_a_file(arg):
            raise QuestionSetError(f"{arg}: no such question file")
        if not arg.strip():
            raise QuestionSetError("the question is empty")
        path = _one_question_file(arg.strip(), settings)
    qset = read_questions(path)
    if not qset.questions:
        first = f" (line {qset.invalid[0].line}: {qset.invalid[0].reason})" if qset.invalid else ""
        raise QuestionSetError(f"{path}: no valid question in the file{first}")
    return str(path), qset


def _one_question_file(question: str, settings: Settings) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}-{hashlib.sha1(question.encode()).hexdigest()[:8]}.jsonl"
    line = json.dumps({"id": "q1", "question": question}, ensure_ascii=False) + "\n"
    for folder in (settings.home / "qa" / "asked", Path(tempfile.gettempdir()) / "kbflow-asked"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(line, encoding="utf-8")
            return folder / name
        except OSError:
            continue
    raise QuestionSetError("cannot write the one-question set (no writable folder)")


def _written_by_kbflow(path: Path) -> bool:
    """Whether an existing file is one kbflow writes (a report, results, metrics), so rewriting it is safe."""
    if path.stat().st_size == 0:
        return True
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            return {"run_id", "qid"} <= set(pq.read_schema(path).names)
        except Exception:  # noqa: BLE001 - not Parquet at all
            return False
    with path.open("rb") as fh:
        head = fh.read(4096).decode("utf-8", errors="replace")
    if suffix in (".html", ".htm"):
        return REPORT_MARK in head
    if suffix in (".csv", ".json") and "eval_id" in head:
        return True
    first = head.split("\n", 1)[0]
    try:
        row = json.loads(first)
    except ValueError:
        return False
    return isinstance(row, dict) and {"run_id", "qid"} <= set(row)


def check_out(out: str | Path | None, settings: Settings, *, force: bool, suffixes: tuple[str, ...]) -> Path | None:
    """`--out` resolved, after refusing (exit 7, unless `force`) a path inside the home or an
    existing file kbflow did not write; a wrong suffix or a folder is a usage error (2)."""
    if out is None or out == "":
        return None
    path = Path(out).expanduser().resolve()
    from schemas.errors import InvalidValueError

    if path.suffix.lower() not in suffixes:
        raise InvalidValueError(f"--out {path.name!r}: use a {' or '.join(suffixes)} file")
    if path.is_dir():
        raise InvalidValueError(f"--out {path} is a folder: name a file")
    if force:
        return path
    home = settings.home.expanduser().resolve()
    if path == home or home in path.parents:
        raise OutputRefusedError(f"--out {path} is inside the kbflow home {home}, which holds the warehouse and "
                                 "indexes: write it elsewhere (or pass --force)")
    if path.exists() and not _written_by_kbflow(path):
        raise OutputRefusedError(f"--out {path} exists and is not a file kbflow wrote: choose another name "
                                 "(or pass --force to overwrite it)")
    return path
