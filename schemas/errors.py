"""One exception type per failure kind a user can act on; messages name the file and the reason."""


class KbflowError(Exception):
    """Base class: an expected, per-file failure that is recorded and does not stop the run."""

    stage = "ingest"

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


class SymlinkLoopError(RejectedFileError):
    """A symbolic link that resolves to itself (directly or through other links)."""


class EncryptedFileError(RejectedFileError):
    """A password-protected PDF or Office file: decrypt it (e.g. `qpdf --decrypt`) and ingest the copy."""


class ParseError(KbflowError):
    """The parser ran and failed on this file."""

    stage = "parse"


class NeedsModelsError(ParseError):
    """The file needs MinerU model weights (OCR/layout) that are not installed here."""


class ImportFormatError(ParseError):
    """A MinerU output folder or zip that kbflow cannot read."""


class UnsafeArchiveError(ImportFormatError):
    """A zip entry would be written outside its target folder."""


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


# ---------------------------------------------------------------- LLM/VLM endpoint (no file of its own)


class LLMError(Exception):
    """An OpenAI-compatible chat-completions call failed. Messages never contain the API key.

    Not a `KbflowError`: enrichment falls back to its offline text instead of failing the file,
    and batch QA records the failure per question.
    """

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class LLMConfigError(LLMError):
    """No endpoint or model configured (llm_base_url / llm_model / vlm_model)."""


class LLMAuthError(LLMError):
    """HTTP 401/403: the endpoint refused KBFLOW_LLM_API_KEY (unset, wrong or without access to the model)."""


class LLMRequestError(LLMError):
    """A 4xx other than 401/403/429 (unknown model, request too large, bad parameters): not retried."""


class LLMUnavailableError(LLMError):
    """429/5xx/timeouts/connection errors that outlasted every retry."""


class LLMResponseError(LLMError):
    """The endpoint answered 200 with something that is not a chat completion (or an empty answer)."""
