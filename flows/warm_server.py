"""The warm half of `kbflow server`: a runner process that has Prefect, the flows, the embedding
model and jieba loaded once, and runs short commands (`ask`, `eval`) for clients of the same home.

Why: a fresh `kbflow ask` pays the imports (Prefect, Chroma), the query encoder's load and Prefect's
temporary server before its first question; with the runner it pays a Python start and a fork.

- The runner (`python -m flows.warm_server`, started by `kbflow server`) listens on the Unix socket
  HOME/kbflow-server.sock (mode 0600, the same user only). It forks one child per request: the child
  takes the client's stdin/stdout/stderr (passed as file descriptors, so the terminal, its width and
  the tty flag are the client's own), its cwd, argv and environment, runs `flows.cli.main` and exits
  with its code, which the runner sends back. One request at a time: a second client is told "busy".
- torch: the runner loads the model with one intra-op thread. GNU OpenMP's thread pool does not
  survive a fork (a child that used the parent's pool hangs); with one thread the parent never
  creates it, and each child starts its own with the usual thread count. The ONNX query encoder
  (tasks/index/query_encoder.py): the runner loads its tokenizer, each child opens its own session.
- The client (`forward`) imports only the standard library. It falls back to the local path (and says
  why under --debug) whenever the runner cannot honour the command exactly: no runner or a stale
  socket, busy, other code, other import-time settings (PREFECT_*, HF_*, … which the runner read when
  it started: e.g. --verbose/--debug set some), a protocol error. KBFLOW_* settings, --config and
  --home are honoured: the child reads them itself (a model other than the warm one is loaded there).
- Ctrl-C in the client cancels the request (the child gets SIGINT and exits 130); a client that dies
  gets its child terminated, and so does a runner that dies (the child's parent-death signal).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path

SOCKET = "kbflow-server.sock"
FORWARDED = frozenset({"ask", "eval"})
PROTOCOL = 1
# environment read once at import or start-up (Prefect's settings, the model libraries, threads):
# a client whose values differ runs locally
IMPORT_TIME = ("PREFECT_", "HF_", "TRANSFORMERS_", "TOKENIZERS_", "TORCH", "OMP_", "MKL_", "TQDM_", "LOGURU_",
               "MINERU_", "PYTHONHASHSEED")
NOT_COMPARED = frozenset({"PREFECT_API_URL"})  # the runner's own server
SOURCES = ("flows", "tasks", "schemas", "warehouse")
MAX_HEADER = 1 << 20
# what an `ask`/`eval` imports, found by diffing sys.modules of a child against its runner's (each
# costs a child up to a second: Prefect's engines import fastapi, a results file pyarrow.dataset)
PRELOADED = ("chromadb", "duckdb", "requests", "fastapi.encoders", "pyarrow.dataset", "pyarrow.parquet",
             "prefect.engine", "prefect.flow_engine", "prefect.task_engine", "prefect.concurrency.sync",
             "prefect.utilities.visualization", "anyio._backends._asyncio",
             "flows.cli", "flows.cli_inputs", "flows.server", "flows.batch_qa", "flows.evaluate",
             "tasks.common.llm", "tasks.index.bm25", "tasks.index.snapshot", "tasks.index.vector_index",
             "tasks.qa.retriever", "tasks.qa.evaluate", "warehouse.catalog", "warehouse.chunks")
CHILD_TERM_GRACE_S = 5.0


def socket_path(home: Path) -> Path:
    return home / SOCKET


def import_time_env(env) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME) and k not in NOT_COMPARED}


def code_fingerprint() -> str:
    """The interpreter, where the code is, and its newest source file: a runner started before an
    edit (or from another checkout) is not used."""
    root = Path(__file__).resolve().parents[1]
    newest = 0
    for package in SOURCES:
        for folder, _, files in os.walk(root / package):
            for name in files:
                if name.endswith(".py"):
                    newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
    return f"{sys.executable}|{root}|{newest}"


def _send(sock: socket.socket, message: dict) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


def _read_line(sock: socket.socket, buffer: bytearray) -> dict | None:
    """One JSON line (None at EOF); `buffer` keeps what came after it."""
    while b"\n" not in buffer:
        data = sock.recv(65536)
        if not data:
            return None
        buffer += data
        if len(buffer) > MAX_HEADER:
            raise ValueError("message too long")
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return json.loads(line)


# ------------------------------------------------------------------------------------------------
# the client


def _std_fds() -> list[int]:
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:  # closed (a daemon, `<&-`): the child gets /dev/null
            fds.append(os.open(os.devnull, os.O_RDWR))
    return fds


def forward(home: Path, argv: list[str]) -> tuple[int | None, str]:
    """Run `kbflow ARGV` in the home's warm runner: (its exit code, "") or (None, why not)."""
    path = socket_path(home)
    if not path.exists():
        return None, "no kbflow server for this home"
    if len(os.fsencode(path)) > 100:
        return None, f"the socket path is too long for a Unix socket: {path}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    accepted = False  # from then on the command has started there: it must not run here too
    try:
        try:
            sock.connect(str(path))
        except OSError as exc:
            return None, f"the kbflow server's socket does not answer ({exc.strerror or exc}): stale"
        header = {"protocol": PROTOCOL, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                  "code": code_fingerprint()}
        socket.send_fds(sock, [json.dumps(header).encode() + b"\n"], _std_fds())
        buffer = bytearray()
        reply = _read_line(sock, buffer)
        if not reply or not reply.get("accepted"):
            return None, (reply or {}).get("refused", "the kbflow server closed the connection")
        accepted = True
        while True:
            try:
                reply = _read_line(sock, buffer)
            except KeyboardInterrupt:  # cancel: the child stops (exit 130) and its code still comes back
                sock.sendall(b'{"cancel": true}\n')
                try:
                    reply = _read_line(sock, buffer)
                except KeyboardInterrupt:  # a second Ctrl-C: leave now (the runner terminates the child)
                    return 130, ""
            if reply is None:
                print("error: the kbflow server went away during the command", file=sys.stderr)
                return 70, ""
            if "exit" in reply:
                return int(reply["exit"]), ""
    except (OSError, ValueError) as exc:
        if accepted:
            print(f"error: lost the kbflow server during the command: {exc}", file=sys.stderr)
            return 70, ""
        return None, f"protocol error with the kbflow server: {exc}"
    except KeyboardInterrupt:  # before the command started there
        print("error: interrupted", file=sys.stderr)
        return 130, ""
    finally:
        sock.close()


