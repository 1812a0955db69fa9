"""Every secret pattern of ovsperf_common.secrets, and what it must leave alone."""

from __future__ import annotations

import pytest

from ovsperf_common.secrets import mask, redact, redact_bytes, url_credentials

BEGIN = "-----BEGIN " + "OPENSSH PRIVATE KEY-----"
END = "-----END " + "OPENSSH PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GUEST_PASSWORD = hunter2", "GUEST_PASSWORD = ***"),
        ("db.password: hunter2 # comment", "db.password: *** # comment"),
        ("password=hunter2;user=x", "password=***;user=x"),
        ("apiKey = 'abc123'", "apiKey = '***'"),
        ('TOKEN: "t0k"', 'TOKEN: "***"'),
        ("GUEST_PASSWORD = ['pw1', \"pw2\"]", "GUEST_PASSWORD = ['***', \"***\"]"),
        ("GUEST_PASSWORD = ('pw1',)", "GUEST_PASSWORD = ('***',)"),
        ("GUEST_PASSWORD = [secret]", "GUEST_PASSWORD = [***]"),
        ('{"user": "bob", "password": "hun\\"ter2"}', '{"user": "bob", "password": "***"}'),
        ('{"client_secret":"s3"}', '{"client_secret":"***"}'),
        ("Authorization: Bearer eyJhbGciOi.x.y", "Authorization: Bearer ***"),
        ("authorization: Basic dXNlcjpwdw==", "authorization: Basic ***"),
        (f"key:\n{BEGIN}\nAAAAB3Nza\nmore\n{END}\nafter", f"key:\n{BEGIN}***{END}\nafter"),
        (f"truncated {BEGIN}\nAAAA", f"truncated {BEGIN}***"),
        ("https://user:pw@repo.example.com/x", "https://user:***@repo.example.com/x"),
        ("postgresql+psycopg://ovs:s3cr%40t@db/ovsperf", "postgresql+psycopg://ovs:***@db/ovsperf"),
        ("http://h/repo?access_token=abc&x=1", "http://h/repo?access_token=***&x=1"),
        ("http://h/repo?x=1&password=abc", "http://h/repo?x=1&password=***"),
        ("sshpass -p hunter2 ssh root@tg", "sshpass -p *** ssh root@tg"),
    ],
)
def test_each_pattern_masks_the_value_only(text: str, expected: str) -> None:
    masked, count = redact(text)
    assert masked == expected
    assert count >= 1
    assert mask(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "throughput_rx_fps = 1488095.0",
        "TRAFFICGEN_DURATION = 30",
        "https://user@repo.example.com/x",
        "ssh root@tg01",
        "GUEST_LOOPBACK = ['testpmd']",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == (text, 0)


def test_a_key_containing_a_secret_word_is_masked_by_design() -> None:
    # False positives cost a masked number in a log; a missed secret leaks it.
    assert redact("tokens_per_second: 5") == ("tokens_per_second: ***", 1)


def test_bytes_survive_and_names_are_listed() -> None:
    data = b"\xff\xfe password=abc \x80"
    masked, count = redact_bytes(data)
    assert masked == b"\xff\xfe password=*** \x80"
    assert count == 1


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://user:pw@h/r", "password"),
        ("https://h/r?access_token=x", "access_token"),
        ("https://h/r?PASSWORD=x", "PASSWORD"),
        ("https://user@h/r", None),
        ("https://h/r?arch=x86_64", None),
        ("file:///srv/repo", None),
    ],
)
def test_url_credentials(url: str, why: str | None) -> None:
    reason = url_credentials(url)
    if why is None:
        assert reason is None
    else:
        assert reason is not None and why in reason


def test_log_lines_and_error_lines_are_masked(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse
    import logging

    from ovsperf_common.errors import OvsperfError
    from ovsperf_common.runner import run_command

    def command(_args: argparse.Namespace) -> int:
        logging.getLogger("test.secrets").warning("hub said: login 'bob' password=hunter2 refused")
        raise OvsperfError("Cannot reach 'https://bob:hunter2@hub.example.com/': refused; token=abc")

    assert run_command(argparse.ArgumentParser(prog="tool"), command, []) == 2
    err = capsys.readouterr().err
    assert "hunter2" not in err and "abc" not in err.split("token=")[-1]
    assert "password=*** refused" in err
    assert "tool: error: Cannot reach 'https://bob:***@hub.example.com/': refused; token=***" in err


def test_mask_pair_masks_secret_keys_whole_and_values_inside() -> None:
    from ovsperf_common.secrets import mask_pair

    assert mask_pair("GUEST_PASSWORD", "['a', 'b']") == "***"
    assert mask_pair("Repository", "https://qe:pw@repo/x") == "https://qe:***@repo/x"
    assert mask_pair("vSwitch", "OvsDpdkVhost") == "OvsDpdkVhost"
