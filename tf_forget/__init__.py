"""tf_forget: audit what model compression does beyond top-line accuracy.

In a notebook or a pipeline (the `tf-forget audit` command's flags as keywords):

    import tf_forget

    result = tf_forget.audit(dataset="folder:images", reference="model.keras",
                             candidate={"int8": "model_int8.tflite"}, out="audit")
    result.passed                    # False: a gate failed (`tf-forget audit` exits 3)
    print(result.verdict["why"])     # the verdict sentence
    result.tables["verdict"]         # every report table as a pandas DataFrame

`audit(config)` also takes an `AuditConfig` (or a configuration file, or a run's audit.json),
whose fields the keywords replace. `load_report(run_dir)` reads a finished run,
`render_report(run_dir)` writes its report again, `plan(...)` is the cost plan. The rest of the
library's face is `tf_forget.api`.

Importing `tf_forget` loads nothing else (no TensorFlow). The first call of these functions
selects Keras 2 (`tf_forget.compat.keras2`) and, if TensorFlow is not imported yet, the
portable CPU kernels (`tf_forget.compat.cpu_kernels`), as the command does: call it before
importing TensorFlow yourself to get the command's exact numbers.
"""

__version__ = "0.1.0"

# Names of `tf_forget.api` this package gives too (loaded on first use: `__getattr__`).
_API_NAMES = (
  "AuditConfig",
  "AuditError",
  "Result",
  "load_config",
  "save_config",
  "with_overrides",
  "Data",
  "Population",
  "Pruning",
  "Oneshot",
  "Iterative",
  "Formats",
  "Robustness",
  "Noise",
  "Deployment",
  "Execution",
  "Repair",
  "UserModels",
)


def _api():
  """`tf_forget.api`, with Keras 2 and the CPU kernels selected first (module docstring)."""
  import sys

  from tf_forget.compat import cpu_kernels
  from tf_forget.compat import keras2

  keras2.enable()
  if "tensorflow" not in sys.modules:
    cpu_kernels.configure()
  from tf_forget import api

  return api


def _config(config, options):
  """The `AuditConfig` of `config` (None, an `AuditConfig`, its JSON dict or a file) with
  `options` (the audit's flags as keywords) replacing its fields. A file is read as `--config`
  is: what lets the user's code run (`trust_model_code`, a `MODULE:FUNCTION` preprocess) must
  be said by `options` too (`tf_forget.config.flag_values`)."""
  api = _api()
  from_file = isinstance(config, str) or hasattr(config, "__fspath__")
  if not (config is None or from_file or isinstance(config, (dict, api.AuditConfig))):
    raise TypeError(
      "config must be None, an AuditConfig, its JSON dict or a configuration "
      f"file's path, got {type(config).__name__} {repr(config)[:80]}"
    )
  if isinstance(config, dict):
    config = api.AuditConfig.from_json(config)
  elif from_file:
    from tf_forget.artifacts import filesystem

    config = api.load_config(filesystem.user_path(str(config)))
  if not options and config is not None and not from_file:
    return config
  from tf_forget.commands import audit_options

  return audit_options.options_config(options, base=config)


def audit(config=None, *, log=print, **options):
  """Runs an audit and returns its `tf_forget.api.Result` (verdict, tables as DataFrames).

  Args:
    config: None (the flags' defaults), an `AuditConfig`, its JSON dict, or the path of a
      configuration file or a run's audit.json.
    log: callable(str) taking the progress lines.
    **options: the audit's flags as keywords (`tf-forget audit --help`), e.g.
      `dataset="folder:images"`, `reference="model.keras"`, `candidate={"int8": "q.tflite"}`,
      `compress=["dynamic_int8"]`, `max_accuracy_drop=0.01`, `out="audit"`;
      `deployment_images="folder:frames"` beside a labelled `dataset` puts the test set and the
      deployment's images side by side (docs/spec.md §8.11).

  Raises:
    TypeError: a keyword that is not an audit flag, or a value of another kind than its flag
      takes (`out=5`; `tf_forget.commands.option_types`), or a `config` of another type.
    tf_forget.api.AuditError (and the other `tf_forget.artifacts.errors.Error`s): bad input,
      one line; nothing is written.
  """
  return _api().audit(_config(config, options), log=log)


def plan(config=None, *, unit_costs=None, **options):
  """The cost plan of the audit `audit(config, **options)` would run, as text."""
  return _api().plan(_config(config, options), unit_costs)


def load_report(run_dir):
  """The `Result` of a finished run directory (`tf_forget.api.load_report`)."""
  return _api().load_report(run_dir)


def render_report(run_dir, *, log=print):
  """Writes a finished run's report again from its artifacts (`tf_forget.api.render_report`)."""
  return _api().render_report(run_dir, log=log)


def __getattr__(name):
  if name in _API_NAMES:
    return getattr(_api(), name)
  raise AttributeError(f"module 'tf_forget' has no attribute {name!r}")
