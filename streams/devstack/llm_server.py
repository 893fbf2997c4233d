"""The local model server of the dev stack: llama-cpp-python's OpenAI-compatible server (its
own venv, ``state_dir/llama``, set up by ``make llama``) serving an assembled GGUF
(``streams.devstack.llm_weights``) on 127.0.0.1.

Invariants:
- Like the broker: ``llm_up`` is idempotent (a healthy server of ours is reused, a stale PID
  file discarded, an orphan adopted by its command line), detached (its own session), and
  ``llm_down`` only signals a process whose ``/proc/PID/cmdline`` names *our* model file.
- The served model is the one the settings name; a running server of ours that serves another
  model is a ``StackError`` (stop it first), never silently reused.
- Ready means ``GET /v1/models`` answers 200; every failure is one ``StackError`` line.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

from schemas.settings_groups import StackSettings
from streams.devstack.layout import StackError, StackPaths
from streams.devstack.llm_weights import WeightsError, ensure_weights
from streams.devstack.procs import cmdline, log_tail, port_open, read_pid, reap, terminate

__all__ = ["base_url", "llm_down", "llm_up", "served_model", "server_command", "server_python"]


CACHE_BYTES = 100 * 2**20


def worker_env(model: str, url: str) -> dict[str, str]:
    """The worker settings the local models measured best with (bench/results/extraction),
    printed by ``consolidator up --llm`` and used by ``demo --llm``."""
    return {
        "CONSOLIDATOR_LLM_PROVIDER": "openai",
        "CONSOLIDATOR_OPENAI_BASE_URL": url,
        "CONSOLIDATOR_OPENAI_MODEL": model,
        # One request at a time is all a local server on two cores answers anyway.
        "CONSOLIDATOR_LLM_CONCURRENCY": "1",
        "CONSOLIDATOR_OPENAI_TIMEOUT_S": "900",
        "CONSOLIDATOR_LLM_MAX_TOKENS": "768",
        # One event per call: batched prompts measured worse (tune recall 0.66 vs 0.94).
        "CONSOLIDATOR_EXTRACTION_BATCHING": "false",
        # No known facts in the extraction prompt (the 1.5B copied their old values back);
        # the link step sees them instead (tune: precision 0.94 -> 0.97, updates 4 -> 6 of 7).
        "CONSOLIDATOR_EXTRACTION_CONTEXT_TOKENS": "0",
    }


def _pid_file(p: StackPaths) -> Path:
    return p.root / "llm.pid"


def _log(p: StackPaths) -> Path:
    return p.root / "llm" / "server.log"


def _python(p: StackPaths) -> Path:
    return server_python(p.root)


def base_url(s: StackSettings) -> str:
    """The OpenAI-compatible base URL the server answers on."""
    return f"http://127.0.0.1:{s.local_llm_port}/v1"


def _ours(pid: int, p: StackPaths) -> Path | None:
    """The model file ``pid`` serves when it is our server, else None."""
    argv = cmdline(pid)
    if not argv or "llama_cpp.server" not in argv:
        return None
    with contextlib.suppress(ValueError, IndexError):
        model = Path(argv[argv.index("--model") + 1])
        if model.parent == (p.root / "llm").resolve():
            return model
    return None


def served_model(p: StackPaths) -> Path | None:
    """The model file our running server serves, or None when none of ours runs."""
    pid = read_pid(_pid_file(p))
    return _ours(pid, p) if pid is not None else None


def _models_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/models", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _wait_ready(s: StackSettings, p: StackPaths, pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = base_url(s)
    while time.monotonic() < deadline:
        reap(pid)
        if _ours(pid, p) is None:
            raise StackError(f"the model server exited: {log_tail(_log(p))}")
        if _models_ok(url):
            return
        time.sleep(0.5)
    raise StackError(f"the model server did not answer {url}/models in {timeout:.0f}s")


def server_command(
    python: Path, model: Path, alias: str, port: int, ctx: int = 4096, threads: int = 0
) -> list[str]:
    """The server's argv: ``model`` served as ``alias`` on 127.0.0.1:``port``."""
    threads = threads or len(os.sched_getaffinity(0))
    cmd = [str(python), "-m", "llama_cpp.server", "--model", str(model)]
    cmd += ["--model_alias", alias, "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--n_ctx", str(ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads)]
    # Evaluated prompt prefixes kept in RAM: the worker alternates extraction, link and judge
    # prompts, and the server alone keeps only the last one, so each extraction re-read its
    # ~1,000-token prefix after a link call. 20 recorded requests of a holdout run: 368 s
    # without, 191 s with 100 MiB (+0.9 GB resident: the cache counts the KV state, not the
    # logits each entry also holds; 2 GiB took 164 s and 15.9 GB).
    cmd += ["--cache", "true", "--cache_size", str(CACHE_BYTES)]
    return cmd


def server_python(state_dir: Path) -> Path:
    """The server venv's interpreter (``make llama``)."""
    return state_dir / "llama" / "bin" / "python"


def llm_up(s: StackSettings, p: StackPaths, timeout: float = 180.0) -> bool:
    """Ensure our model server runs the configured model; True when this call started it."""
    python = _python(p)
    if not python.exists():
        raise StackError(f"no llama-cpp-python server at {python}: run `make llm`")
    try:
        model = ensure_weights(s.local_llm_model, p.root / "llm").resolve()
    except WeightsError as exc:
        raise StackError(str(exc)) from None
    pid = read_pid(_pid_file(p))
    if pid is not None:
        serving = _ours(pid, p)
        if serving is None:
            _pid_file(p).unlink(missing_ok=True)
        elif serving != model:
            raise StackError(
                f"the model server serves {serving.name}, not {model.name}: "
                "run `consolidator down` first"
            )
        else:
            _wait_ready(s, p, pid, timeout)
            return False
    if port_open("127.0.0.1", s.local_llm_port):
        raise StackError(f"port 127.0.0.1:{s.local_llm_port} is taken by another process")
    cmd = server_command(
        python, model, s.local_llm_model, s.local_llm_port, s.local_llm_ctx, s.local_llm_threads
    )
    _log(p).parent.mkdir(parents=True, exist_ok=True)
    with _log(p).open("ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _pid_file(p).write_text(f"{proc.pid}\n")
    (p.root / "llm" / "server.json").write_text(json.dumps({"model": s.local_llm_model}))
    _wait_ready(s, p, proc.pid, timeout)
    return True


def llm_down(p: StackPaths, timeout: float = 20.0) -> bool:
    """Stop our model server (proven ours by its cmdline); True when one was stopped."""
    pid = read_pid(_pid_file(p))
    ours = pid is not None and _ours(pid, p) is not None
    if pid is not None and ours:
        terminate(pid, timeout)
    _pid_file(p).unlink(missing_ok=True)
    return ours
