"""How every tf_forget command starts and stops: `run(main, name)`.

`absl.app.run` with the project's rules for what a user sees:
  * a bad flag, a missing required flag or a stray argument is one line,
    "<name>: error: <problem> (see --help)", and exit status 1 (absl prints the whole usage,
    up to ~140 lines); `--help` / `--helpfull` print the flags and exit 0 (absl: 1), `--help`
    section by section when the binary gives its text (`run(help_fn=...)`; `sectioned_help`
    of its flags, `help_text`);
  * an `errors.Error` (bad input, a bad artifact) or `sys.exit("<one line>")` is that line on
    the terminal's stderr and exit status 1;
  * Ctrl-C (SIGINT) and SIGTERM stop the command where it is: finished artifacts stay (every
    artifact is written atomically), one line "<name>: interrupted during <stage>, N of M units
    done; run the same command to resume" (`tf_forget.cli.status`), exit status 130 / 143;
  * TensorFlow's, LiteRT's and the converter's output goes to a log file, not the terminal
    (`tf_forget.cli.console`); `--verbose` keeps it on the terminal;
  * standard output closed by its reader (`... | head -1`) is no error: `--help` and a
    command that is done exit as they would (the rest of the output is dropped); a command
    that was still working stops with exit status 141 (`console.PIPE_CLOSED`, as a shell
    reports a writer stopped by SIGPIPE), with the line "<name>: stopped during <stage> (its
    output was closed); run the same command to resume" once a stage is under way;
  * anything else is a bug: its traceback is printed, exit status 1.
The binary's `main` returns its exit status (None: 0) and may call `console.attach(run_dir)`
once its run directory is its own, so that the log is kept there.
"""

import contextlib
import signal
import sys
import traceback

from absl import app
from absl import flags

from tf_forget.artifacts import errors
from tf_forget.artifacts import run_lock
from tf_forget.cli import console
from tf_forget.cli import startup
from tf_forget.cli import status
from tf_forget.executor import collector

INTERRUPTED = startup.INTERRUPTED  # 128 + SIGINT
TERMINATED = startup.TERMINATED  # 128 + SIGTERM

_VERBOSE = flags.DEFINE_bool(
  "verbose",
  False,
  "Show TensorFlow's, LiteRT's and the converter's own output on the "
  "terminal (by default it goes to <run directory>/logs/).",
)


IMAGE_SIZE_MESSAGE = "image_size must be two positive integers H,W, e.g. 64,64"


def image_size_ok(values):
  """Validator of an `--image_size` list flag: None, or exactly two positive integers."""
  return values is None or (
    len(values) == 2 and all(str(v).strip().isdigit() and int(v) > 0 for v in values)
  )


class Terminated(KeyboardInterrupt):
  """SIGTERM, raised in the main thread so that it unwinds like Ctrl-C."""


_RECEIVED = []  # the signals this process was stopped by, first first


def _on_signal(signum, frame):
  """Ctrl-C / SIGTERM: noted (see `_status`), then raised in the main thread."""
  del frame
  _RECEIVED.append(signum)
  raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _received():
  """The interrupt this process got, as an exception (None if it got none)."""
  if not _RECEIVED:
    return None
  return Terminated() if _RECEIVED[0] == signal.SIGTERM else KeyboardInterrupt()


def _usage(name, message):
  console.error(f"{name}: error: {' '.join(str(message).split())} (see --help)")
  sys.exit(1)


HELP_FLAGS = ("--help", "-h", "-?", "--helpshort")


def help_text(doc, sections):
  """The command's `--help`: its docstring, then its flags section by section.

  Args:
    doc: the binary's module docstring.
    sections: [(title, [(flag name, its help, its default as text or None)])]; the binary
      reads them from its own flags.
  """
  lines = [(doc or "").rstrip(), ""]
  for title, entries in sections:
    lines.append(f"{title}:")
    for flag_name, text, default in entries:
      default = "" if default is None else f" (default: {default})"
      lines.append(
        flags.text_wrap(f"--{flag_name}: {text}{default}", indent="      ", firstline_indent="  ")
      )
    lines.append("")
  lines.append("(--helpfull: every flag of every module, as absl lists them)")
  return "\n".join(lines)


def sectioned_help(doc, sections, flag_values, module_name):
  """`help_text` of a binary's flags listed by name, each flag's help and default read.

  Args:
    doc: the binary's module docstring.
    sections: [(title, [flag names])]: every flag of `module_name` and of this module
      (`--verbose`) under exactly one title.
    flag_values: the `flags.FlagValues` holding the flags (a binary's: `flags.FLAGS`).
    module_name: the module that defines the flags, e.g. the binary's `__name__` ("__main__"
      is the script `sys.argv[0]`, as absl records it).

  Raises:
    AssertionError: a flag of the module in no section, a flag listed twice or a name that is
      no flag (a bug of the binary, said loudly rather than hidden from `--help`).
  """
  module_name = sys.argv[0] if module_name == "__main__" else module_name
  by_module = flag_values.flags_by_module_dict()
  own = {f.name for m in (module_name, __name__) for f in by_module.get(m, [])}
  listed = [n for _, names in sections for n in names]
  found = {
    "flags in no --help section": own - set(listed),
    "flags in two --help sections": {n for n in listed if listed.count(n) > 1},
    "no such flags": {n for n in listed if n not in flag_values},
  }
  problems = [f"{what}: {', '.join(sorted(names))}" for what, names in found.items() if names]
  if problems:
    raise AssertionError("; ".join(problems))
  entry = lambda n: (
    n,
    flag_values[n].help,
    None if flag_values[n].default is None else flag_values[n].default_as_str,
  )
  return help_text(doc, [(title, [entry(n) for n in names]) for title, names in sections])