# ------------------------------------------------------------------------------------------------
# the runner


class Runner:
    def __init__(self, home: Path, api_url: str, parent: int):
        self.home, self.api_url, self.parent = home, api_url, parent
        self.pid = os.getpid()
        self.env = import_time_env(os.environ)
        self.code = code_fingerprint()
        self.threads = 1
        self.listener: socket.socket | None = None

    def warm(self) -> None:
        """Everything an `ask` imports and loads that does not depend on the request."""
        import torch

        self.threads = torch.get_num_threads()
        torch.set_num_threads(1)  # see the module's note: no OpenMP pool in the parent
        import importlib

        for name in PRELOADED:
            try:
                importlib.import_module(name)
            except ImportError:  # an optional extra: the child imports (or misses) it itself
                pass
        from flows.warm import embedder_for, prewarm
        from schemas.settings import load_settings

        from tasks.index.query_encoder import OnnxQueryEncoder

        settings = load_settings(self.home)
        prewarm(settings, forks=True)
        embedder = embedder_for(settings)
        if embedder is not None and not isinstance(embedder, OnnxQueryEncoder):  # ONNX: each child opens its session
            embedder.embed_queries(["预热"])  # the first inference's one-time kernel set-up, shared by the children

    def refusal(self, header: dict) -> str:
        if header.get("protocol") != PROTOCOL:
            return "another kbflow version (protocol)"
        if header.get("code") != self.code:
            return "the kbflow server runs other code (restart it after an update or an edit)"
        try:
            from flows.cli import build_parser

            import contextlib
            import io

            with contextlib.redirect_stderr(io.StringIO()):
                command = build_parser().parse_args(header.get("argv") or []).command
            if command not in FORWARDED:
                return "not a command the kbflow server runs"
        except SystemExit:  # a usage error: the client prints it itself
            return "a usage error"
        env = import_time_env(header.get("env") or {})
        if env != self.env:
            differs = sorted(k for k in set(env) | set(self.env) if env.get(k) != self.env.get(k))
            return f"other start-up settings than the kbflow server's ({', '.join(differs[:5])})"
        if header["env"].get("PREFECT_API_URL", self.api_url) != self.api_url:
            return "PREFECT_API_URL names another Prefect server"
        return ""

    def serve(self) -> None:
        path = socket_path(self.home)
        tmp = path.with_name(f".{SOCKET}.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(tmp))
        finally:
            os.umask(old_umask)
        os.chmod(tmp, 0o600)
        listener.listen(8)
        os.replace(tmp, path)  # atomically: a client never sees a socket that does not listen yet
        self.listener = listener
        inode = os.stat(path).st_ino
        print(f"kbflow server: warm runner ready on {path}", file=sys.stderr, flush=True)
        try:
            while os.getppid() == self.parent:
                import select

                if select.select([listener], [], [], 1.0)[0]:
                    conn, _ = listener.accept()
                    try:
                        self.handle(conn)
                    except (OSError, ValueError) as exc:  # one broken client must not stop the runner
                        print(f"kbflow server: a request failed: {exc}", file=sys.stderr, flush=True)
                    finally:
                        conn.close()
        finally:
            try:
                if os.stat(path).st_ino == inode:
                    path.unlink()
            except OSError:
                pass

    def handle(self, conn: socket.socket) -> None:
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if uid != os.getuid():
            _send(conn, {"refused": "another user"})
            return
        data, fds, _, _ = socket.recv_fds(conn, MAX_HEADER, 3)
        try:
            buffer = bytearray(data)
            header = _read_line(conn, buffer) if len(fds) == 3 else None
            reason = "no header or standard streams" if header is None else self.refusal(header)
            if reason:
                _send(conn, {"refused": reason})
                return
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                self.child(header, fds, conn)  # never returns
        finally:
            for fd in fds:
                os.close(fd)
        import time

        started = time.monotonic()
        _send(conn, {"accepted": True, "pid": pid})
        code = self.wait(pid, conn)
        _send(conn, {"exit": code})
        print(f"kbflow server: ran `{' '.join(header['argv'])}` (exit {code}, {time.monotonic() - started:.1f} s)",
              file=sys.stderr, flush=True)

    def wait(self, pid: int, conn: socket.socket) -> int:
        """The child's exit code; meanwhile: turn other clients away, pass a cancel on, notice a gone client."""
        import select
        import time

        buffer, gone_at = bytearray(), None
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
            if gone_at is not None and time.monotonic() - gone_at > CHILD_TERM_GRACE_S:
                os.kill(pid, signal.SIGKILL)
            readable = select.select([conn, self.listener] if gone_at is None else [self.listener], [], [], 0.2)[0]
            if self.listener in readable:
                other, _ = self.listener.accept()
                try:
                    _send(other, {"refused": "the kbflow server is busy with another command"})
                except OSError:
                    pass
                other.close()
            if conn in readable:
                try:
                    message = _read_line(conn, buffer)
                except (OSError, ValueError):
                    message = None
                if message is None:  # the client is gone (killed): stop its command
                    os.kill(pid, signal.SIGTERM)
                    gone_at = time.monotonic()
                elif message.get("cancel"):
                    os.kill(pid, signal.SIGINT)

    def child(self, header: dict, fds: list[int], conn: socket.socket) -> None:
        code = 70
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _die_with_parent(self.pid)
            conn.close()
            self.listener.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            os.chdir(header["cwd"])
            env = {k: v for k, v in header["env"].items()}
            env["PREFECT_API_URL"] = self.api_url
            os.environ.clear()
            os.environ.update(env)
            _reopen_standard_streams()
            import torch

            torch.set_num_threads(self.threads)
            from flows import cli, terminal

            terminal.bind_consoles()
            sys.argv = ["kbflow", *header["argv"]]
            code = cli.main(header["argv"])
        except SystemExit as exc:  # argparse: usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except KeyboardInterrupt:
            code = 130
        except BaseException:  # noqa: BLE001 - a bug: say it where the user looks
            import traceback

            traceback.print_exc()
        finally:
            try:
                import atexit

                atexit._run_exitfuncs()  # Prefect's log and event workers drain here
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)


