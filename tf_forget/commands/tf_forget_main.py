"""tf-forget: audit what model compression does beyond top-line accuracy.

  tf-forget audit [flags]     the audit: the flags of `bazel run //eval:audit`, e.g.
      tf-forget audit --dataset=folder:images --reference=model.keras \\
          --candidate=int8=model_int8.tflite --out=audit
  tf-forget plan [flags]      its cost plan, nothing written (the audit's flags; = audit --plan)
  tf-forget report RUN_DIR    write a finished run's report again from its artifacts
  tf-forget --version         the installed version

`tf-forget <command> --help` lists a command's flags. Exit status: 0 when every gate passes,
3 when a gate fails, 1 on bad input (one line), 130 / 143 on Ctrl-C / SIGTERM (run the same
command to resume). In Python: `import tf_forget; tf_forget.audit(...)`.
"""

import sys

import tf_forget
from tf_forget.cli import startup

PROG = "tf-forget"
COMMANDS = ("audit", "plan", "report")

AUDIT_DOC = """tf-forget audit: audit a compressed model's files against their reference.

  tf-forget audit                                   # digits, tf_forget's own populations
  tf-forget audit --dataset=folder:images --reference=model.keras \\
      --candidate=int8=model_int8.tflite --compress=dynamic_int8 --out=audit
  tf-forget audit ... --max_accuracy_drop=0.01 --summary=summary.md   # a CI gate (exit 3)
  tf-forget audit --config=runs/digits/audit.json --out=again         # a run again

The flags are those of `bazel run //eval:audit`. Exit status: 0 when every gate passes, 3 when
a gate fails, 1 on bad input (one line), 130 / 143 on Ctrl-C / SIGTERM (run it again to
resume). TensorFlow's own output goes to <out>/logs/ (--verbose: the terminal)."""

PLAN_DOC = """tf-forget plan: what an audit will cost (counts per stage, an estimate); writes
nothing and reads no data. Takes the audit's flags (it is `tf-forget audit --plan`)."""

REPORT_DOC = """tf-forget report RUN_DIR: write a finished run's report again (report.json,
report.html, tables/, the deployment bundle) from its artifacts.

The run's own audit.json is audited again in this process: every artifact is current, so only
the report and the bundle are written (an artifact that is not is remade, with its redo line).
A run that nothing changed since it finished (docs/artifacts/runs.md) is not written again: its
recorded end is printed. The files and data the run read must still be there. Exit status as
the audit's."""


def _error(message):
  """One line on stderr, exit status 1."""
  print(f"{PROG}: error: {message}", file=sys.stderr)
  return 1


def _report_args(rest):
  """(RUN_DIR, the flags) of `tf-forget report RUN_DIR [flags]`, or an error line."""
  positional, options, rest = [], [], list(rest)
  while rest:
    arg = rest.pop(0)
    if arg == "--summary" and rest:  # `--summary PATH`: its value, not the run directory
      options += [arg, rest.pop(0)]
    else:
      (options if arg.startswith("-") else positional).append(arg)
  if len(positional) != 1 and not any(a in ("--help", "-h", "--helpfull") for a in options):
    return (
      None,
      None,
      (
        f"report takes one run directory, got {len(positional)} "
        f"({' '.join(positional) or 'none'}): tf-forget report RUN_DIR"
      ),
    )
  return (positional or [None])[0], options, None


def _run(command, rest):
  """Runs `command` under `tf_forget.cli.app.run` (never returns)."""
  name = f"{PROG} {command}"
  startup.guard(name)  # Ctrl-C during the imports below: one line, 130
  from absl import flags

  from tf_forget.cli import app as cli_app
  from tf_forget.commands import audit_command
  from tf_forget.commands import audit_flags

  fv = flags.FLAGS
  if command == "report":
    run_dir, options, problem = _report_args(rest)
    if problem:
      sys.exit(_error(problem))
    audit_flags.define_summary(fv)
    audit_flags.define_report_trust(fv)
    sys.argv = [name, *options]
    help_fn = lambda: cli_app.help_text(
      REPORT_DOC,
      [
        (
          "flags",
          [(n, fv[n].help, None) for n in ("summary", "trust_model_code", "preprocess", "verbose")],
        )
      ],
    )
    main = lambda argv: audit_command.render(
      run_dir, fv["summary"].value, name, fv["trust_model_code"].value, fv["preprocess"].value
    )
  else:
    audit_flags.define(fv)
    sys.argv = [name, *(["--plan"] if command == "plan" else []), *rest]
    doc = AUDIT_DOC if command == "audit" else PLAN_DOC
    help_fn = lambda: audit_command.help_text(fv, doc)
    main = lambda argv: audit_command.run(fv, name)
  cli_app.run(main, name, help_fn)


def main(argv=None):
  """The `tf-forget` console script (module docstring); returns or exits with its status."""
  argv = sys.argv[1:] if argv is None else list(argv)
  if not argv:
    print(__doc__, file=sys.stderr)
    return _error(f"a command is needed: {', '.join(COMMANDS)}")
  if argv[0] in ("--help", "-h", "help"):
    print(__doc__)
    return 0
  if argv[0] == "--version":
    print(f"{PROG} {tf_forget.__version__}")
    return 0
  if argv[0] not in COMMANDS:
    return _error(
      f"unknown command {argv[0]!r} (the commands: {', '.join(COMMANDS)}; tf-forget --help)"
    )
  _run(argv[0], argv[1:])
  return 0


def console_main():
  """The console script's entry point (pyproject.toml: `tf-forget`); its `--help` or
  `--version` printed to a standard output closed by its reader (`tf-forget --help | head -1`)
  ends quietly, exit 0 (the commands: `tf_forget.cli.app`)."""
  code = 0
  try:
    code = main()
    sys.stdout.flush()
  except BrokenPipeError:
    from tf_forget.cli import console

    if not console.stdout_gone():
      raise
    console.drop_stdout()
  sys.exit(code)
