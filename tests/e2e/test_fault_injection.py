"""The fault-injection verdict at CI size: 2,000 events, two SIGKILLs, a database restart.

Runs ``tests/support/fault_run.py`` in-process (its own embedded PostgreSQL, the session's
broker; no broker restart) and asserts the verdict against a clean run of the same input.
About a minute on 2 cores. The full size is ``.venv/bin/python -m bench.fault_injection``.
"""

from __future__ import annotations

import pytest

from tests.support import fault_run
from tests.support.fault_verdict import print_counts
from tests.support.openai_stub import OpenAIStub, draw

pytestmark = pytest.mark.e2e


def test_fault_injection_verdict_holds(kafka_bootstrap: str) -> None:
    args = fault_run.parse_args(
        ["--quick", "--kafka-bootstrap", kafka_bootstrap, "--timeout", "180"]
    )
    assert (args.events, args.kills, args.no_broker_restart) == (2000, 2, True)
    result = fault_run.run(args)
    print_counts(result)  # shown by pytest on failure
    faulty = result["faulty"]
    assert [f["kind"] for f in faulty["faults"]].count("kill") == 2
    assert [f["kind"] for f in faulty["faults"]].count("db") == 1
    assert result["verdict"]["checks"] == {k: True for k in result["verdict"]["checks"]}
    assert result["verdict"]["holds"]
    assert faulty["events_stored"] == 2000
    assert faulty["change_ids_distinct"] == result["clean"]["change_ids_distinct"] > 2000


def test_stub_random_faults_are_deterministic_and_accounted() -> None:
    # The same seed gives the same statuses for the same request numbers, whatever the clock.
    assert [draw(3, n) for n in range(5)] == [draw(3, n) for n in range(5)]
    assert [draw(3, n) for n in range(5)] != [draw(4, n) for n in range(5)]
    import openai

    def statuses(seed: int) -> list[int]:
        with OpenAIStub(rate_limit_rate=0.2, error_rate=0.1, fault_seed=seed) as stub:
            client = openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0)
            out = []
            for i in range(40):
                try:
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": f"hello {i}"}]
                    )
                    out.append(200)
                except openai.APIStatusError as exc:
                    out.append(exc.status_code)
            usage = stub.usage
            assert usage.requests == 40
            assert usage.rate_limited == out.count(429)
            assert usage.errors == out.count(500)
            assert usage.completions == out.count(200)
            assert usage.prompt_tokens == 2 * out.count(200)  # "hello N": two tokens each
            assert usage.as_dict()["by_status"] == {str(k): out.count(k) for k in sorted(set(out))}
            return out

    first = statuses(11)
    assert first == statuses(11)
    assert 0 < first.count(429) < 40 and 0 < first.count(500) < 40
