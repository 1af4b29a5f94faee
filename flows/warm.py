"""Load what a question-answering run needs (the query encoder, jieba's dictionary, Chroma's
modules) in a background thread while the command starts Prefect: on two cores the few seconds of
imports and loads overlap the server start instead of following it. One load per process: the flow
takes the warmed encoder (`embedder_for`)."""
from __future__ import annotations

import logging
import threading
from concurrent.futures import Future

from schemas.settings import Settings

log = logging.getLogger("kbflow.warm")
_warming: dict[tuple[str, str], Future] = {}
_lock = threading.Lock()


def _key(settings: Settings) -> tuple[str, str]:
    return str(settings.home), settings.index.embedding_model


def prewarm(settings: Settings, *, vectors: bool = True, forks: bool = False, announce_after_s: float = 3.0) -> None:
    """Start loading in a daemon thread; errors are left for the flow to raise in its own words.
    `forks`: this process forks children that answer (`kbflow server`): no ONNX session is opened here."""
    from tasks.common.display import announce

    with _lock:
        if _key(settings) in _warming:
            return
        future: Future = Future()
        _warming[_key(settings)] = future

    def work() -> None:
        try:
            import chromadb  # noqa: F401 - the import is the cost

            from tasks.common.text import tokenize

            tokenize("预热", settings.index.bm25_user_dict or None)
            embedder = None
            if vectors:
                from tasks.index.query_encoder import load_query_encoder

                timer = threading.Timer(announce_after_s, announce, ["loading the embedding model…"])
                timer.daemon = True
                timer.start()
                try:
                    embedder = load_query_encoder(settings, open_session=not forks)
                finally:
                    timer.cancel()
            future.set_result(embedder)
        except BaseException as exc:  # noqa: BLE001 - reported by the flow's own load
            log.debug("prewarm failed: %s", exc)
            future.set_result(None)

    threading.Thread(target=work, daemon=True, name="kbflow-prewarm").start()


def embedder_for(settings: Settings):
    """The embedder `prewarm` loaded for these settings (waiting for it), or None."""
    future = _warming.get(_key(settings))
    return future.result() if future is not None else None
