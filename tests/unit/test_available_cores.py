"""How many model runs go side by side: the process's cores, capped by a container's quota.

Invariant: ``available_cores`` is always at least 1 and at most the process's affinity, and
a readable positive quota caps it at the quota rounded up; anything else in the cgroup files
(missing, "max", garbage, zero, negative, huge) leaves the affinity.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.embedding.embedder import available_cores

AFFINITY = len(os.sched_getaffinity(0))


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@settings(max_examples=200, deadline=None)
@given(quota=st.integers(1, 10**12), period=st.integers(1, 10**7), v2=st.booleans())
def test_a_positive_quota_caps_the_affinity_at_the_quota_rounded_up(
    quota: int, period: int, v2: bool
) -> None:
    with tempfile.TemporaryDirectory() as d:
        files = (
            {"cpu.max": f"{quota} {period}\n"}
            if v2
            else {"cpu/cpu.cfs_quota_us": f"{quota}\n", "cpu/cpu.cfs_period_us": f"{period}\n"}
        )
        got = available_cores(_write(Path(d), files))
    assert got == max(1, min(AFFINITY, -(-quota // period)))


@settings(max_examples=200, deadline=None)
@given(
    cpu_max=st.one_of(st.none(), st.text(max_size=40), st.sampled_from(["max 100000", "0 1"])),
    v1_quota=st.one_of(st.none(), st.text(max_size=20), st.sampled_from(["-1", "0", "-5"])),
    v1_period=st.one_of(st.none(), st.text(max_size=20), st.sampled_from(["0", "100000"])),
)
def test_anything_in_the_cgroup_files_gives_between_one_and_the_affinity(
    cpu_max: str | None, v1_quota: str | None, v1_period: str | None
) -> None:
    files = {
        name: text
        for name, text in {
            "cpu.max": cpu_max,
            "cpu/cpu.cfs_quota_us": v1_quota,
            "cpu/cpu.cfs_period_us": v1_period,
        }.items()
        if text is not None
    }
    with tempfile.TemporaryDirectory() as d:
        got = available_cores(_write(Path(d), files))
    assert 1 <= got <= AFFINITY


def test_no_quota_leaves_the_affinity(tmp_path: Path) -> None:
    assert available_cores(_write(tmp_path, {"cpu.max": "max 100000\n"})) == AFFINITY
    assert available_cores(tmp_path / "missing") == AFFINITY
