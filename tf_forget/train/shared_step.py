"""One compiled training step shared by the members of one configuration in a process.

Keras traces a model's training step (`train_function`) at its first `fit`; tracing the small
CNN's step takes ~0.5 s, with tfmot's pruning wrappers ~1.4 s, against ~10 s of training. The
members of one population differ only in their seed (`MemberConfig.seed`), so a process that
trains several of them (a pool worker, the inline executor) keeps one trained-on model per
configuration, `Trainer`, and each member trains on it:

  1. the member's own model is built and seeded exactly as alone (`tf_forget.train.member`:
     seed, build, then the random layers' generators, `checkpoints.rng_states`), so every draw
     of Python's, NumPy's and TensorFlow's random number generators happens in the same order;
  2. `Trainer.adopt` copies that model's state into the trainer's model — its weights (with
     tfmot's masks, thresholds and pruning steps), its random layers' generator states and its
     optimizer's variables as a freshly built optimizer has them (step 0, zero slots);
  3. `fit` runs on the trainer's model, whose traced step holds no value of a member (no seed
     is traced into it: dropout draws from the generators' state variables);
  4. `Trainer.give_back` copies the trained weights into the member's own model, which is
     finalized, evaluated and saved as alone.

The same kernels run on the same values in the same order, so the member's weights, its
`model.keras` and everything made from it are the bytes of a member trained alone
(tests/train/shared_step_test.py compares them). A configuration is the member's identity
without `k` and its seed (`key`); a process keeps one trainer, the last one asked for, and a
model whose state does not line up with the trainer's (another structure, another optimizer)
trains alone.
"""

import json

from tf_forget.compat import keras2
from tf_forget.train import checkpoints

# The one trainer of this process: {"key": key(config), "trainer": Trainer}.
_CACHE = {}


def key(config):
  """What a member's training step depends on: its identity without `k` and its seed."""
  identity = dict(config.identity())
  for name in ("k", "seed"):
    identity.pop(name, None)
  return json.dumps(identity, sort_keys=True, default=str)


def _optimizer_variables(optimizer):
  variables = optimizer.variables
  return list(variables() if callable(variables) else variables)


def _lines_up(a, b):
  """Whether two lists of variables match one to one in name, shape and dtype."""
  return len(a) == len(b) and all(
    x.shape == y.shape and x.dtype == y.dtype and x.name == y.name for x, y in zip(a, b)
  )


class Trainer:
  """A model and optimizer, compiled once, that members of one configuration train on in turn.

  Attributes:
    model: the compiled Keras model whose `train_function` the members share.
    optimizer: its optimizer.
  """

  def __init__(self, model, optimizer):
    self.model = model
    self.optimizer = optimizer
    self._generators = checkpoints.rng_states(model)
    optimizer.build(model.trainable_variables)

  def adopt(self, model, optimizer):
    """Gives the trainer the state of a member's freshly built `model` and `optimizer`.

    `optimizer` is built on `model`'s variables first (its slots, at their initial values).

    Returns:
      True when the states line up (the trainer now holds them), False otherwise (nothing is
      changed: the member trains alone).
    """
    generators = checkpoints.rng_states(model)
    if sorted(generators) != sorted(self._generators) or not _lines_up(
      model.weights, self.model.weights
    ):
      return False
    optimizer.build(model.trainable_variables)
    fresh, mine = _optimizer_variables(optimizer), _optimizer_variables(self.optimizer)
    if not _lines_up(fresh, mine):
      return False
    self.model.set_weights(model.get_weights())
    for source, target in zip(fresh, mine):
      target.assign(source)
    for name, generator in generators.items():
      self._generators[name].reset(generator.state)
    return True

  def give_back(self, model):
    """Copies the trained weights (with the pruning wrappers' state) into the member's `model`."""
    model.set_weights(self.model.get_weights())


def trainer(config, build):
  """The process's `Trainer` for `config`, made by `build()` -> (model, optimizer) if it has
  none for it (the previous one is dropped).

  Call it before the member is seeded: `build` draws random numbers. It must build the model
  as the member's own is built (after `member._seed`: Keras' random layers then hold
  generators).
  """
  wanted = key(config)
  if _CACHE.get("key") != wanted:
    _CACHE.clear()
    model, optimizer = build()
    _CACHE.update(key=wanted, trainer=Trainer(model, optimizer))
    # The member's own model is then named as in a fresh session (Keras numbers the names it
    # makes up: `add`, `add_1`, ...).
    keras2.keras().backend.clear_session()
  return _CACHE["trainer"]


def clear():
  """Drops the process's trainer."""
  _CACHE.clear()
