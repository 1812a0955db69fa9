"""Frame-size mixes: rates of any mix (checked against figures worked by hand), the --frame-sizes syntax,
and bad input named by option before anything runs."""

from __future__ import annotations

import pytest

from ovsperf_common.errors import FieldError
from ovsperf_common.framemix import FrameMix, TrafficKey, parse_frame_sizes
from ovsperf_common.units import line_rate_pps, mix_rates

TEN_GBE = 10e9


def test_imix_rates_on_10_gbe_worked_by_hand() -> None:
    # 7 × 64 + 4 × 594 + 1 × 1518 = 448 + 2376 + 1518 = 4342 B per 12 frames: 361.8333 B average.
    # On the wire 381.8333 B = 3054.6667 bit per frame: 10e9 / 3054.6667 = 3,273,679.6 frames/s.
    (imix,) = parse_frame_sizes("imix")
    assert isinstance(imix, FrameMix)
    assert imix.average_frame_bytes == pytest.approx(4342 / 12)
    rates = imix.rates(3_273_679.6, TEN_GBE)
    assert rates.line_rate_pps == pytest.approx(3_273_679.6, abs=0.1)
    assert rates.line_rate_percent == pytest.approx(100.0, abs=1e-5)
    assert rates.l1_bps == pytest.approx(TEN_GBE, rel=1e-7)
    # L2 leaves out the 20 B of preamble, SFD and gap per frame: 361.8333 / 381.8333 of L1.
    assert rates.l2_bps == pytest.approx(TEN_GBE * 361.8333333 / 381.8333333, rel=1e-7)
    # Half the frame rate is half the line rate.
    assert imix.rates(3_273_679.6 / 2, TEN_GBE).line_rate_percent == pytest.approx(50.0, abs=1e-5)


def test_a_plain_frame_size_is_a_mix_of_one() -> None:
    one = mix_rates([(64, 1)], 14_880_952.38, TEN_GBE)
    assert one.line_rate_pps == pytest.approx(line_rate_pps(64, TEN_GBE)) == pytest.approx(14_880_952.38)
    assert one.line_rate_percent == pytest.approx(100.0)
    # 1518 B: 10e9 / (1538 × 8) = 812,743.8 frames/s.
    assert mix_rates([(1518, 3)], 1.0, TEN_GBE).line_rate_pps == pytest.approx(812_743.8, abs=0.1)


def test_frame_sizes_syntax() -> None:
    items = parse_frame_sizes("64, imix ,1518:1/64:7/594:4,genome:aaaaaaaddddg")
    assert items[0] == 64
    assert items[1] == FrameMix("imix", ((64, 7), (594, 4), (1518, 1)))
    # A custom mix is named in its canonical form (ascending sizes): the same mix, the same name.
    assert items[2] == FrameMix("64:7/594:4/1518:1", ((64, 7), (594, 4), (1518, 1)))
    # RFC 6985 genome: a = 64, d = 512, g = 1518 B; counts are the weights (VSperf's default).
    assert items[3] == FrameMix("genome:aaaaaaaddddg", ((64, 7), (512, 4), (1518, 1)))
    assert parse_frame_sizes("9018:1/64:9", jumbo=True)[0] == FrameMix("64:9/9018:1", ((64, 9), (9018, 1)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("64:0/1518:1", "weight 0 of 64 B is not a whole number"),
        ("64:-1", "is a custom mix is SIZE:WEIGHT"),
        ("63:1/1518:1", "Frame size 63 B is outside 64..1518 B"),
        ("64:1/9018:1", "Frame size 9018 B is outside 64..1518 B"),
        ("64:7/64:4", "names 64 B more than once"),
        ("", "an empty item"),
        ("64,,128", "an empty item"),
        ("imix,64,imix", "imix given more than once"),
        ("64:7/594:4/1518:1,1518:1/594:4/64:7", "64:7/594:4/1518:1 given more than once"),
        ("genome:aaz", "an RFC 6985 genome takes"),
        ("mix", "not a frame size, a mix name (imix)"),
        ("64:1.5", "is a custom mix is SIZE:WEIGHT"),
    ],
)
def test_bad_frame_sizes_name_the_option(text: str, message: str) -> None:
    with pytest.raises(FieldError) as caught:
        parse_frame_sizes(text, option="--frame-sizes")
    assert caught.value.field == "--frame-sizes"
    assert message in str(caught.value)


def test_mix_rates_refuses_what_has_no_rate() -> None:
    for mix, message in (([], "at least one"), ([(64, 0.0)], "Weight 0.0"), ([(0, 1.0)], "Frame size 0")):
        with pytest.raises(ValueError, match=message):
            mix_rates(mix, 1.0, TEN_GBE)


def test_the_longest_names_fit_the_results_store_and_longer_mixes_are_refused() -> None:
    """Names go into the store's 255-character ``traffic`` column (with ``flows=N``): the limits
    (16 sizes, weights ≤ 4096, genomes ≤ 128 letters) keep every name that parses short enough."""
    widest = "/".join(f"{size}:4096" for size in range(9003, 9019))  # 16 sizes, 4-digit sizes
    [mix] = parse_frame_sizes(widest, jumbo=True)
    assert isinstance(mix, FrameMix) and len(mix.entries) == 16
    [genome] = parse_frame_sizes("genome:" + "a" * 128)
    assert isinstance(genome, FrameMix)
    for item in (mix, genome):
        label = TrafficKey(0, item.name, 1_048_576).store_label
        assert len(label) <= 255 and TrafficKey.from_store(0, label) == TrafficKey(0, item.name, 1_048_576)
    for text, message in (
        ("/".join(f"{64 + n}:1" for n in range(17)), "has more than 16 sizes"),
        ("64:4097/128:1", "weight 4097 of 64 B is not a whole number in 1…4096"),
        ("genome:" + "a" * 129, "an RFC 6985 genome takes 1…128 of the letters"),
    ):
        with pytest.raises(FieldError, match=message):
            parse_frame_sizes(text)


