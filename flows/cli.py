"""The `kbflow` command: check the inputs, call a flow or a warehouse query, print the result.

Inputs (knowledge base, question set, run id, --out) are checked before any flow or Prefect server
starts; a failure is one line on stderr and its exit code (EXIT_CODES; --debug adds the traceback).
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import Sequence

from flows.terminal import console, print_json, print_rows, progress_display
from flows.warm_server import FORWARDED
from schemas.errors import (IndexIncompleteError, IngestInterruptedError, NothingLandedError, QueryError, UserError,
                           WarehouseError)
from schemas.settings import load_settings

EXIT_CODES = {
    0: "done",
    1: "the run finished but failed its purpose (see the command's note)",
    2: "fix the command, an input file or a setting (bad name, unreadable question set, bad SQL)",
    3: "another kbflow process is writing to this home (retry, or --wait SECONDS)",
    4: "something to install or configure here (a model, an optional extra)",
    5: "an outside service failed (the LLM endpoint)",
    6: "no such knowledge base, run id or warehouse in this home (the message lists what there is)",
    7: "--out refused: inside the home, or an existing file kbflow did not write (--force)",
    70: "a bug: one line; run again with --debug for the traceback",
    130: "interrupted (Ctrl-C)",
}
INTERNAL_ERROR = 70
BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader closed
_VERBOSE = False  # --verbose/--debug: the temporary server's own output shows too


def exit_codes_epilog(failure: str = "", codes: Sequence[int] = (0, 1, 2, 3, 4, 5, 6, 7, 130)) -> str:
    lines = ["exit codes:"]
    for code in codes:
        meaning = failure if code == 1 and failure else EXIT_CODES[code]
        lines.append(f"  {code:<4} {meaning}")
    return "\n".join(lines)


def start_flows(settings, *, warm: bool = False, vectors: bool = True) -> None:
    """Before the first flow of this command: reuse this home's `kbflow server` when one runs, else
    start a temporary Prefect server at once (it starts while the rest loads); start loading the
    model in the background; keep Prefect's console quiet; return once the server answers."""
    from flows.server import TemporaryServer, use_running_server

    temporary = None
    if use_running_server(settings.home) is None and not _prefect_has_api():
        temporary = TemporaryServer(quiet=not _VERBOSE)
        os.environ["PREFECT_API_URL"] = temporary.api_url  # before Prefect reads its settings
    if warm:
        from flows.warm import prewarm

        prewarm(settings, vectors=vectors)
    from flows.terminal import tame_prefect_console

    tame_prefect_console()
    if temporary is not None:
        temporary.wait()


def _prefect_has_api() -> bool:
    """Prefect, imported before (a test harness, a script), already has a server to talk to."""
    if "prefect" not in sys.modules:
        return False
    from prefect.settings import get_current_settings

    return bool(get_current_settings().api.url)


