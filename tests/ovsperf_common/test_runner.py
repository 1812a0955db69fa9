"""The shared CLI runner: exit codes, one-line errors, verbosity, crash policy."""

from __future__ import annotations

import argparse
import logging
from typing import ClassVar, NoReturn

import pytest

from ovsperf_common.errors import NoResultsError, OvsperfError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import add_verbosity_options, one_line, run_command


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--value", type=int, default=0)
    return parser


class _CustomError(OvsperfError):
    exit_code: ClassVar[ExitCode] = ExitCode.REGRESSION


@pytest.mark.parametrize(
    ("raised", "code", "line"),
    [
        (OvsperfError("Bad.\n  second\tline\x1b"), 2, "tool: error: Bad. second line\\x1b"),
        (NoResultsError("Nothing in '/r'."), 3, "tool: error: Nothing in '/r'."),
        (_CustomError("custom"), 1, "tool: error: custom"),
        (KeyboardInterrupt(), 2, "tool: error: interrupted."),
    ],
)
def test_errors_become_one_line_and_their_exit_code(
    capsys: pytest.CaptureFixture[str], raised: BaseException, code: int, line: str
) -> None:
    def command(_args: argparse.Namespace) -> int:
        raise raised

    assert run_command(_parser(), command, []) == code
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [line]


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyError("k"), ZeroDivisionError(), OSError(5, "EIO")])
def test_a_crash_is_exit_2_with_one_line_never_1(capsys: pytest.CaptureFixture[str], exc: Exception) -> None:
    def command(_args: argparse.Namespace) -> int:
        raise exc

    assert run_command(_parser(), command, []) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"tool: internal error: {type(exc).__name__}:")


def test_a_crash_shows_the_traceback_with_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    def command(_args: argparse.Namespace) -> int:
        raise RuntimeError("boom")

    assert run_command(_parser(), command, ["-v"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "RuntimeError: boom" in err


def test_an_error_while_parsing_is_reported_like_any_other(capsys: pytest.CaptureFixture[str]) -> None:
    class _Raising(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise OvsperfError(f"{message} (see 'tool --help').")

    assert run_command(_Raising(prog="tool"), lambda _a: 0, ["--nope"]) == 2
    assert capsys.readouterr().err == "tool: error: unrecognized arguments: --nope (see 'tool --help').\n"


def test_help_is_0_usage_error_is_2_and_return_value_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command(_parser(), lambda a: int(a.value), ["--help"]) == 0
    assert "-v, --verbose" in capsys.readouterr().out
    assert run_command(_parser(), lambda a: int(a.value), ["--value", "x"]) == 2
    assert "invalid int value" in capsys.readouterr().err
    assert run_command(_parser(), lambda a: int(a.value), ["--value", "3"]) == 3
    assert run_command(_parser(), lambda _a: ExitCode.REGRESSION, []) == 1


@pytest.mark.parametrize(
    ("argv", "level"), [([], logging.INFO), (["-v"], logging.DEBUG), (["-qq"], logging.ERROR)]
)
def test_verbosity_sets_the_root_level(argv: list[str], level: int) -> None:
    seen: list[int] = []
    run_command(_parser(), lambda _a: seen.append(logging.getLogger().level) or 0, argv)
    assert seen == [level]


def test_verbosity_options_are_added_once() -> None:
    parser = _parser()
    add_verbosity_options(parser)
    add_verbosity_options(parser)
    assert sum("--verbose" in a.option_strings for a in parser._actions) == 1


def test_one_line_escapes_control_characters() -> None:
    assert one_line("plain name é") == "plain name é"
    assert one_line("a\nprocessed\tx\x1b[2J") == "a\\nprocessed\\tx\\x1b[2J"
    assert "\n" not in one_line("x\r\ny")


def test_third_party_log_lines_reach_stderr_without_raw_control_characters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 25 item 20: a matplotlib glyph warning and an SSH server's banner (logged by paramiko)
    carried a raw ESC to the terminal; the handler escapes it, keeps the line and tracebacks."""

    def command(_: argparse.Namespace) -> int:
        logging.getLogger("matplotlib.font_manager").warning(
            "Glyph 27 (\x1b) missing from font(s) DejaVu Sans."
        )
        logging.getLogger("paramiko.transport").warning("Banner: \x1b]0;owned\x07\x1b[2J\rroot# ")
        try:
            raise ValueError("boom\x1b[31m")
        except ValueError:
            logging.getLogger("x").warning("caught", exc_info=True)
        return 0

    assert run_command(_parser(), command, []) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err and "\x07" not in err
    assert "Glyph 27 (\\x1b) missing from font(s) DejaVu Sans." in err
    assert "Banner: \\x1b]0;owned\\x07\\x1b[2J\\rroot# " in err
    assert "Traceback (most recent call last):\n" in err  # newlines of a traceback stay
    assert "ValueError: boom\\x1b[31m" in err


def test_an_error_echoing_a_huge_input_is_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25 item 20: an error line echoed 117 KB of input; it keeps its start and end only."""
    echoed = "A" * 117_000

    def command(_: argparse.Namespace) -> int:
        logging.getLogger("x").warning("Skipped '%s': unreadable.", echoed)
        raise OvsperfError(f"Field 'mix' of 'c.yaml' is '{echoed}'; give at most 16 sizes.")

    assert run_command(_parser(), command, []) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    warning, error = lines
    assert len(warning) < 4200 and warning.endswith("AAAA': unreadable.")
    assert error.startswith("tool: error: Field 'mix' of 'c.yaml' is 'AAAA")
    assert error.endswith("AAAA'; give at most 16 sizes.")
    assert len(error) <= len("tool: error: ") + 4000 + 40
    assert "characters left out" in error
