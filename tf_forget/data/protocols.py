"""One entry per data set: its whole audit protocol, as plain data (standard library only).

Every stage reads its defaults from here (training preset, TFLite formats, corruptions, noise,
robustness members) so that the protocol of a data set is stated once:

    from tf_forget.data import protocols
    p = protocols.get("celeb_a")
    p.quantizations  # ("dynamic_int8", "full_int8")

What the papers and SPEC settle:
* training preset: the paper protocols of 000 / 004 (SPEC §2.1, §2.2) for `celeb_a`, `cifar10`,
  `imagenet2012`; `cifar100` takes the CIFAR-10 protocol (the papers train no CIFAR-100 model of
  their own protocol: 002 uses it, with its own ResNets); `digits`, `digits_biased`, `mnist` and
  `fashion_mnist` take the scaled-down `digits` protocol (small CNN; offline-sized audits).
* post-training formats of dense members (SPEC §2.3): float16, dynamic_int8, full_int8 (000);
  CelebA dynamic_int8 and full_int8 only (004: "two types of post-training quantization").
* formats of pruned members besides float32: none (SPEC §1.1: post-training formats apply to
  dense members unless a combination such as `prune_0.9+full_int8` is asked for).
* corruptions (`None` = the whole registered suite, `()` = none): CelebA none (004 evaluates no
  corruption); the others the registered suite (000 §4 ImageNet-C; 003 §5 CIFAR10-C).
* severities: 1-5 (000, SPEC §3.6), averaged per corruption; the scaled-down protocols evaluate
  severity 3 only (003 §5's level) to keep the default audit short.
* robustness members (SPEC §1.5): 000 averages its robustness tables over 5 members (appendix D:
  "we average model robustness over 5 models"); every full-size protocol evaluates corrupted
  splits and l-inf noise on members k = 0..4 only (the first 5 by index). The scaled-down
  protocols evaluate every member (`None`; their default K is 5 anyway).
* l-inf noise (003 §4.1, SPEC §6.7): ε in linspace(0, 0.7, 15), 100 draws, 1000 examples; the
  scaled-down protocols use every second level and 10 draws (~1 min of the default audit).
  CelebA none: 004 reports on the clean test split only (issue #15: "CelebA: test split only").
* published robustness suites (`--robustness=published`, `published`): CIFAR-10 -> the published
  CIFAR-10-C (tfds `cifar10_corrupted`, Hendrycks & Dietterich 2019; 003 §5) as its
  `<corruption>@<severity>` splits, plus CIFAR-10.1 (Recht et al. 2018; 003 Table 11) as split
  `cifar10_1`; ImageNet -> tfds' `imagenet2012_corrupted` (tfds' *regeneration* of ImageNet-C
  from the validation set, not the published files) plus ImageNet-A (000 Table 8, SPEC §3.6) as
  split `imagenet_a`; the others none. Suites are named by their key in
  `tf_forget.corruptions.tfds_suites.SUITES` (this module imports nothing of them).
* split sizes and image shapes: what the loaders yield (tfds' published counts; digits from
  `tf_forget.data.digits`: 1,797 images, a balanced test split of 50 per class), so that a cost
  plan (`eval/costs.py`) works without the data on disk.

`get(name)` of a data set with no protocol raises `ProtocolError` (every data set of
`registry.DATASETS` has one: tests/data/protocols_test.py).
"""

import dataclasses
from typing import Mapping, Optional, Tuple

# SPEC §6.7: numpy.linspace(0, 0.7, 15) rounded to 6 digits (= tf_forget.artifacts.noise.PAPER_EPS,
# copied here so that this module needs the standard library only; a test checks they agree).
PAPER_EPS = tuple(round(0.05 * i, 6) for i in range(15))
PAPER_DRAWS = 100
PAPER_EXAMPLES = 1000
# The scaled-down protocols' noise: every second level, 10 draws.
FAST_EPS = PAPER_EPS[::2]
FAST_DRAWS = 10

ALL_SEVERITIES = (1, 2, 3, 4, 5)
DENSE_QUANTIZATIONS = ("float16", "dynamic_int8", "full_int8")  # 000, SPEC §2.3
CELEB_A_QUANTIZATIONS = ("dynamic_int8", "full_int8")  # 004, SPEC §2.3
ROBUSTNESS_MEMBERS = 5  # 000 appendix D, SPEC §1.5


class ProtocolError(ValueError):
  """A data set without a protocol (one line)."""


@dataclasses.dataclass(frozen=True)
class PublishedSplit:
  """A published test set evaluated as an extra split of the audit (SPEC §3.6).

  Attributes:
    name: the split name in predictions and the report (`imagenet_a`).
    suite: its loader (`tf_forget.corruptions.tfds_suites.SUITES` key).
    source_split: the loader's split read.
    examples: its size (tfds' published count; for the cost plan).
  """
  name: str
  suite: str
  source_split: str = "test"
  examples: int = 0


@dataclasses.dataclass(frozen=True)
class Published:
  """The published robustness suites of a data set (`--robustness=published`).

  Attributes:
    corrupted: the suite whose `<corruption>@<severity>` splits replace the generated ones
      (same split names, same example order as the eval split).
    extra: published test sets evaluated besides them.
    note: a line the report and docs repeat (e.g. that a suite is a regeneration).
  """
  corrupted: str
  extra: Tuple[PublishedSplit, ...] = ()
  note: str = ""


