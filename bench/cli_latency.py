"""Benchmark: where a short `kbflow ask` spends its time, this tree against a baseline checkout.

    .venv/bin/python bench/cli_latency.py [--home DIR] [--baseline TREE] [--repeat N]

Each figure is a fresh Python process (what a user pays per command), run alternately for this
tree and the baseline (e.g. `git archive main | tar -x -C /tmp/base`) so both see the same load:

- phases, measured one after another in one process: import flows.cli (what an input error
  costs), the flow stack (prefect, chromadb, …), model resolve + checksum, the query encoder (ONNX;
  a baseline without it: sentence-transformers/torch and the model load),
- Prefect's temporary server: a no-op flow's start (server up + flow run) and its stop at exit
  (this tree starts it itself, before importing Prefect: flows/server.py TemporaryServer);
- the whole `kbflow ask examples/questions.jsonl --kb demo` (16 questions), wall time, without a
  server and with a running `kbflow server` for the home (this tree: its warm runner; its start is
  timed until the runner's socket exists), and `kbflow ask nosuch.jsonl` (an input error).

For the targets, run it on a quiet machine with --repeat 3 or more: medians of alternating rounds
(the order of the trees flips every round); the 1-minute load during the rounds is printed.

The home must hold the demo KB (`kbflow ingest examples/corpus --kb demo`); the default home is
built with this tree when missing. Prints the figures, the ratios (this tree / baseline) and the
load average. Not part of CI.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable

PHASES = r'''
import json, time
t = time.perf_counter(); out = {}
def mark(name):
    global t
    now = time.perf_counter(); out[name] = now - t; t = now
import flows.cli; mark("import flows.cli")
import flows.batch_qa; mark("import flow stack")
from schemas.settings import load_settings
from tasks.index.embed import resolve_model
settings = load_settings(None); model = resolve_model(settings); mark("model resolve+checksum")
try:  # this tree: the ONNX query encoder (no torch); an older tree: sentence-transformers
    from tasks.index.query_encoder import load_query_encoder
except ImportError:
    import sentence_transformers; mark("import sentence-transformers")
    from tasks.index.embed import Embedder
    Embedder(model); mark("model load")
else:
    load_query_encoder(settings).embed_queries(["预热"]); mark("query encoder load")
from tasks.common.text import tokenize
tokenize("预热"); mark("jieba dictionary")
from tasks.qa.retriever import Retriever
Retriever(settings, "demo").size; mark("retriever (Chroma, BM25)")
print(json.dumps(out))
'''

SERVER = r'''
import json, os, time
started = time.time()
try:  # this tree: kbflow starts the temporary server itself, before Prefect is imported
    from flows.server import TemporaryServer
    server = TemporaryServer(); os.environ["PREFECT_API_URL"] = server.api_url
except ImportError:  # the baseline: Prefect starts it at the first flow run
    server = None
from prefect import flow
@flow
def noop(): return 1
t0 = time.time()
if server is not None:
    server.wait()
noop(); print(json.dumps({"started": t0, "ran": time.time()}), flush=True)
'''


def env_for(tree: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PYTHONPATH=str(tree), KBFLOW_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")  # Prefect's 20 s is too short under load
    return env


def wall(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - started, done


def phases(tree: Path, home: Path) -> dict[str, float]:
    seconds, done = wall([PY, "-c", PHASES], env_for(tree, home), tree)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["process start + exit"] = seconds - sum(figures.values())
    return figures


def temporary_server(tree: Path, home: Path, attempts: int = 2) -> dict[str, float]:
    try:
        return _temporary_server(tree, home)
    except RuntimeError:  # e.g. "database is locked": the Prefect database is shared by every user of ~/.prefect
        if attempts <= 1:
            raise
        return temporary_server(tree, home, attempts - 1)


def _temporary_server(tree: Path, home: Path) -> dict[str, float]:
    started = time.time()
    seconds, done = wall([PY, "-c", SERVER], env_for(tree, home), tree)
    if done.returncode or not done.stdout.strip():
        raise RuntimeError(done.stderr[-3000:])
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    return {"prefect import": marks["started"] - started, "server start + no-op flow": marks["ran"] - marks["started"],
            "server stop + exit": started + seconds - marks["ran"]}


def ask(tree: Path, home: Path, questions: str = "examples/questions.jsonl") -> float:
    seconds, done = wall([PY, "-m", "flows.cli", "ask", questions, "--kb", "demo", "--quiet"], env_for(tree, home), tree)
    if done.returncode != (2 if questions == "nosuch.jsonl" else 0):
        raise RuntimeError(done.stderr[-2000:])
    return seconds


def with_server(tree: Path, home: Path) -> tuple[float, float]:
    """(seconds until `kbflow server` is ready — its warm runner's socket, where the tree has one —,
    `kbflow ask` wall time while it runs)."""
    ready = home / ("kbflow-server.sock" if (tree / "flows" / "warm_server.py").exists() else "prefect-server.json")
    ready.unlink(missing_ok=True)
    started = time.perf_counter()
    server = subprocess.Popen([PY, "-m", "flows.cli", "server"], env=env_for(tree, home), cwd=tree,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not ready.exists():
            if server.poll() is not None or time.perf_counter() - started > 300:
                raise RuntimeError("kbflow server did not start")
            time.sleep(0.1)
        up = time.perf_counter() - started
        ask(tree, home)  # the server's first flow run (its caches) is not what a user pays later
        return up, ask(tree, home)
    finally:
        server.terminate()
        server.wait(30)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", default="/tmp/kbflow-bench-demo", help="a home holding the demo KB")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with (same home)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv[1:])
    home = Path(args.home)
    if not (home / "kbflow.duckdb").exists():
        print(f"building the demo KB in {home} …", flush=True)
        subprocess.run([PY, "-m", "flows.cli", "ingest", "examples/corpus", "--kb", "demo"],
                       env=env_for(REPO, home), cwd=REPO, check=True, capture_output=True)
    trees = {"this": REPO} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    print(f"load average before: {load()}")
    rows: dict[str, dict[str, list[float]]] = {}
    loads: list[float] = []
    for round_ in range(args.repeat):
        # alternately, and each round in the other order: both trees see the same load
        for name, tree in (list(trees.items()) if round_ % 2 == 0 else list(trees.items())[::-1]):
            got = rows.setdefault(name, {})
            figures = {**phases(tree, home), **temporary_server(tree, home),
                       "ask, 16 questions (no server)": ask(tree, home)}
            up, served = with_server(tree, home)
            figures.update({"kbflow server start (until ready)": up, "ask, 16 questions (kbflow server)": served,
                            "ask nosuch.jsonl (input error)": ask(tree, home, "nosuch.jsonl")})
            for label, value in figures.items():
                got.setdefault(label, []).append(value)
            loads.append(os.getloadavg()[0])
    print(f"load average after: {load()}; 1-min load during the rounds: {min(loads):.1f}-{max(loads):.1f}  "
          f"(figures: median of {args.repeat}, seconds)")
    labels = list(dict.fromkeys(label for got in rows.values() for label in got))
    print(f"{'':42} {'this':>8} {'baseline':>9} {'ratio':>6}")
    for label in labels:
        figures = [sorted(rows[name].get(label, [float('nan')]))[len(rows[name].get(label, [0])) // 2]
                   if label in rows[name] else float("nan") for name in ("this", "baseline") if name in rows]
        this = figures[0]
        base = figures[1] if len(figures) > 1 else float("nan")
        ratio = this / base if base == base and base else float("nan")
        print(f"{label:42} {this:8.2f} {base:9.2f} {ratio:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
