"""Tests of the rate formulas against the published numbers."""

from __future__ import annotations

import pytest

from ovsperf_common.units import check_frame_size, l1_bps, l2_bps, line_rate_pps


def test_64B_line_rate_at_10GbE_is_14_88_Mpps() -> None:
    assert line_rate_pps(64, 10e9) == pytest.approx(14_880_952.38, rel=1e-9)


@pytest.mark.parametrize(
    ("size", "mpps_2x10g"),
    # VSperf fixture README: line rate for 2 x 10GbE.
    [(64, 29.761905), (128, 16.891892), (256, 9.057971), (512, 4.699248), (1024, 2.394636), (1518, 1.625488)],
)
def test_line_rate_matches_vsperf_two_ports(size: int, mpps_2x10g: float) -> None:
    assert 2 * line_rate_pps(size, 10e9) / 1e6 == pytest.approx(mpps_2x10g, abs=1e-6)


def test_l1_adds_preamble_and_ifg_l2_does_not() -> None:
    assert l1_bps(14_880_952.38, 64) == pytest.approx(10e9, rel=1e-9)
    assert l2_bps(1_000_000, 64) == 512e6


@pytest.mark.parametrize("bad", [63, 1519, 0, True, 64.0])
def test_check_frame_size_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        check_frame_size(bad)  # type: ignore[arg-type]


def test_check_frame_size_jumbo() -> None:
    assert check_frame_size(9018, jumbo=True) == 9018