def _parser(name, help_fn=None):
  def parse(argv):
    if help_fn is not None and any(a in HELP_FLAGS for a in argv[1:]):
      print(help_fn())
      sys.stdout.flush()  # a closed stdout fails here, not at exit (`run`)
      sys.exit(0)
    try:
      return flags.FLAGS(argv)
    except flags.Error as e:
      _usage(name, e)
    except SystemExit as e:  # absl's --help / --helpshort / --helpfull / --helpxml printed
      sys.exit(0 if e.code == 1 else e.code)  # what was asked for, and exit 1: a success

  return parse


def _flush_stdout():
  """Flushes standard output once the command is done; a reader gone by then loses only the
  rest of the output (the exit status stays the command's)."""
  try:
    sys.stdout.flush()
  except BrokenPipeError:
    if not console.stdout_gone():
      raise
    console.drop_stdout()


def _stdout_closed(name):
  """Standard output's reader went away: stop (module docstring); returns the exit status."""
  console.drop_stdout()
  where = status.describe()
  if where != startup.STARTING:
    console.error(
      f"{name}: stopped during {where} (its output was closed); run the same command to resume"
    )
  return console.PIPE_CLOSED


def _interrupted(name, exc):
  terminated = isinstance(exc, Terminated)
  console.error(startup.line(name, terminated, status.describe()))
  return TERMINATED if terminated else INTERRUPTED


def _call(main, name, argv):
  """Runs `main(argv)`; returns the exit status under the rules of the module docstring."""
  code = 1
  try:
    code = _status(main, name, argv)
    _flush_stdout()
    return code
  finally:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C cannot interrupt the exit
    console.close(failed=code == 1)


def _status(main, name, argv):
  """`main(argv)`'s exit status; one-line errors and interrupts printed (module docstring)."""
  try:
    if len(argv) > 1:
      raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    console.capture(name, verbose=_VERBOSE.value)
    code = main(argv)
    if _received() is not None:  # the handler's exception was swallowed where Python cannot
      return _interrupted(name, _received())  # raise it (a finalizer, a callback): still stop
    return 0 if code is None else code
  except app.UsageError as e:
    _usage(name, e)
  except errors.Error as e:
    if _received() is not None:
      return _interrupted(name, _received())
    console.error(f"{name}: error: {errors.one_line(e, 1000)}")
    return 1
  except KeyboardInterrupt as e:
    return _interrupted(name, e)
  except SystemExit as e:
    if isinstance(e.code, str):
      console.error(e.code)
      return 1
    return 0 if e.code is None else e.code
  # a bug: keep its traceback, on the terminal
  except Exception as e:
    if isinstance(e, BrokenPipeError) and console.stdout_gone():  # `... | head`: no bug
      return _stdout_closed(name)
    if _received() is not None:  # the interrupt surfaced as another error (e.g. raised inside
      return _interrupted(name, _received())  # TensorFlow's device scope): still one line
    console.error(traceback.format_exc().rstrip())
    if console.log_path():
      console.keep()
      console.error(f"{name}: TensorFlow's output is in {console.log_path()}")
    return 1


@contextlib.contextmanager
def locked_run_dir(run_dir, command, check_ours=True, log=print):
  """Holds `run_dir`'s lock (`run_lock`) for a stage binary and keeps its log there.

  Args:
    run_dir: the run directory the command writes.
    command: the command's name, recorded as the lock's holder.
    check_ours: refuse a non-empty directory that tf_forget did not make (a binary that only
      adds artifacts to an existing run passes False).
    log: where the line about a taken-over lock goes.

  Raises:
    run_lock.LockError: another command holds the lock, or the directory is not tf_forget's.
  """
  if check_ours:
    run_lock.check_ours(run_dir)
  lock = run_lock.acquire(run_dir, command, check=False)
  try:
    if lock.note:
      log(lock.note)
    console.attach(run_dir, defer=True)
    yield lock
  finally:
    lock.release()


def run(main, name, help_fn=None):
  """Runs the absl binary `main` as the command `name` (module docstring); never returns.

  The binary's imports before this call are covered by `startup.guard(name)`.

  Args:
    main: the binary's main(argv).
    name: the command's name in its one-line errors.
    help_fn: optional zero-argument callable returning the binary's `--help` text (e.g.
      `help_text` of its flags, section by section); None: absl's.
  """
  signal.signal(signal.SIGTERM, _on_signal)
  signal.signal(signal.SIGINT, _on_signal)
  collector.skip_final_collection()  # exits 1.2 s sooner with TensorFlow loaded
  try:
    app.run(lambda argv: sys.exit(_call(main, name, argv)), flags_parser=_parser(name, help_fn))
  except KeyboardInterrupt as e:  # while absl parsed the flags, before `main` ran
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(_interrupted(name, e))
  except BrokenPipeError:  # `--help` / `--helpfull` printed to a closed stdout: done
    if not console.stdout_gone():
      raise
    console.drop_stdout()
    sys.exit(0)


def run_command(command, doc):
  """Runs a command module of `tf_forget.commands` as its binary; never returns.

  The module declares `NAME`, `define(flag_values)`, `HELP_SECTIONS` and `run(flag_values)`
  (the body, returning the exit status). Its flags are defined on `flags.FLAGS`, `--help` lists
  them section by section (`sectioned_help` with the binary's docstring `doc`), and `run` runs
  as `main` under `run` above.
  """
  command.define(flags.FLAGS)
  run(
    lambda argv: command.run(flags.FLAGS),
    command.NAME,
    lambda: sectioned_help(doc, command.HELP_SECTIONS, flags.FLAGS, command.__name__),
  )