@dataclasses.dataclass(frozen=True)
class AuditProtocol:
  """The audit protocol of one data set (plain data).

  Attributes:
    dataset: data registry name.
    preset: training preset name (`tf_forget.train.presets.PRESETS`).
    quantizations: post-training formats of dense members besides float32 (SPEC §2.3).
    pruned_quantizations: formats of pruned members besides float32 (SPEC §1.1: none).
    corruptions: corruption names; None = the whole registered suite, () = none.
    severities: corruption severities.
    robustness_members: members (k = 0..n-1) evaluated on corrupted splits and under noise;
      None = every member (SPEC §1.5).
    noise_eps: l-inf noise levels ε (normalized input), () = no noise evaluation.
    noise_draws: noise draws per example and level.
    noise_examples: examples evaluated under noise, at most.
    eval_split: the split the audit reports on.
    split_sizes: examples per split, as the loader yields them.
    image_shape: (H, W, C) of the model input at the default options.
    published: the published robustness suites (`Published`), or None.
  """
  dataset: str
  preset: str
  quantizations: Tuple[str, ...] = DENSE_QUANTIZATIONS
  pruned_quantizations: Tuple[str, ...] = ()
  corruptions: Optional[Tuple[str, ...]] = None
  severities: Tuple[int, ...] = ALL_SEVERITIES
  robustness_members: Optional[int] = ROBUSTNESS_MEMBERS
  noise_eps: Tuple[float, ...] = PAPER_EPS
  noise_draws: int = PAPER_DRAWS
  noise_examples: int = PAPER_EXAMPLES
  eval_split: str = "test"
  split_sizes: Mapping[str, int] = dataclasses.field(default_factory=dict)
  image_shape: Tuple[int, int, int] = (32, 32, 3)
  published: Optional[Published] = None

  def eval_size(self):
    """Examples of the eval split."""
    return self.split_sizes[self.eval_split]


def _scaled_down(dataset, split_sizes, image_shape):
  """The `digits` protocol: small CNN, severity 3, thinned noise, every member."""
  return AuditProtocol(dataset=dataset, preset="digits", severities=(3,), robustness_members=None,
                  noise_eps=FAST_EPS, noise_draws=FAST_DRAWS, split_sizes=split_sizes,
                  image_shape=image_shape)


# digits: sklearn's 1,797 8x8 images; test = 50 per class (SPEC §2.7), train = the rest.
_DIGITS_SPLITS = {"train": 1297, "test": 500}
_CIFAR_SPLITS = {"train": 50_000, "test": 10_000}
_MNIST_SPLITS = {"train": 60_000, "test": 10_000}
# CIFAR-10-C: 10,000 test images per (corruption, severity), in test order; CIFAR-10.1 v6: 2,000.
CIFAR10_PUBLISHED = Published(
    corrupted="cifar10_corrupted", extra=(PublishedSplit("cifar10_1", "cifar10_1", "test", 2000),))
# tfds' imagenet2012_corrupted: 50,000 validation images per (corruption, severity) at 224x224;
# ImageNet-A: 7,500 images, 1000-way labels.
IMAGENET_PUBLISHED = Published(
    corrupted="imagenet2012_corrupted",
    extra=(PublishedSplit("imagenet_a", "imagenet_a", "test", 7500),),
    note="corrupted splits from tfds' imagenet2012_corrupted: tfds' regeneration of ImageNet-C "
         "from the validation set, not the published ImageNet-C files")

PROTOCOLS = {
    "digits": _scaled_down("digits", _DIGITS_SPLITS, (8, 8, 1)),
    "digits_biased": _scaled_down("digits_biased", _DIGITS_SPLITS, (8, 8, 1)),
    # 002's MNIST / Fashion-MNIST: no paper preset here; the scaled-down protocol.
    "mnist": _scaled_down("mnist", _MNIST_SPLITS, (28, 28, 1)),
    "fashion_mnist": _scaled_down("fashion_mnist", _MNIST_SPLITS, (28, 28, 1)),
    "celeb_a": AuditProtocol(
        dataset="celeb_a", preset="celeb_a_paper", quantizations=CELEB_A_QUANTIZATIONS,
        corruptions=(), noise_eps=(), split_sizes={"train": 162_770, "validation": 19_867, "test": 19_962},
        image_shape=(218, 178, 3)),
    "cifar10": AuditProtocol(dataset="cifar10", preset="cifar10_paper", split_sizes=_CIFAR_SPLITS,
                        image_shape=(32, 32, 3), published=CIFAR10_PUBLISHED),
    "cifar100": AuditProtocol(dataset="cifar100", preset="cifar10_paper", split_sizes=_CIFAR_SPLITS,
                         image_shape=(32, 32, 3)),
    "imagenet2012": AuditProtocol(
        dataset="imagenet2012", preset="imagenet_paper", eval_split="validation",
        split_sizes={"train": 1_281_167, "validation": 50_000}, image_shape=(224, 224, 3),
        published=IMAGENET_PUBLISHED),
}


def get(dataset):
  """The protocol of `dataset`.

  Args:
    dataset: a data registry name.

  Returns:
    The `AuditProtocol`.

  Raises:
    ProtocolError: no protocol for `dataset`.
  """
  if dataset not in PROTOCOLS:
    raise ProtocolError(f"unknown data set {dataset!r}: no protocol (known: "
                        f"{', '.join(sorted(PROTOCOLS))})")
  return PROTOCOLS[dataset]


def published_splits():
  """{split name: `PublishedSplit`} of every protocol's published test sets (`imagenet_a`, ...)."""
  return {x.name: x for p in PROTOCOLS.values() if p.published for x in p.published.extra}
