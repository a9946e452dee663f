"""What a population member is a function of: `MemberConfig`, its seed, identity and precision.

A member is (data set, model, variant, k) trained under a preset (`tf_forget.train.member`
trains it). Member k of each variant gets its own seed, derived stably from (population seed,
data set, model, variant, k) (docs/spec.md §1.3); the member's metadata records the sha256 of
its `identity` (`inputs`), so a member made from another configuration is not current
(`tf_forget.train.member_files`). A preset with `mixed_precision` trains under Keras'
`mixed_float16` policy (`precision_policy`).
"""

import dataclasses
import hashlib
import json
from typing import Mapping

from tf_forget.artifacts import hashing
from tf_forget.artifacts import predictions
from tf_forget.train import presets


@dataclasses.dataclass(frozen=True)
class MemberConfig:
  """Everything a member's training depends on.

  Attributes:
    dataset: data registry name.
    model: model registry name.
    variant: `dense` or `prune_<t>`.
    k: member index (pairs members across variants, 000 eq. 3).
    preset: the training protocol.
    dataset_options: data builder options.
    model_options: model builder options.
    population_seed: base seed of the population (0 by default).
  """

  dataset: str
  model: str
  variant: str
  k: int
  preset: presets.Preset
  dataset_options: Mapping[str, object] = dataclasses.field(default_factory=dict)
  model_options: Mapping[str, object] = dataclasses.field(default_factory=dict)
  population_seed: int = 0

  @property
  def seed(self):
    """Stable 31-bit seed from (population seed, data set, model, variant, k)
    (docs/spec.md §1.3)."""
    key = f"{self.population_seed}|{self.dataset}|{self.model}|{self.variant}|{self.k}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") & 0x7FFFFFFF

  def identity(self):
    """What the member's weights are a function of (JSON-ready; hashed into `inputs.config`).

    The user's data records the content of its splits in its options (`predictions.CONTENT`); a
    member trains on the train split only, so its identity holds that split's digest
    (`train_content`) and not the test split's. The `--train` data of one-shot pruning enters
    through `inputs.train_data` (`train_view.fingerprint`) instead.
    """
    out = {
      "dataset": self.dataset,
      "dataset_options": predictions.without_content(self.dataset_options),
      "model": self.model,
      "model_options": dict(self.model_options),
      "variant": self.variant,
      "k": int(self.k),
      "seed": int(self.seed),
      "population_seed": int(self.population_seed),
      "preset": self.preset.to_json(),
    }
    train = dict(dict(self.dataset_options).get(predictions.CONTENT) or {}).get("train")
    if train is not None:
      out["train_content"] = train
    return out

  def inputs(self):
    """The lineage `inputs` of the member's metadata: {"config": sha256 of `identity`}."""
    return {"config": hashing.sha256_json(json.loads(json.dumps(self.identity())))}


MIXED_POLICY = "mixed_float16"


def precision_policy(preset):
  """The Keras dtype policy a preset trains under: "mixed_float16" or "float32"."""
  return MIXED_POLICY if getattr(preset, "mixed_precision", False) else "float32"
