"""The long run under pytest: `pytest tests/e2e/test_cluster_soak.py -m cluster --soak-duration 1800
--soak-seed 7` (the same as `scripts/cluster.py soak --seed 7 --duration 1800`). Skipped without
--soak-duration."""
import pytest

from soak import soak

pytestmark = pytest.mark.cluster


def test_soak(request, tmp_path):
    duration = request.config.getoption("--soak-duration")
    if duration is None:
        pytest.skip("the long run needs --soak-duration SECONDS (and --soak-seed N)")
    seed = request.config.getoption("--soak-seed")
    res = soak(seed, duration, 3, tmp_path / f"soak-{seed}", out=tmp_path / "result.json")
    assert res["ok"], res
