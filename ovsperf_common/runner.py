"""Run every ovsperf command the same way: one parser setup, one logging setup, one error policy.

Each ``cli.py`` builds its :class:`argparse.ArgumentParser`, calls :func:`add_verbosity_options`
(or lets :func:`run_command` do it) and hands a function ``Namespace -> int`` to
:func:`run_command`. The runner (modelled on tmt's ``__main__.run_cli``, STYLE.md §4):

* parses the arguments (``--help`` exits 0, a usage error 2, both without a traceback);
* configures logging to stderr from ``-v``/``-q``;
* turns :class:`~ovsperf_common.errors.OvsperfError` into ``<prog>: error: <message>`` on stderr
  and the error's own exit code;
* turns any other exception (a bug) into the traceback at DEBUG level and one line
  ``<prog>: internal error: <type>: <message>`` with exit 2: a crash never exits 1, which means
  "regression";
* turns Ctrl-C that the command did not handle itself into one line and exit 2;
* turns a missing third-party module (a :class:`ModuleNotFoundError` of a module an install
  group provides, :mod:`ovsperf_common.installgroups`) into one line naming the group to add
  (``pip install 'ovsperf[lab]'``) and exit 2.

A ``cli.py`` imports only what its parser needs at module level (the standard library, PyYAML
and the project's light modules) and its heavy modules inside the command, per sub-command
(CONTRIBUTING.md, "Dependencies"): ``--help`` works without the role's install group, and a
missing group is that one line, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType

from ovsperf_common.errorfmt import bounded, escape_controls
from ovsperf_common.errors import OvsperfError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.installgroups import install_hint
from ovsperf_common.logsetup import configure_logging
from ovsperf_common.secrets import mask

log = logging.getLogger(__name__)

Command = Callable[[argparse.Namespace], "int | ExitCode"]
"""What a command does once its arguments are parsed; returns the exit code."""


def add_verbosity_options(parser: argparse.ArgumentParser) -> None:
    """Add ``-v/--verbose`` and ``-q/--quiet`` (counted) to ``parser``, once.

    Each ``-v`` lowers the log level one step from INFO (DEBUG), each ``-q`` raises it (WARNING,
    ERROR). Calling it twice on the same parser adds nothing the second time.
    """
    if any("--verbose" in action.option_strings for action in parser._actions):
        return
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (repeatable)")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less log output (repeatable)")


def one_line(text: object) -> str:
    r"""Return ``str(text)`` with control characters (newline, tab, ESC, …) escaped, for one log line.

    A value from outside (a directory name, a server reply) must not split a stdout or log line or
    move the terminal's cursor: ``'a\\nb'`` becomes ``'a\\\\nb'``.
    """
    return escape_controls(str(text))


def run_command(parser: argparse.ArgumentParser, command: Command, argv: list[str] | None = None) -> int:
    """Parse ``argv`` with ``parser``, set up logging and run ``command``; return the exit code.

    :param parser: the command's parser; ``-v``/``-q`` are added when missing.
    :param command: called with the parsed arguments; returns the exit code.
    :param argv: the arguments without the program name; ``None`` means ``sys.argv[1:]``.
    :returns: 0 for ``--help``; 2 for a usage error; the command's code; the error's ``exit_code``
        for an :class:`OvsperfError`; 2 for a missing install group, any other exception or an
        unhandled Ctrl-C.
    """
    add_verbosity_options(parser)
    prog = parser.prog
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse: 0 for --help, 2 for usage errors (message already printed)
            return int(exc.code) if isinstance(exc.code, int) else int(ExitCode.ERROR)
        configure_logging(args.verbose, args.quiet)
        return int(command(args))
    except OvsperfError as err:
        print(f"{prog}: error: {message_line(err)}", file=sys.stderr)
        return int(err.exit_code)
    except KeyboardInterrupt:
        print(f"{prog}: error: interrupted.", file=sys.stderr)
        return int(ExitCode.ERROR)
    except ModuleNotFoundError as err:
        hint = install_hint(err.name, prog)
        log.debug("Missing module in %s.", prog, exc_info=True)
        if hint is None:  # a module of the project or the standard library: a bug
            return _internal_error(prog, err)
        print(f"{prog}: error: {hint}", file=sys.stderr)
        return int(ExitCode.ERROR)
    except Exception as err:  # the one place a bug is turned into exit 2 (STYLE.md §4)
        log.debug("Unexpected exception in %s.", prog, exc_info=True)
        return _internal_error(prog, err)


def _internal_error(prog: str, err: Exception) -> int:
    """Print the one-line internal error for ``err`` (its traceback is logged at DEBUG); return 2."""
    print(
        f"{prog}: internal error: {type(err).__name__}: {message_line(err)} "
        "(a bug; run with -v for the traceback)",
        file=sys.stderr,
    )
    return int(ExitCode.ERROR)


def message_line(err: BaseException) -> str:
    """Return an error's message on one line.

    Runs of white space (newlines and tabs too) become one space; other control characters are
    escaped (:func:`one_line`); secrets are masked (``ovsperf_common.secrets``): a server's fault
    text that echoes a password shows ``***``; a message longer than
    :data:`~ovsperf_common.errorfmt.MAX_ECHO_CHARS` keeps its start and end
    (:func:`~ovsperf_common.errorfmt.bounded`): an error echoing 117 KB of input stays one
    readable line.
    """
    return bounded(mask(one_line(" ".join(str(err).split()))))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Turn SIGTERM into ``KeyboardInterrupt`` while the block runs, so that its teardown runs too.

    A command that starts processes (the lab's OVS and generator, the virtual lab's VMs) wraps its
    work in it: ``timeout``, a cancelled CI job or ``kill`` then stops what it started instead of
    leaving it behind. The previous handler is restored on exit.
    """
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
