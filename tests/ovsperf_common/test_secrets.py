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


# Issue 25, item 19: forms a hostile user found copied verbatim into a report's sources/. The AWS
# values are AWS's own documentation examples (docs.aws.amazon.com, "Authenticating Requests: Using
# Query Parameters (AWS Signature Version 4)" and "Managing access keys"); the Azure SAS is the shape
# of learn.microsoft.com's "Create a service SAS" example; the Digest header is RFC 7616's §3.9.1.
@pytest.mark.parametrize(
    ("text", "expected", "secrets"),
    [
        ("mysqladmin --password hunter2 status", "mysqladmin --password *** status", ["hunter2"]),
        ("tool --api-token 'two words' -v", "tool --api-token *** -v", ["two words"]),
        ("curl -u admin:hunter2 https://h/x", "curl -u admin:*** https://h/x", ["hunter2"]),
        ("curl -sS --user=admin:hunter2 https://h", "curl -sS --user=admin:*** https://h", ["hunter2"]),
        ("curl -uadmin:hunter2 https://h/x", "curl -uadmin:*** https://h/x", ["hunter2"]),
        ("curl -b 'sid=c00k1e' https://h/", "curl -b '***' https://h/", ["c00k1e"]),
        ("curl -H 'Cookie: sid=c00k1e; theme=1' https://h/", "curl -H 'Cookie: ***' https://h/", ["c00k1e"]),
        ("Set-Cookie: sid=c00k1e; Path=/; HttpOnly", "Set-Cookie: ***", ["c00k1e"]),
        (
            'Authorization: Digest username="Mufasa", realm="http-auth@example.org", '
            'uri="/dir/index.html", nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", '
            'response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"',
            "Authorization: Digest ***",
            ["753927fa0e85", "Mufasa"],
        ),
        (
            "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
            "aws4_request, SignedHeaders=host;range;x-amz-date, "
            "Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
            "Authorization: AWS4-HMAC-SHA256 ***",
            ["fe5f80f77d5fa3", "IOSFODNN7EXAMPLE"],
        ),
        ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID=***", ["IOSFODNN7EXAMPLE"]),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = ***",
            ["wJalrXUtnFEMI"],
        ),
        ("uploaded with key AKIAIOSFODNN7EXAMPLE.", "uploaded with key AKIA***.", ["IOSFODNN7EXAMPLE"]),
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNO+Kp==;EndpointSuffix=x",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=***;EndpointSuffix=x",
            ["Eby8vdM02xNO"],
        ),
        (
            "GET https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
            "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404 200",
            "GET https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=***&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
            "&X-Amz-SignedHeaders=host&X-Amz-Signature=*** 200",
            ["aeeed9bbccd4", "IOSFODNN7EXAMPLE"],
        ),
        (
            "https://s3.amazonaws.com/b/o?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1141889120"
            "&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D",
            "https://s3.amazonaws.com/b/o?AWSAccessKeyId=***&Expires=1141889120&Signature=***",
            ["vjbyPxybdZaNmGa", "IOSFODNN7EXAMPLE"],
        ),
        (
            "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256"
            "&X-Goog-Credential=sa%40p.iam.gserviceaccount.com%2F20190301%2Fauto%2Fstorage%2Fgoog4_request"
            "&X-Goog-Date=20190301T190859Z&X-Goog-Signature=5d6dd8c9a8f2",
            "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=***"
            "&X-Goog-Date=20190301T190859Z&X-Goog-Signature=***",
            ["5d6dd8c9a8f2", "gserviceaccount"],
        ),
        (
            "https://acct.blob.core.windows.net/c/b?sv=2019-02-02&sr=b&sp=rw"
            "&sig=GYQKsKfUAxkTk4Q%2Bny%2BAQ1Zqt2klzZOPPW8kHxGNVhY%3D",
            "https://acct.blob.core.windows.net/c/b?sv=2019-02-02&sr=b&sp=rw&sig=***",
            ["GYQKsKfUAxkTk4Q"],
        ),
        (
            "git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r",
            "git clone https://ghp_***@github.com/o/r",
            ["16C7e42F292c6912E7710c838347Ae178B4a"],
        ),
        ("GITLAB=glpat-xxxxxxxxxxxxxxxxxxxx1", "GITLAB=glpat-***", ["xxxxxxxxxxxxxxxxxxxx1"]),
    ],
)
def test_hostile_forms_are_masked(text: str, expected: str, secrets: list[str]) -> None:
    masked, count = redact(text)
    assert masked == expected
    assert count >= 1
    copied, _ = redact_bytes(text.encode(), "<redacted>")  # as copied into a report's sources/
    for secret in secrets:
        assert secret not in masked and secret.encode() not in copied


@pytest.mark.parametrize(
    "text",
    [
        "docker run -u 1000:1000 img",  # -u outside a curl command line is a uid:gid
        "the Authorization header is required",
        "cookie jar empty",
        "sort -u file",
    ],
)
def test_lookalikes_of_the_new_forms_are_untouched(text: str) -> None:
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://repo.example.com/repo;token=abc/x86_64", "path holds the secret parameter 'token'"),
        ("https://repo.example.com/private_token=abc/x86_64", "path holds the secret parameter"),
        ("https://h/r#access_token=x", "fragment holds the secret parameter 'access_token'"),
        ("https://h/r?X-Amz-Signature=abc", "'X-Amz-Signature'"),
        ("https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r", "token or key"),
        ("https://h/AKIAIOSFODNN7EXAMPLE/r", "token or key"),
        ("https://repo.example.com/brewroot/repos/x86_64/", None),
    ],
)
def test_url_credentials_in_path_fragment_and_token_shapes(url: str, why: str | None) -> None:
    reason = url_credentials(url)
    assert reason == why if why is None else (reason is not None and why in reason)


def test_mask_tree_masks_secret_keys_and_values_at_any_depth() -> None:
    from ovsperf_common.secrets import mask_tree

    data = {
        "build": "openvswitch-2.9.1",
        "hosts": {"dut": "dut.example.com", "bmc_password": "hunter2"},
        "repos": ["https://qe:pa55@repo/x", "https://repo/y"],
        "env": {"AWS_SECRET_ACCESS_KEY": "wJalrX", "n": 3, "ok": True, "none": None},
        "token": ["a", "b"],
    }
    assert mask_tree(data) == {
        "build": "openvswitch-2.9.1",
        "hosts": {"dut": "dut.example.com", "bmc_password": "***"},
        "repos": ["https://qe:***@repo/x", "https://repo/y"],
        "env": {"AWS_SECRET_ACCESS_KEY": "***", "n": 3, "ok": True, "none": None},
        "token": "***",
    }