def _reopen_standard_streams() -> None:
    """Text streams over the client's descriptors, buffered as Python would for them (line-buffered
    on a terminal): the runner's were opened for its own, non-terminal streams."""
    import io

    def text(fd: int, mode: str, **kw) -> io.TextIOWrapper:
        raw = open(fd, mode + "b", buffering=-1 if mode == "r" else 0, closefd=False)  # noqa: SIM115
        buffered = raw if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding="utf-8", line_buffering=os.isatty(fd) or fd == 2,
                                write_through=fd == 2, **kw)

    sys.stdin = text(0, "r")
    sys.stdout = text(1, "w")
    sys.stderr = text(2, "w", errors="backslashreplace")


def start_runner(home: Path, api_url: str, env: dict[str, str]):
    """The runner as a child process of `kbflow server` (it exits when its parent does)."""
    import subprocess

    return subprocess.Popen([sys.executable, "-m", "flows.warm_server", str(home), api_url, str(os.getpid())],
                            env={**env, "PREFECT_API_URL": api_url}, stdin=subprocess.DEVNULL,
                            cwd=str(Path(__file__).resolve().parents[1]))


def watch_runner(runner) -> None:
    """Say so when the runner dies while the server goes on: commands then run locally (slowly)."""
    import threading

    def wait() -> None:
        code = runner.wait()
        if code not in (0, -signal.SIGTERM):
            print(f"kbflow server: the warm runner stopped (exit {code}); ask and eval now run locally "
                  "(restart kbflow server to warm them again)", file=sys.stderr, flush=True)

    threading.Thread(target=wait, daemon=True, name="kbflow-runner-watch").start()


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent(parent: int) -> None:
    """SIGTERM this process when `parent` (the runner) dies (Linux): a runner stopped mid-request
    would otherwise leave its child running on, holding its run's lock, so the run is never reaped."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: nothing to arm
        return
    if os.getppid() != parent:  # the runner died before the signal was armed
        os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str]) -> int:
    home, api_url, parent = Path(argv[0]), argv[1], int(argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C on the server's terminal: the server stops us
    from flows.server import healthy
    from flows.terminal import quiet_libraries

    quiet_libraries(verbose=False, debug=False)  # as a plain client: its import-time settings match
    runner = Runner(home, api_url, parent)
    runner.warm()
    import time

    while not healthy(api_url):  # the children's flows need the Prefect server
        if os.getppid() != parent:
            return 0
        time.sleep(0.2)
    runner.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
