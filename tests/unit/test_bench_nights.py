"""``epoch-audit bench-nights``' own arithmetic: the scaled horizon, the slope, the argument check.

The nights themselves (drops delivered night by night, gold equal to one run) are the product's
guarantee, tested in tests/e2e/test_nightly.py with the same drop cutter.
"""

from __future__ import annotations

import argparse

import pytest
from epoch_audit_tools.bench_nights import add_arguments, run, scaled_config, slope, stage_figures

from epoch_audit.config import load_config


@pytest.mark.parametrize(("hours", "lag"), [(24, 1440), (1, 60), (0.25, 15), (0.001, 1)])
def test_the_horizon_is_a_day_scaled_to_a_night(tmp_path, hours, lag):
    conf = scaled_config("local", hours, tmp_path / "nights.yaml")
    config = load_config(conf)
    assert config.incremental.traffic_lag_minutes == lag
    # nothing else moved
    base = load_config(None, "local")
    assert config.model_copy(update={"incremental": base.incremental}) == base


def test_slope_is_seconds_per_night():
    assert slope([10.0, 12.0, 14.0, 16.0]) == pytest.approx(2.0)
    assert slope([40.0, 40.0, 40.0]) == pytest.approx(0.0)
    assert slope([5.0]) is None


def test_fewer_than_two_nights_is_refused(capsys):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert run(parser.parse_args(["--nights", "1"])) == 2
    assert "--nights" in capsys.readouterr().err


def test_a_nights_log_line_keeps_its_stage_figures():
    night = {"stages": {"ingest": 12.34, "check": 40.0, "report": None}, "carry_write_seconds": 4.26}
    assert stage_figures(night) == "stages (s): ingest 12.3, check 40.0, carry write 4.3"
    assert stage_figures({"stages": {}}) == "stages (s): none"
