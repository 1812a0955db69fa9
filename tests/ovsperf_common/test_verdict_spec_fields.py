"""Overall verdict → exit code, from_spec, and the field validators."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ovsperf_common import fields
from ovsperf_common.errors import FieldError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.spec import SpecEnum
from ovsperf_common.verdict import Overall, combine


@pytest.mark.parametrize(
    ("overall", "code"),
    [
        (Overall.PASS, ExitCode.OK),
        (Overall.REGRESSION, ExitCode.REGRESSION),
        (Overall.INVALID, ExitCode.ERROR),
        (Overall.NO_RESULTS, ExitCode.NO_RESULTS),
    ],
)
def test_overall_maps_to_one_exit_code(overall: Overall, code: ExitCode) -> None:
    assert overall.exit_code is code
    assert str(overall) == overall.value


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([], Overall.NO_RESULTS),
        ([Overall.NO_RESULTS], Overall.INVALID),
        ([Overall.PASS, Overall.NO_RESULTS], Overall.INVALID),
        ([Overall.PASS, Overall.PASS], Overall.PASS),
        ([Overall.PASS, Overall.REGRESSION], Overall.REGRESSION),
        ([Overall.REGRESSION, Overall.INVALID, Overall.PASS], Overall.INVALID),
    ],
)
def test_combine(verdicts: list[Overall], expected: Overall) -> None:
    assert combine(verdicts) is expected


class _Colour(SpecEnum):
    DARK_RED = "dark-red"
    BLUE = "blue"


@pytest.mark.parametrize("spec", ["dark-red", "DARK-RED", " Dark-Red ", "dark_red", "DARK_RED"])
def test_from_spec_accepts_value_or_name_in_any_case(spec: str) -> None:
    assert _Colour.from_spec(spec) is _Colour.DARK_RED
    assert str(_Colour.DARK_RED) == "dark-red"


@pytest.mark.parametrize("spec", ["green", "", None, 3, ["blue"]])
def test_from_spec_rejects_and_lists_valid_values(spec: object) -> None:
    with pytest.raises(FieldError) as info:
        _Colour.from_spec(spec, field="colour")
    assert info.value.field == "colour"
    assert "expected one of 'dark-red', 'blue'" in str(info.value)
    assert "is not a valid colour;" in str(info.value)


def test_field_error_is_located_with_file_and_entry() -> None:
    err = FieldError("Expected a whole number, got a string.", field="dut.queues")
    assert err.located(Path("/etc/c.yaml"), ("scenario", "OVS_DPDK1q")) == (
        "'/etc/c.yaml', scenario 'OVS_DPDK1q', field 'dut.queues': Expected a whole number, got a string."
    )


def test_integer_and_number_validators() -> None:
    assert fields.positive_int(3, "n") == 3
    assert fields.non_negative_int(0, "n") == 0
    assert fields.number(2, "x", minimum=0) == 2.0
    for bad in (True, "3", 3.0, None):
        with pytest.raises(FieldError, match="is not a whole number"):
            fields.integer(bad, "n")
    with pytest.raises(FieldError, match="Expected a positive integer, got 0"):
        fields.positive_int(0, "n")
    with pytest.raises(FieldError, match="below the minimum 0"):
        fields.non_negative_int(-1, "n")
    with pytest.raises(FieldError, match="above the maximum 8"):
        fields.integer(9, "n", maximum=8)
    for bad_number in (math.nan, math.inf, 1e309):
        with pytest.raises(FieldError, match="finite"):
            fields.number(bad_number, "x")
    with pytest.raises(FieldError, match="greater than 0"):
        fields.number(0, "x", minimum=0, exclusive_minimum=True)
    with pytest.raises(FieldError, match="False is not a number"):
        fields.number(False, "x")


def test_string_validators_refuse_what_leaves_a_line() -> None:
    assert fields.string("tg01 eth0", "host") == "tg01 eth0"
    for bad in ("tg01\n__import__('os')", "a\tb", "x\x00", ""):
        with pytest.raises(FieldError) as info:
            fields.string(bad, "host")
        assert info.value.field == "host"
    assert fields.safe_name("OVS_DPDK1q", "scenario") == "OVS_DPDK1q"
    assert fields.safe_name("user@example.com,v=2") == "user@example.com,v=2"
    for bad in ("../x", "a b", "-rf", "x" * 201, "a;b", "a..b", ".hidden", "a/b", "a\nb", "name\n"):
        with pytest.raises(FieldError, match="not a safe name"):
            fields.safe_name(bad, "scenario")
    assert fields.hostname("dut01.lab.example.com") == "dut01.lab.example.com"
    assert fields.hostname("192.0.2.7") == "192.0.2.7"
    for bad in ("dut_01", "-x", "a..b", "x" * 64 + ".com", "host\nname", "dut01\n"):
        with pytest.raises(FieldError, match="host name"):
            fields.hostname(bad)


def test_mapping_keys_and_lists() -> None:
    data = fields.mapping({"a": 1}, "root")
    fields.reject_unknown(data, ("a", "b"), "root")
    with pytest.raises(FieldError) as info:
        fields.reject_unknown({"a": 1, "c": 2}, ("a", "b"), "root")
    assert info.value.field == "root.c"
    assert "expected one of a, b" in info.value.reason
    with pytest.raises(FieldError, match="Required field is missing") as missing:
        fields.required(data, "b", "root")
    assert missing.value.field == "root.b"
    with pytest.raises(FieldError, match="Expected a mapping, got a list"):
        fields.mapping([1], "root")
    with pytest.raises(FieldError, match="not a string"):
        fields.mapping({1: 2}, "root")


def test_spec_enum_members_are_their_strings() -> None:
    import json

    assert _Colour.BLUE == "blue"
    assert f"{_Colour.DARK_RED:>9}" == " dark-red"
    assert json.dumps({"c": _Colour.BLUE}) == '{"c": "blue"}'
    assert Overall.from_spec("regression") is Overall.REGRESSION


def test_kernel_options_are_one_token_and_paths_are_plain_absolute() -> None:
    for good in ("iommu=pt", "isolcpus=2-5,8", "default_hugepagesz=1G", "quiet", "nohz_full=2-19"):
        assert fields.kernel_option(good, "k") == good
    for bad in ("a b", "x='y'", "$(reboot)", "x=`id`", "a\nb", "", 5):
        with pytest.raises(FieldError, match="not one kernel option"):
            fields.kernel_option(bad, "kernel_options[0]")
    assert fields.absolute_path("/var/lib/img.qcow2", "p") == "/var/lib/img.qcow2"
    for bad_path in ("relative/x", "/a'b", "/a$b", "/a\\b", "/a\nb"):
        with pytest.raises(FieldError):
            fields.absolute_path(bad_path, "guest_image")