def cmd_ingest(args: argparse.Namespace) -> int:
    from tasks.common.lock import check_free

    from schemas.errors import InvalidValueError
    from schemas.settings import check_kb_name

    settings = load_settings(args.home)
    check_kb_name(args.kb)
    missing = [p for p in args.paths if not p.exists()]
    if len(missing) == len(args.paths):
        raise InvalidValueError(f"no such file or folder: {', '.join(map(str, missing))}")
    if not (args.wait if args.wait is not None else settings.runtime.ingest_lock_wait_s):
        check_free(settings.home, kb=args.kb)  # refuse before a flow run (and a server) is started
    start_flows(settings)
    from flows.ingest import ingest

    with progress_display():
        state = ingest(paths=[str(p) for p in args.paths], kb=args.kb, home=args.home,
                       runner=args.runner or settings.runtime.task_runner, dask_address=args.dask_address,
                       lock_wait_s=args.wait, return_state=True)
    summary, incomplete = state.result(raise_on_failure=False), None
    if isinstance(summary, (IndexIncompleteError, NothingLandedError)):  # print the outcomes, then fail
        summary, incomplete = summary.summary, summary
    elif isinstance(summary, BaseException):  # the flow itself raised (a busy home, a missing model)
        raise summary
    rows = [(o.source, o.status if o.status != "landed" else f"landed ({o.change})", o.chunks,
             o.parse_seconds if o.status == "landed" else None, "yes" if o.parse_cached else "", o.reason)
            for o in summary.shown_outcomes()]  # past 50 files: failures listed, the rest summed up
    print_rows(["source", "status", "chunks", "parse_s", "cached", "reason"], rows,
               title=f"ingest run {summary.run_id} → kb {summary.kb!r}")
    console.print(f"{summary.landed} landed, {summary.failed} failed or rejected; warehouse: "
                  f"{Path(summary.home) / 'kbflow.duckdb'}")
    console.print(f"{summary.added} added, {summary.changed} changed, {summary.skipped} unchanged (skipped), "
                  f"{summary.removed} removed (task runner: {summary.runner})")
    idx = summary.index
    views = f", {idx.views} views of long tables" if idx.views else ""
    console.print(f"indexed {idx.chunks} chunks of {idx.documents} documents into Chroma ({idx.embedded} newly "
                  f"embedded{views}, {idx.removed} stale removed); BM25 holds {idx.bm25_chunks} chunks")
    if incomplete is not None:
        print(f"error: {' '.join(str(incomplete).split())}", file=sys.stderr)
        return incomplete.exit_code
    return 0


# `kbflow stats` table headings (csv/json keep the view's column names); the legend says what they mean.
STATS_LABELS = {
    "total_chunks": "total", "text_chunks": "text", "table_chunks": "table", "image_chunks": "image",
    "heading_only_chunks": "heading<20", "heading_only_share": "share", "fragments": "frag<100",
    "median_text_chars": "median", "max_text_chars": "max", "heading_chains": "chains",
    "longest_heading_chain": "longest",
}
STATS_LEGEND = ("text = all but table/image/chart; heading<20 = heading-only chunks under 20 chars, share = of text; "
                "frag<100 = body text under 100 chars; median/max = chars of text, heading and list chunks; "
                "chains = runs of ≥2 consecutive headings, longest = the longest run. "
                "Also: views chunk_length_hist, section_stats, heading_runs (kbflow sql).")


