"""The protocol registry: every data set's audit protocol and every training protocol, by name.

Every stage reads its defaults from here (training preset, TFLite formats, corruptions, noise,
robustness members; the one-shot and iterative schedules of a preset) so that the protocol of a
data set is stated once, in its protocol module (`MODULES`; what a module declares:
`tf_forget.data.protocols.schema`):

    from tf_forget.data.protocols import protocol_registry as protocols
    p = protocols.get("celeb_a")
    p.quantizations  # ("dynamic_int8", "full_int8")
    protocols.TRAININGS[p.preset].oneshot  # {"phases": ((10, 0.1), (5, 0.01), ...)}

Two plain dicts, filled by `register` from `MODULES` at import: `PROTOCOLS` (data set ->
`schema.AuditProtocol`) and `TRAININGS` (preset name -> `schema.TrainingProtocol`). The
classes are built where they live, from `TRAININGS`: `tf_forget.train.presets.get`,
`tf_forget.prune.oneshot_schedule.get`, `tf_forget.prune.iterative_schedule.get`.

Adding a data set: its protocol module (its `AuditProtocol`, and a `TrainingProtocol` for a new
preset) and one entry in `MODULES`; its builder in `tf_forget.data.registry.DATASETS`
(docs/architecture.md, "A data set"). `register` refuses a training protocol without a one-shot
schedule and a data set whose preset is not registered, so an import fails rather than an audit.
A test registers a module of its own with `register` after replacing both dicts by copies
(`monkeypatch.setattr`; tests/data/add_dataset_test.py). Standard library only.
"""

from tf_forget.data.protocols import celeb_a_protocol
from tf_forget.data.protocols import cifar_protocol
from tf_forget.data.protocols import digits_protocol
from tf_forget.data.protocols import imagenet_protocol
from tf_forget.data.protocols import mnist_protocol
from tf_forget.data.protocols import schema
from tf_forget.data.protocols import user_protocol

# The protocol modules, registered in this order (a module may name the presets of those
# before it).
MODULES = (
  digits_protocol,
  mnist_protocol,
  celeb_a_protocol,
  cifar_protocol,
  imagenet_protocol,
  user_protocol,
)
# The keys of `TrainingProtocol.iterative` (the "alpha" schedule's defaults).
ITERATIVE_KEYS = ("alpha", "cycles", "warmup_epochs")

PROTOCOLS = {}
TRAININGS = {}


class ProtocolError(ValueError):
  """A data set without a protocol, or a protocol that cannot be registered (one line)."""


def _check_training(t, known):
  """Raises `ProtocolError` unless `TrainingProtocol` `t` can join the names `known`."""
  if not isinstance(t, schema.TrainingProtocol):
    raise ProtocolError(f"not a TrainingProtocol: {t!r}")
  if t.name in known:
    raise ProtocolError(f"training protocol {t.name!r} is declared twice")
  if not (t.oneshot or {}).get("phases"):
    raise ProtocolError(
      f"training protocol {t.name!r} has no one-shot schedule: its oneshot "
      "needs phases, ((epochs, learning rate), ...)"
    )
  if t.iterative is not None and sorted(t.iterative) != sorted(ITERATIVE_KEYS):
    raise ProtocolError(
      f"training protocol {t.name!r}: iterative needs exactly "
      f"{', '.join(ITERATIVE_KEYS)}, got {', '.join(sorted(t.iterative))}"
    )


def _check_protocol(p, known, trainings):
  """Raises `ProtocolError` unless `AuditProtocol` `p` can join the data sets `known`, its
  preset one of `trainings` ({name: `TrainingProtocol`})."""
  if not isinstance(p, schema.AuditProtocol):
    raise ProtocolError(f"not an AuditProtocol: {p!r}")
  if p.dataset in known:
    raise ProtocolError(f"data set {p.dataset!r} has two protocols")
  if p.preset not in trainings or trainings[p.preset].preset is None:
    raise ProtocolError(
      f"data set {p.dataset!r}: its preset {p.preset!r} is not a registered training protocol"
    )
  if p.eval_split not in p.split_sizes:
    raise ProtocolError(f"data set {p.dataset!r}: no size for its eval split {p.eval_split!r}")


def register(module):
  """Adds a protocol module's declarations to `TRAININGS` and `PROTOCOLS`, all or nothing.

  Args:
    module: an object with `TRAININGS` (`schema.TrainingProtocol`s) and `PROTOCOLS`
      (`schema.AuditProtocol`s), e.g. one of `MODULES`.

  Raises:
    ProtocolError: a name registered already or declared twice, a training protocol without a
      one-shot schedule or with a malformed iterative one, a data set whose preset is not a
      registered training protocol (the module's own or an earlier one's), or whose eval split
      has no size.
  """
  trainings = {}
  for t in module.TRAININGS:
    _check_training(t, {**TRAININGS, **trainings})
    trainings[t.name] = t
  protocols = {}
  for p in module.PROTOCOLS:
    _check_protocol(p, {**PROTOCOLS, **protocols}, {**TRAININGS, **trainings})
    protocols[p.dataset] = p
  TRAININGS.update(trainings)
  PROTOCOLS.update(protocols)


for _module in MODULES:
  register(_module)


def get(dataset):
  """The protocol of `dataset`.

  Args:
    dataset: a data registry name.

  Returns:
    The `schema.AuditProtocol`.

  Raises:
    ProtocolError: no protocol for `dataset`.
  """
  if dataset not in PROTOCOLS:
    raise ProtocolError(
      f"unknown data set {dataset!r}: no protocol (known: {', '.join(sorted(PROTOCOLS))})"
    )
  return PROTOCOLS[dataset]


def published_splits():
  """{split name: `schema.PublishedSplit`} of every protocol's published test sets
  (`imagenet_a`, ...)."""
  return {x.name: x for p in PROTOCOLS.values() if p.published for x in p.published.extra}