def test_the_average_size_of_a_row_is_its_size_or_its_mix_s() -> None:
    assert TrafficKey(64).average_frame_bytes == 64.0
    assert TrafficKey(0, "imix").average_frame_bytes == pytest.approx((7 * 64 + 4 * 594 + 1518) / 12)
    assert TrafficKey(0, "vsperf-imix").average_frame_bytes is None  # VSperf did not say its sizes


def test_trex_and_csit_imixes_are_other_mixes_than_ours_and_the_docs_say_so() -> None:
    from pathlib import Path

    from ovsperf_common import framemix

    # TRex, cisco-system-traffic-generator/trex-core scripts/stl/imix.py (commit 027850dab):
    # streams of 60, 590 and 1514 B (scapy frames, FCS not counted) at 28, 20 and 4 pps.
    (trex,) = parse_frame_sizes("64:28/594:20/1518:4")
    # FD.io CSIT GPL/traffic_profiles/trex/profile_trex_stateless_base_class.py (commit dfd450ac3)
    # IMIX_v4_1: 64, 570 and 1518 B including FCS ("deduct FCS") at 28, 16 and 4 pps; CSIT's
    # "Get Max Rate And Jumbo" uses its average, 353.83333 B.
    (csit,) = parse_frame_sizes("64:28/570:16/1518:4")
    (imix,) = parse_frame_sizes("imix")
    assert isinstance(trex, FrameMix) and isinstance(csit, FrameMix) and isinstance(imix, FrameMix)
    assert trex.average_frame_bytes == pytest.approx((28 * 64 + 20 * 594 + 4 * 1518) / 52)  # 379.69
    assert csit.average_frame_bytes == pytest.approx(353.83333, abs=1e-5)
    assert imix.average_frame_bytes == pytest.approx(361.83333, abs=1e-5)
    # TRex's 7:5:1 is not NFVbench's 7:4:1: 3.0 % fewer frames per second at line rate.
    assert imix.rates(1.0, TEN_GBE).line_rate_pps / trex.rates(1.0, TEN_GBE).line_rate_pps == pytest.approx(
        (379.6923 + 20) / (361.8333 + 20), abs=1e-5
    )
    lab = (Path(__file__).resolve().parents[2] / "docs" / "lab.md").read_text(encoding="utf-8")
    for where, text in (("framemix.py", framemix.__doc__ or ""), ("docs/lab.md", lab)):
        flat = " ".join(text.split())
        assert "28:20:4" in flat and "IMIX_v4_1" in flat, where
        assert "sends the same as" not in flat and "is the same without FCS" not in flat, where


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("64:" + "9" * 5000, "weight of mix '64:99999999999999999999"),
        ("9" * 5000 + ":1", "frame size '99999999999999999999…' (5000 digits)"),
        ("9" * 5000, "frame size '99999999999999999999…' (5000 digits) is outside every accepted range"),
        ("\u00b2", "not a frame size, a mix name"),  # '²'.isdigit() is True, int('²') fails
        ("64:\u0661", "is a custom mix is SIZE:WEIGHT"),  # Arabic-Indic 1: ASCII digits only
    ],
    ids=["weight-5000-digits", "size-5000-digits-in-mix", "size-5000-digits", "superscript", "arabic-digit"],
)
def test_numbers_too_long_or_not_ascii_give_one_line(text: str, message: str) -> None:
    # Issue 25 item 16: '--frame-sizes 64:<5000 digits>' crashed (int() refuses > 4300 digits).
    with pytest.raises(FieldError) as caught:
        parse_frame_sizes(text, option="--frame-sizes")
    assert message in str(caught.value) and caught.value.field == "--frame-sizes"
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


def test_a_mix_of_16000_sizes_is_refused_before_it_is_read() -> None:
    # Issue 25 item 15: the duplicate check (quadratic) ran over all 16,000 sizes before the
    # 16-size bound (~5 s per CSV row). The bound now comes first: with repeated sizes among
    # 16,000 the message is the bound's, and it names the mix by its first 80 characters.
    text = "/".join(f"{64 + n % 1000}:1" for n in range(16_000))
    with pytest.raises(FieldError) as caught:
        parse_frame_sizes(text)
    assert "has more than 16 sizes" in str(caught.value) and len(str(caught.value)) < 200
    many = ",".join(["64"] * 16_000)
    with pytest.raises(FieldError, match=r"^field '--frame-sizes': 64 given more than once\.$"):
        parse_frame_sizes(many)


def test_store_labels_with_odd_flow_digits_stay_names() -> None:
    assert TrafficKey.from_store(64, "flows=\u00b2") == TrafficKey(64, "flows=\u00b2", None)
    assert TrafficKey.from_store(64, "flows=" + "9" * 5000).flows is None
    assert TrafficKey.from_store(64, "imix flows=1000") == TrafficKey(64, "imix", 1000)