def cmd_rm(args: argparse.Namespace) -> int:
    from flows.cli_inputs import require_kb

    settings = load_settings(args.home)
    require_kb(settings, args.kb)
    start_flows(settings)
    from flows.ingest import remove

    removed = remove(sources=args.sources, kb=args.kb, home=args.home, lock_wait_s=args.wait)
    print_rows(["source", "chunks removed from Chroma"], sorted(removed.items()), title=f"removed from kb {args.kb!r}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from flows.cli_inputs import require_kb

    settings = load_settings(args.home)
    require_kb(settings, args.kb)  # an unknown KB: exit 6, and no empty Chroma collection made for it
    from tasks.index.sync import check

    result = check(settings, args.kb)
    print_rows(["store", "chunks", "missing ids (present in another store)"],
               [(name, count, ", ".join(result.missing.get(name, [])[:10]) +
                 (f" … (+{len(result.missing[name]) - 10})" if len(result.missing.get(name, [])) > 10 else ""))
                for name, count in (("duckdb", result.duckdb), ("chroma", result.chroma), ("bm25", result.bm25))],
               title=f"consistency of kb {args.kb!r}")
    console.print("consistent" if result.ok else "[red]INCONSISTENT[/red]: re-run `kbflow ingest` to repair")
    return 0 if result.ok else 1


def cmd_stats(args: argparse.Namespace) -> int:
    """The chunk-quality table of seed 000 §13.1, one row per document (view `chunk_quality`)."""
    import duckdb

    from flows.cli_inputs import require_kb
    from warehouse.chunks import chunk_quality

    settings = load_settings(args.home)
    if args.kb:
        require_kb(settings, args.kb)
    try:
        columns, rows = chunk_quality(settings.db_path, args.kb)
    except duckdb.CatalogException:  # a warehouse written before the view existed
        raise WarehouseError("the warehouse has no chunk_quality view yet; "
                             "run `kbflow ingest` once to update it") from None
    if args.format != "table":
        print_rows(columns, rows, args.format)
        return 0
    print_rows([STATS_LABELS.get(c, c) for c in columns], rows, title="chunk quality per document (seed 000 §13.1)")
    console.print(STATS_LEGEND, style="dim")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    import duckdb

    from warehouse import db

    settings = load_settings(args.home)
    try:
        columns, rows = db.query(settings.db_path, args.query)
    except duckdb.Error as exc:
        raise QueryError(f"the query failed: {' '.join(str(exc).split())}") from None
    print_rows(columns, rows, args.format)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """One self-contained HTML file: chunk quality, charts, ingest and QA runs, per-question QA, metrics."""
    import duckdb

    from flows.cli_inputs import check_out, require_kb, require_run
    from warehouse.report import load_report, write_report

    settings = load_settings(args.home)
    out = check_out(args.out, settings, force=args.force, suffixes=(".html", ".htm"))
    try:
        if args.kb:
            require_kb(settings, args.kb)
        if args.run:
            require_run(settings, args.run)
        report = load_report(settings.db_path, kb=args.kb, run=args.run)
    except duckdb.Error as exc:  # e.g. not a DuckDB file
        raise WarehouseError(f"cannot read the warehouse {settings.db_path}: {' '.join(str(exc).split())}") from None
    write_report(report, out)
    print_rows(["section", "rows"], list(report.row_counts().items()), title="kbflow report")
    console.print(f"report: {out}")
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer a question set, or one quoted question (flow `batch_qa`), and print the answers."""
    from flows.cli_inputs import check_answer_settings, check_out, check_question_file, question_set, require_kb
    from flows.terminal import print_answers, read_results

    settings = load_settings(args.home)
    check_answer_settings(settings)
    check_question_file(args.questions)
    require_kb(settings, args.kb)
    questions, qset = question_set(args.questions, settings)  # a quoted question is written only now
    out = check_out(args.out, settings, force=args.force, suffixes=(".jsonl", ".ndjson", ".json", ".parquet"))
    start_flows(settings, warm=True, vectors=args.mode != "bm25")
    from flows.batch_qa import batch_qa

    with progress_display():
        summary = batch_qa(questions=questions, kb=args.kb, home=args.home, out=str(out) if out else None,
                           mode=args.mode, sources=args.source or None, section=args.section)
    run = summary.run
    code = 0 if run.status == "completed" and run.questions else 1
    if args.format == "json":
        from dataclasses import asdict

        print_json({"run": asdict(run), "results": summary.out_path,
                    "answers": read_results(summary.out_path), "invalid_rows": [asdict(b) for b in summary.invalid]})
        return code
    if args.quiet:
        print(summary.out_path)
        return code
    print_answers(read_results(summary.out_path, limit=args.show), total=run.questions, out_path=summary.out_path)
    rows = [("questions", run.questions), ("invalid rows (skipped)", run.invalid_rows),
            ("answered (llm / extractive)", f"{run.answered} ({run.llm_answers} / {run.extractive_answers})"),
            ("insufficient evidence", run.insufficient), ("widened once (CRAG-lite)", run.widened),
            ("LLM failures (fell back)", run.llm_failures), ("failed (batch errors)", run.failed),
            ("retrieval questions/s", f"{run.retrieval_qps:.1f}")]
    if run.labelled:
        rows += [("labelled", run.labelled), ("hit@1", f"{run.hit_at_1:.3f}"), ("hit@5", f"{run.hit_at_5:.3f}"),
                 ("MRR@10", f"{run.mrr_at_10:.3f}")]
    print_rows(["", "value"], rows, title=f"batch QA run {run.run_id} on kb {run.kb!r} ({run.mode})")
    for bad in summary.invalid[:20]:
        console.print(f"[yellow]skipped[/yellow] line {bad.line}: {bad.reason}")
    if len(summary.invalid) > 20:
        console.print(f"… and {len(summary.invalid) - 20} more invalid rows (qa_runs.invalid_reasons)")
    if summary.note:
        console.print(f"note: {summary.note}")
    console.print(f"results: {summary.out_path}; traces: kbflow sql \"SELECT * FROM qa_traces WHERE run_id = "
                  f"'{run.run_id}'\"", soft_wrap=True)
    return code


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate a labelled question set (flow `evaluate`) and print one row per configuration."""
    from flows.cli_inputs import check_answer_settings, check_out, question_set, require_kb
    from schemas.errors import QuestionSetError

    settings = load_settings(args.home)
    check_answer_settings(settings)
    if not Path(args.questions).expanduser().is_file():
        raise QuestionSetError(f"{args.questions}: no such question file (eval needs labelled questions)")
    require_kb(settings, args.kb)
    questions, _ = question_set(args.questions, settings)
    out = check_out(args.out, settings, force=args.force, suffixes=(".json", ".csv"))
    start_flows(settings, warm=True)
    from flows.evaluate import evaluate
    from tasks.qa.evaluate import SKIPPED, metric_table

    with progress_display():
        result = evaluate(questions=questions, kb=args.kb, home=args.home, ablate=args.ablate,
                          out=str(out) if out else None)
    columns, rows = metric_table(result.metrics)
    print_rows(columns, rows, title=f"eval {result.eval_id} on kb {result.kb!r}")
    ran = [m for m in result.metrics if m.status != SKIPPED]
    if ran:
        m = ran[0]
        console.print(f"{m.questions} questions, {m.labelled} with gold evidence, {m.with_answers} with expected "
                      "answers; R@10 = share of gold chunks in the top 10; has-ans = the answer contains an "
                      "expected answer; all-of = every answers_all_of group matched", style="dim")
    for m in result.metrics:
        if m.note:
            console.print(f"[yellow]{m.config}[/yellow] {m.status}: {m.note}")
    if result.out_path:
        console.print(f"metrics: {result.out_path}")
    console.print(f"kbflow sql \"SELECT * FROM qa_metrics WHERE eval_id = '{result.eval_id}'\"", soft_wrap=True)
    return 0 if ran and all(m.questions for m in ran) else 1


def cmd_server(args: argparse.Namespace) -> int:
    """Run a Prefect server for this home until Ctrl-C; other kbflow commands on the home use it, and
    `ask`/`eval` run in its warm runner (model and libraries loaded once; flows/warm_server.py)."""
    from flows.server import api_url_for, free_port, running_server, serve

    settings = load_settings(args.home)
    if running_server(settings.home):
        from schemas.errors import BusyError

        raise BusyError(f"a kbflow server for {settings.home} is already running at {running_server(settings.home)}")

    def ready(url: str) -> None:
        print(f"kbflow server for {settings.home}: Prefect API at {url}"
              f"{' (UI: ' + url[:-4] + ')' if args.ui else ''}; Ctrl-C stops it", flush=True)

    port = args.port or free_port()
    runner = None
    if not args.cold:
        from flows.warm_server import start_runner, watch_runner

        runner = start_runner(settings.home, api_url_for("127.0.0.1", port), dict(os.environ))
        watch_runner(runner)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    try:
        serve(settings.home, port=port, ui=args.ui, on_ready=ready)
    finally:
        if runner is not None:
            runner.terminate()
            try:
                runner.wait(10)
            except Exception:  # noqa: BLE001 - stuck: it must not outlive the server
                runner.kill()
    return 0


def _sub(sub, name: str, help: str, failure: str = "", codes: Sequence[int] = (0, 1, 2, 3, 4, 5, 6, 7, 130)):
    return sub.add_parser(name, help=help, description=help, epilog=exit_codes_epilog(failure, codes),
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kbflow", description="Batch, offline RAG data pipeline on Prefect 3.",
                                     epilog=exit_codes_epilog(codes=tuple(EXIT_CODES)), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", help="state directory (default: $KBFLOW_HOME or ./.kbflow)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and every log line")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="show Prefect's and the libraries' log lines and progress bars")
    parser.add_argument("--config", help="a settings file applied over HOME/kbflow.toml (default: $KBFLOW_CONFIG)")
    parser.add_argument("--no-server", action="store_true",
                        help="run ask/eval in this process even when a warm `kbflow server` runs for the home")
    sub = parser.add_subparsers(dest="command", required=True)

    p = _sub(sub, "ingest", "parse, chunk and land documents into a knowledge base",
             "every file failed or was rejected (nothing landed)")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders (MinerU output folders/zips too)")
    p.add_argument("--kb", required=True, help="knowledge-base name")
    p.add_argument("--runner", choices=("default", "dask"),
                   help="task runner: default (in this process) or dask (parse/chunk/embed on a Dask cluster; "
                        "needs the [dask] extra); default: the task_runner setting")
    p.add_argument("--dask-address", default="",
                   help="an existing Dask scheduler, e.g. tcp://host:8786 (default: a LocalCluster)")
    p.add_argument("--wait", type=float, metavar="SECONDS",
                   help="if another ingest is writing to this home, wait up to SECONDS for it "
                        "(default: the ingest_lock_wait_s setting, 0 = refuse at once)")
    p.set_defaults(func=cmd_ingest)

    p = _sub(sub, "stats", "per-document chunk-quality report", codes=(0, 2, 6))
    p.add_argument("--kb", help="only this knowledge base")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=cmd_stats)

    p = _sub(sub, "rm", "delete documents (by source name) from a knowledge base and its indexes",
             codes=(0, 2, 3, 6, 130))
    p.add_argument("sources", nargs="+", help="source names as shown by `kbflow stats`")
    p.add_argument("--kb", required=True)
    p.add_argument("--wait", type=float, metavar="SECONDS", help="wait up to SECONDS for a running ingest")
    p.set_defaults(func=cmd_rm)

    p = _sub(sub, "check", "compare the chunk ids of DuckDB, Chroma and BM25",
             "the three stores disagree (INCONSISTENT: re-run kbflow ingest)", codes=(0, 1, 2, 3, 6))
    p.add_argument("--kb", required=True)
    p.set_defaults(func=cmd_check)

    p = _sub(sub, "ask", "answer a question set (JSONL/CSV/Parquet) or one quoted question, with cited answers",
             "the run failed or answered no question (batch errors)")
    p.add_argument("questions", help='a question file (id/qid, question, optional answers and gold evidence) '
                                     'or one question in quotes: kbflow ask "…" --kb demo')
    p.add_argument("--kb", required=True, help="knowledge-base name")
    p.add_argument("--out", help="results file, .jsonl or .parquet (default: HOME/qa/RUN_ID.jsonl)")
    p.add_argument("--force", action="store_true", help="let --out overwrite any file, or write inside the home")
    p.add_argument("--mode", choices=("hybrid", "vector", "bm25"), default="hybrid", help="recall channels")
    p.add_argument("--source", action="append", help="only these documents (repeatable)")
    p.add_argument("--section", help="only this section and the sections under it (a section_path prefix)")
    p.add_argument("--show", type=int, default=10, metavar="N",
                   help="print the answers of sets of up to N questions, else a sample of N (default 10)")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the results file's path")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="json: the run, every answer and the results path as one JSON object on stdout")
    p.set_defaults(func=cmd_ask)

    p = _sub(sub, "eval", "retrieval and answer metrics of a labelled question set (qa_metrics)",
             "no configuration ran, or one answered no question")
    p.add_argument("questions", help="question file with gold evidence and/or expected answers")
    p.add_argument("--kb", required=True, help="knowledge-base name")
    p.add_argument("--ablate", action="store_true",
                   help="also vector-only, BM25-only, hybrid and hybrid+rerank (rescues off), one run each")
    p.add_argument("--out", help="also write the metrics to this .json or .csv file")
    p.add_argument("--force", action="store_true", help="let --out overwrite any file, or write inside the home")
    p.set_defaults(func=cmd_eval)

    p = _sub(sub, "sql", "read-only SQL over the warehouse", codes=(0, 2, 3, 6))
    p.add_argument("query", help='e.g. "SELECT chunk_type, count(*) FROM chunks GROUP BY 1"')
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=cmd_sql)

    p = _sub(sub, "report", "write a self-contained HTML report (chunk quality, charts, ingest and QA runs, "
                            "per-question answers and misses, metrics)", codes=(0, 2, 6, 7))
    p.add_argument("--kb", help="only this knowledge base")
    p.add_argument("--run", help="only this batch-QA run_id or eval_id in the QA sections")
    p.add_argument("--out", required=True, type=Path, help="the HTML file to write, e.g. report.html")
    p.add_argument("--force", action="store_true", help="let --out overwrite any file, or write inside the home")
    p.set_defaults(func=cmd_report)

    p = _sub(sub, "server", "run a Prefect server for this home (until Ctrl-C): later commands on the home find "
                            "and use it instead of starting a temporary one", codes=(0, 2, 3, 130))
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--ui", action="store_true", help="also serve Prefect's web UI")
    p.add_argument("--cold", action="store_true",
                   help="no warm runner: only the Prefect server (ask/eval then load the model themselves)")
    p.set_defaults(func=cmd_server)

    # --home, --debug and --verbose are accepted after the sub-command too
    for name in sub.choices:
        sub.choices[name].add_argument("--home", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        sub.choices[name].add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                       help=argparse.SUPPRESS)
        sub.choices[name].add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                                       help=argparse.SUPPRESS)
        sub.choices[name].add_argument("--no-server", action="store_true", default=argparse.SUPPRESS,
                                       help=argparse.SUPPRESS)
    return parser


