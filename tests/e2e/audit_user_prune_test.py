"""One-shot pruning of the user's own Keras model (`--reference --pruning=oneshot
--train=DATA`), through the audit command.

The test plays the user: it trains a tiny compiled Keras classifier with plain tf_keras (not
tf_forget's training; sparse categorical cross-entropy of the logits, an l2(1e-4) kernel regularizer
on its convolution) on scikit-learn's digits, writes the test split and, apart, the train split as
PNG folders (one folder per class), and runs the audit command (its `main`, in this process:
`audit_binary.in_process`). The one-shot members are made by the same stages and code as a
trained population's (`tf_forget.pipeline.member_stages`, `tf_forget.prune`) with a one-epoch
fine-tuning (`--finetune=1@0.01`).
"""

import glob
import hashlib
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import audit_main
from tests import binary_main
from tests.e2e import audit_binary
from tf_forget.artifacts import layout
from tf_forget.compat import keras2
from tf_forget.data import registry

COMMON = ["--executor=inline", "--deploy_encoding=plain"]
PRUNE = [
  "--dataset=folder:test",
  "--reference=model.keras",
  "--pruning=oneshot",
  "--algorithms=mp,gp",
  "--ratios=2",
  "--train=folder:train",
  "--finetune=1@0.01",
]
VARIANTS = ("oneshot_mp_r2", "oneshot_gp_r2")
L2 = 1e-4  # the reference's kernel regularizer λ: ε of UP = 2λ (docs/spec.md §6.1)


def _write_folder(root, images, labels):
  for i, (image, label) in enumerate(zip(images, labels)):
    folder = root / str(int(label))
    folder.mkdir(parents=True, exist_ok=True)
    tf.io.write_file(str(folder / f"{i:04d}.png"), tf.io.encode_png(image))


