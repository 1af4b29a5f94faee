"""One exception type per failure kind a user can act on; messages name the file and the reason."""


class KbflowError(Exception):
    """Base class: an expected, per-file failure that is recorded and does not stop the run."""

    stage = "ingest"

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class RejectedFileError(KbflowError):
    """The file cannot be ingested as given (missing, empty, too large, unsupported, corrupt)."""

    stage = "discover"


class MissingFileError(RejectedFileError): ...


class EmptyFileError(RejectedFileError): ...


class FileTooLargeError(RejectedFileError): ...


class UnsupportedFileError(RejectedFileError): ...


class CorruptFileError(RejectedFileError): ...


class DuplicateFileError(RejectedFileError): ...


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
