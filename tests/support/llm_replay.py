"""Replay a recorded run's model answers (``python -m bench.extraction --replay TRANSCRIPT``):
the worker meets a local stub that answers each request with what the real model answered to
the same message in the transcript, so a change around the model (a guard, the resolution,
the scoring) is measured in seconds on the answers a real model gave, without the model.

The figures are those of the product's code today on yesterday's answers: the prompt itself
is not measured (a changed prompt needs a real run), and tokens per event are the stub's
whitespace counts, not a server's.

Invariants:
- A request is matched by what it asks, not by the whole prompt: the message part of an
  extraction prompt (from ``Message from`` on: the known facts listed may differ once a
  decision differs, so only whether any are listed counts: the again step asks the same
  message with facts after an empty answer without), the items of a judge's question (their
  numbers aside). The first recorded answer to the same question wins.
- A batched judge request the transcript never saw whole (its pairs are those of one batch,
  so a change elsewhere in the batch changes the list) is answered item by item from any
  recorded call that had the same item, when every item has one (counted ``composed``).
- A request the transcript never saw otherwise is answered with nothing (no candidates, no
  decisions) and counted (``misses``): a replay that diverges says so in its result. With
  ``live`` (a model's base URL) it is asked of that model instead and counted (``asked``):
  a new question measured on the recorded answers to the old ones.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from pathlib import Path
from typing import Any

_ITEM = re.compile(r'"item": \d+, ')
_NUMBER = re.compile(r'"item": (\d+), ')


def _items(last: str) -> dict[int, str]:
    """A judge question's items: number -> the item's text without its number."""
    out = {}
    for line in last.splitlines():
        found = _NUMBER.search(line)
        if found:
            out[int(found.group(1))] = _NUMBER.sub("", line)
    return out


def _verdicts(content: str) -> dict[int, str]:
    try:
        decisions = json.loads(content).get("decisions") or []
        return {int(d["item"]): str(d["verdict"]) for d in decisions}
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}


def question_key(body: dict[str, Any]) -> str:
    """What a chat request asks (module docstring)."""
    messages = body.get("messages") or []
    system = str(messages[0].get("content", "")) if messages else ""
    last = str(messages[-1].get("content", "")) if messages else ""
    at = last.find("Message from")
    asked = last[at:] if at >= 0 else _ITEM.sub("", last)
    listed = at >= 0 and "Known facts: (none)" not in last[:at]
    return f"{system[:80]}\n{listed}\n{asked}"


class Replay:
    """A responder for ``tests.support.openai_stub.OpenAIStub`` from a recorder transcript."""

    def __init__(self, transcript: Path, live: str | None = None) -> None:
        self.live = live
        self.asked = 0
        self.answers: dict[str, str] = {}
        self.items: dict[tuple[str, str], str] = {}  # (system, item text) -> verdict
        for line in transcript.read_text().splitlines():
            try:
                record = json.loads(line)
                content = record["response"]["choices"][0]["message"]["content"]
                key = question_key(record["request"])
                messages = record["request"]["messages"]
                system = str(messages[0].get("content", ""))[:80]
                asked = _items(str(messages[-1].get("content", "")))
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                continue  # an unanswered or failed request: nothing to replay
            self.answers.setdefault(key, str(content))
            for n, verdict in _verdicts(str(content)).items():
                if n in asked:
                    self.items.setdefault((system, asked[n]), verdict)
        self.misses = 0
        self.composed = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        found = self.answers.get(question_key(body))
        if found is not None:
            return found
        system = str((body.get("messages") or [{}])[0].get("content", ""))
        if '"decisions"' in system:
            asked = _items(str((body.get("messages") or [{}])[-1].get("content", "")))
            got = {n: self.items.get((system[:80], text)) for n, text in asked.items()}
            if got and all(v is not None for v in got.values()):
                with self._lock:
                    self.composed += 1
                decisions = [{"item": n, "verdict": v} for n, v in sorted(got.items())]
                return json.dumps({"decisions": decisions})
        if self.live:
            with self._lock:
                self.asked += 1
            return self._ask(body)
        with self._lock:
            self.misses += 1
        if '"now"' in system:
            return '{"now": []}'
        if '"links"' in system:
            return '{"links": []}'
        if '"answer"' in system:
            return '{"answer": "no"}'
        return '{"decisions": []}' if '"decisions"' in system else '{"candidates": []}'

    def _ask(self, body: dict[str, Any]) -> str:
        assert self.live is not None
        return post_chat(self.live, body, 900)


def post_chat(base: str, body: dict[str, Any], timeout: float) -> str:
    """One chat completion from an OpenAI-compatible server: the answer's text."""
    request = urllib.request.Request(
        f"{base}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return str(json.load(reply)["choices"][0]["message"]["content"])
