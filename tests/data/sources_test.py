"""sources.parse: the one spelling of every data source."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tf_forget.data import dataset_api
from tf_forget.data import registry
from tf_forget.data import sources


@pytest.mark.parametrize(
  "spec, expected",
  [
    ("folder:/data/pets", ("folder", {"path": "/data/pets"})),
    ("folder:/data/my pets/", ("folder", {"path": "/data/my pets"})),
    ("folder:gs://bucket/pets", ("folder", {"path": "gs://bucket/pets"})),
    ("tfrecord:/data/val-*.tfrecord", ("tfrecord", {"pattern": "/data/val-*.tfrecord"})),
    ("tfds:mnist", ("tfds", {"tfds_name": "mnist", "config": None, "split": None})),
    ("tfds:cifar10:train", ("tfds", {"tfds_name": "cifar10", "config": None, "split": "train"})),
    (
      "tfds:imagenet_v2/matched-frequency:test[:50%]",
      ("tfds", {"tfds_name": "imagenet_v2", "config": "matched-frequency", "split": "test[:50%]"}),
    ),
    (
      "tfds:celeb_a:train[10:20]+validation",
      ("tfds", {"tfds_name": "celeb_a", "config": None, "split": "train[10:20]+validation"}),
    ),
    (
      "tfds:cifar10_corrupted/gaussian_noise_3",
      ("tfds", {"tfds_name": "cifar10_corrupted", "config": "gaussian_noise_3", "split": None}),
    ),
    ("digits", ("digits", {})),
    (" celeb_a ", ("celeb_a", {})),
  ],
)
def test_every_form_parses(spec, expected):
  assert sources.parse(spec) == expected


def test_relative_and_home_paths_become_absolute(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  monkeypatch.delenv("BUILD_WORKING_DIRECTORY", raising=False)
  assert sources.parse("folder:pets") == ("folder", {"path": str(tmp_path / "pets")})
  assert sources.parse("tfrecord:../r/*.tfrecord")[1]["pattern"] == str(
    tmp_path.parent / "r" / "*.tfrecord"
  )
  monkeypatch.setenv("HOME", str(tmp_path))
  assert sources.parse("folder:~/x")[1]["path"] == os.path.join(str(tmp_path), "x")


@pytest.mark.parametrize(
  "spec, problem",
  [
    ("", "empty"),
    (None, "empty"),
    ("folder", "folder needs a location after 'folder:'"),
    ("tfds", "tfds needs a location"),
    ("folder:", "nothing after 'folder:'"),
    ("tfrecord:  ", "nothing after 'tfrecord:'"),
    ("tfds:", "nothing after 'tfds:'"),
    ("tfds:MNIST", "is not NAME[/CONFIG][:SPLIT]"),
    ("tfds:mnist:3.0.1", "is not NAME[/CONFIG][:SPLIT]"),
    ("tfds:mnist:test:extra", "is not NAME[/CONFIG][:SPLIT]"),
    ("tfds:mnist/a/b", "is not NAME[/CONFIG][:SPLIT]"),
    ("dir:/data/pets", "unknown source 'dir:'"),
    ("/data/pets", "no such data set"),
    ("cifar11", "no such data set (known: celeb_a, cifar10, cifar100, digits"),
  ],
)
def test_bad_spellings_are_one_line_errors_naming_the_forms(spec, problem):
  with pytest.raises(dataset_api.DataError) as info:
    sources.parse(spec)
  message = str(info.value)
  assert "\n" not in message and problem in message
  assert message.endswith(sources.FORMS)


def _build(spec):
  name, options = sources.parse(spec)
  return registry.get(name, **options)


def test_parsed_spellings_build_the_data_sets(tmp_path):
  for name in ("a", "b"):
    image = np.full((3, 2, 3), 40 if name == "a" else 200, np.uint8)
    tf.io.gfile.makedirs(str(tmp_path / name))
    tf.io.write_file(str(tmp_path / name / "0.png"), tf.io.encode_png(image))
  data = _build(f"folder:{tmp_path}")
  assert data.spec.name == "folder" and data.spec.class_names == ("a", "b")
  np.testing.assert_array_equal(data.load("test").images[:, 0, 0, 0], [40, 200])
  with tfds.testing.mock_data(num_examples=3):
    mnist = _build("tfds:mnist:train")
    assert mnist.spec.options["split"] == "train" and len(mnist.load("test")) == 3
  assert _build("digits").spec.name == "digits"