def _model(softmax=False, classifier_l2=None):
  keras = keras2.keras()
  return keras.Sequential(
    [
      keras.Input((8, 8, 1)),
      keras.layers.Rescaling(1 / 255.0),
      keras.layers.Conv2D(8, 3, activation="relu", kernel_regularizer=keras.regularizers.l2(L2)),
      keras.layers.Flatten(),
      keras.layers.Dense(
        10,
        activation="softmax" if softmax else None,
        kernel_regularizer=(keras.regularizers.l2(classifier_l2) if classifier_l2 else None),
      ),
    ]
  )


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  """The user's directory: test/<class>/<i>.png, train/<class>/<i>.png, model.keras (compiled:
  logits), softmax.keras (compiled: probabilities), uncompiled.keras, mixed.keras (compiled:
  logits; l2 1e-4 on the convolution, 1e-3 on the classifier), float.tflite."""
  root = tmp_path_factory.mktemp("user")
  keras = keras2.keras()
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  _write_folder(root / "test", test.images, test.labels)
  _write_folder(root / "train", train.images, train.labels)
  keras.utils.set_random_seed(0)
  model = _model()
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(train.images.astype("float32"), train.labels, epochs=10, batch_size=64, verbose=0)
  model.save(str(root / "model.keras"))
  (root / "float.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
  softmax = _model(softmax=True)
  softmax.compile("adam", keras.losses.SparseCategoricalCrossentropy())
  softmax.save(str(root / "softmax.keras"))
  _model().save(str(root / "uncompiled.keras"))
  mixed = _model(classifier_l2=1e-3)
  mixed.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  mixed.save(str(root / "mixed.keras"))
  return root


@pytest.fixture(scope="module")
def pruned(user):
  """The audit of model.keras with its one-shot MP and GP members at ratio 2."""
  args = [*PRUNE, "--out=p1", *COMMON]
  result = audit_binary.in_process(args, user)
  assert result.returncode == 0, result.stderr[-3000:]
  return args, result


def _meta(user, variant):
  return json.loads((user / "p1" / "members" / variant / "0" / "metadata.json").read_text())


def test_the_oneshot_members_are_audited_and_paired_with_their_parent(user, pruned):
  _, result = pruned
  assert result.stderr == ""
  report = json.loads((user / "p1" / "report.json").read_text())
  assert set(report["variants"]) == {"dense", *VARIANTS}
  assert all(report["variants"][v]["members"] == 1 for v in VARIANTS)
  for variant in VARIANTS:
    (row,) = [r for r in report["tables"]["recall_distortion"] if r["variant"] == variant]
    assert row["pairing"] == "parent"
  manifest = json.loads((user / "p1" / "deploy" / "manifest.json").read_text())
  assert {f["variant"] for f in manifest["files"]} >= set(VARIANTS)
  assert "one-shot: 2 variants x 1 reference = 2 members" in result.stdout
  assert "fine-tuning 1 epochs" in result.stdout


def _folder_digest(root):
  """The content digest of a folder's images (docs/artifacts/runs.md), computed
  here from the files: sha256 of "<relative path>\\0<size>\\0<sha256>\\n" in path order."""
  digest = hashlib.sha256()
  for path in sorted(root.rglob("*.png"), key=lambda p: p.relative_to(root).as_posix()):
    data = path.read_bytes()
    digest.update(
      f"{path.relative_to(root).as_posix()}\0{len(data)}\0"
      f"{hashlib.sha256(data).hexdigest()}\n".encode()
    )
  return digest.hexdigest()


def test_a_member_records_its_parent_the_train_data_and_meets_its_ratio(user, pruned):
  """Independent check of the ratio: half of the conv and dense kernels' weights are zero in
  the saved member (r = 2 over the prunable kernels, docs/spec.md §6.3: keep = round(total / 2))."""
  del pruned
  dense = json.loads((user / "p1" / "members" / "dense" / "0" / "metadata.json").read_text())
  for variant in VARIANTS:
    meta = _meta(user, variant)
    assert meta["parent"]["model_sha256"] == dense["model_sha256"]
    assert meta["parent"]["reference"]["sha256"] == audit_binary.sha256(user / "model.keras")
    assert meta["dataset_options"]["train_data"] == {
      "name": "folder",
      "options": {"path": str(user / "train")},
      "content": _folder_digest(user / "train"),
    }
    data = meta["pruning"]["finetune"]["data"]
    assert data["split"] == "test" and data["examples"] == 1297  # the folder's only split
    assert meta["pruning"]["finetune"]["train_examples"] == 1297 - 130  # every 10th held out
    assert meta["inputs"]["train_data"]
    assert meta["preset"]["name"] == "user" and meta["preset"]["augmentation"] == "none"
    assert meta["preset"]["weight_decay"] == pytest.approx(L2)
    model = keras2.keras().models.load_model(
      str(user / "p1" / "members" / variant / "0" / "model.keras"), compile=False
    )
    kernels = [w.numpy() for w in model.weights if "kernel" in w.name]
    total = sum(k.size for k in kernels)
    assert sum(int(np.count_nonzero(k == 0)) for k in kernels) == total - round(total / 2)
  (g_file,) = glob.glob(str(user / "p1" / "members" / "dense" / "0" / "gradient" / "*.npz"))
  gp = _meta(user, "oneshot_gp_r2")
  assert gp["pruning"]["gradient"]["sha256"] == audit_binary.sha256(g_file)
  assert _meta(user, "oneshot_mp_r2")["pruning"]["gradient"] is None


def test_rerun_reuses_everything_and_changed_train_data_redoes_g_and_the_members(user, pruned):
  args, _ = pruned
  os.remove(layout.finished_file(str(user / "p1")))  # the stages' own reuse: no finished record
  again = audit_binary.in_process(args, user)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "1 of 1 parents' g already computed" in again.stdout
  assert "2 of 2 one-shot members already made" in again.stdout
  assert "redo" not in again.stdout
  moved = next((user / "train" / "3").iterdir())
  target = user / "train" / "5" / moved.name.replace(".png", "_was3.png")
  moved.rename(target)  # a training image moved to another class
  try:
    changed = audit_binary.in_process(args, user)
  finally:
    target.rename(moved)
  assert changed.returncode == 0, changed.stderr[-3000:]
  assert (
    "redo gradient dense/0: its train data (--train) changed since it was computed"
    in changed.stdout
  ), changed.stdout
  assert (
    "redo members oneshot_mp_r2/0: its train data (--train) changed since it was pruned"
    in changed.stdout
  ), changed.stdout
  # g is made again first (stage `gradient`), so the GP member then finds another g.
  assert (
    "redo members oneshot_gp_r2/0: its gradient g (docs/spec.md §6.2) changed since it was pruned"
    in changed.stdout
  )
  assert "1 of 1 references already imported" in changed.stdout


@pytest.mark.parametrize(
  "args, expected",
  [
    (
      ["--reference=model.keras", "--pruning=oneshot"],
      "one-shot pruning fine-tunes your model: give --train=DATA",
    ),
    (
      ["--reference=model.keras", "--compress=float16", "--train=folder:train"],
      "--train is the data one-shot pruning fine-tunes on: give --pruning=oneshot",
    ),
    (
      ["--reference=float.tflite", "--pruning=oneshot", "--train=folder:train"],
      "it needs Keras references",
    ),
    (
      ["--reference=softmax.keras", "--pruning=oneshot", "--train=folder:train"],
      "is compiled with loss SparseCategoricalCrossentropy(from_logits=False)",
    ),
    (
      ["--reference=uncompiled.keras", "--pruning=oneshot", "--train=folder:train"],
      "was saved without model.compile",
    ),
  ],
)
def test_bad_input_is_one_line_and_writes_nothing(user, args, expected):
  """The binary's `main` in this process (`binary_main.run_argv`): its one line, exit 1."""
  out = user / "refused"
  line = binary_main.run_argv(
    audit_main.main, "audit", ["--dataset=folder:test", f"--out={out}", *args, *COMMON], user
  )
  assert isinstance(line, str) and "\n" not in line, line
  assert line.startswith("audit: error:") and expected in line, line
  assert not out.exists()


def test_bad_input_through_the_binary_is_one_line_and_writes_nothing(user):
  out = user / "refused"
  result = audit_binary.in_process(
    [
      "--dataset=folder:test",
      f"--out={out}",
      "--reference=model.keras",
      "--pruning=oneshot",
      *COMMON,
    ],
    user,
  )
  line = audit_binary.one_line(result)
  assert line.startswith("audit: error:") and "give --train=DATA" in line, line
  assert not out.exists()


@pytest.mark.parametrize(
  "flag_values, expected",
  [
    (
      {"reference": ["{u}/model.keras"], "pruning": ["iterative"], "train": "folder:{u}/train"},
      "--pruning describes a population tf_forget trains",
    ),
    (
      {"reference": ["{u}/model.keras"], "pruning": ["oneshot"], "train": "folder:{u}/nowhere"},
      "does not exist",
    ),
    (
      {"reference": ["{u}/model.keras"], "pruning": ["oneshot"], "train": "folder:{u}/few"},
      "fewer than a fine-tuning batch of 128",
    ),
    (
      {"reference": ["{u}/model.keras"], "compress": ["float16"], "finetune": "1@0.1"},
      "no one-shot variant asked for",
    ),
    (
      {
        "reference": ["{u}/mixed.keras"],
        "pruning": ["oneshot"],
        "algorithms": ["up"],
        "train": "folder:{u}/train",
      },
      "trained with several: 0.0002, 0.002; leave out up",
    ),
    ({"train": "folder:{u}/train"}, "give it with --reference"),
  ],
)
def test_more_bad_input_is_one_line_and_writes_nothing(user, flag_values, expected):
  """The binary's `main` in this process (`binary_main`): the same one line, exit 1."""
  if not (user / "few").exists():  # 40 training images: fewer than a batch after the hold-out
    train = registry.get("digits").load("train")
    _write_folder(user / "few", train.images[:40], train.labels[:40])
  values = {
    k: ([p.format(u=user) for p in v] if isinstance(v, list) else v.format(u=user))
    for k, v in flag_values.items()
  }
  out = user / "refused_here"
  code = binary_main.run_main(
    audit_main.main,
    "audit",
    dataset=f"folder:{user / 'test'}",
    out=str(out),
    executor="inline",
    deploy_encoding="plain",
    **values,
  )
  assert isinstance(code, str) and code.startswith("audit: error:") and expected in code, code
  assert "\n" not in code
  assert not out.exists()