def _forwarded(args: argparse.Namespace, argv: list[str]) -> int | None:
    """The exit code of the command run by this home's warm `kbflow server`, or None: run it here."""
    from flows.warm_server import forward
    from schemas.settings import _home_of

    try:
        code, why = forward(_home_of(args.home, None), argv)
    except Exception as exc:  # noqa: BLE001 - never worse than running locally
        code, why = None, f"{type(exc).__name__}: {exc}"
    if code is None and args.debug:
        print(f"debug: running here, not in the kbflow server: {why}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from flows.terminal import quiet_libraries

    global _VERBOSE
    _VERBOSE = args.verbose or args.debug
    quiet_libraries(verbose=args.verbose or args.debug, debug=args.debug)
    if args.config:  # flows load their settings themselves: the file reaches them through the environment
        os.environ["KBFLOW_CONFIG"] = str(Path(args.config).expanduser().resolve())
    if args.command in FORWARDED and not args.no_server:
        code = _forwarded(args, list(sys.argv[1:] if argv is None else argv))
        if code is not None:
            return code
    code = _run(args)
    # a command line (not a caller that goes on); an ingest stopped by SIGTERM too: native thread pools
    # stopped mid-work can abort the interpreter's teardown ("terminate called…", exit −6, not 143)
    if argv is None and (args.command in FORWARDED or code == IngestInterruptedError.exit_code):
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """Exit once the exit handlers ran (Prefect's log and event workers drain, the temporary server
    is told to stop), skipping the interpreter's teardown of torch & co (~1 s): nothing of an
    `ask`/`eval` is left to write then (its results and the warehouse are closed and landed)."""
    import atexit

    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _run(args: argparse.Namespace) -> int:
    try:
        return args.func(args)
    except UserError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`kbflow sql … | head`): stop quietly, as `cat` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush writes nowhere
        return BROKEN_PIPE
    except Exception as exc:  # a bug: one line, the traceback with --debug
        if args.debug:
            traceback.print_exc()
        print(f"error: internal error {type(exc).__name__}: {' '.join(str(exc).split())} "
              "(run again with --debug for the traceback, and please report it)", file=sys.stderr)
        return INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
