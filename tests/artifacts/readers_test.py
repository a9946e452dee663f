"""Every artifact reader turns an unreadable file into the one error base class.

Truncated zips (BadZipFile), empty files (EOFError), garbage, bad JSON, wrong schemas and wrong
shapes all raise an `errors.ReadError` (an `errors.Error`), never a raw traceback, and the
"is it current?" checks answer "no" (=> redo) instead of raising.
"""

import json
import os
import shutil

import numpy as np
import pytest

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import lineage
from tf_forget.artifacts import noise_artifact
from tf_forget.artifacts import predictions

SPLIT_ID = predictions.split_identity("digits", {}, "test")
INPUTS = {"tflite": "a" * 64, "split": SPLIT_ID}


def _predictions(path, shift=0):
  predictions.write(
    str(path),
    [1, 2, 3],
    [0, 1, 1],
    np.eye(3, 4, shift, dtype=np.float32),
    {"variant": "dense", "k": 0, "inputs": INPUTS},
  )
  return str(path)


def _noise(path, value=0):
  top1 = np.full((2, 1, 3), value, np.int32)
  noise_artifact.write(
    str(path),
    [0.0, 0.1],
    [1, 2, 3],
    [0, 1, 1],
    top1,
    np.full((2, 1, 3, 4), float(value)),
    {"variant": "dense", "k": 0, "inputs": INPUTS},
  )
  return str(path)


def _damage(path, how):
  data = open(path, "rb").read()
  with open(path, "wb") as f:
    f.write(
      {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "garbage": b"not a zip file",
        "zeros": b"\0" * 100,
      }[how]
    )


DAMAGE = ("truncated", "empty", "garbage", "zeros")


@pytest.mark.parametrize("how", DAMAGE)
def test_predictions_reader(tmp_path, how):
  path = _predictions(tmp_path / "test.npz")
  assert predictions.status(path, INPUTS)
  _damage(path, how)
  with pytest.raises(errors.ReadError, match="cannot read predictions"):
    predictions.read(path)
  state = predictions.status(path, INPUTS)
  assert not state and state.reason.startswith("it is unreadable")
  assert "\n" not in state.reason


@pytest.mark.parametrize("how", DAMAGE)
def test_noise_reader(tmp_path, how):
  path = _noise(tmp_path / "linf.npz")
  assert noise_artifact.status(path, INPUTS)
  _damage(path, how)
  with pytest.raises(errors.Error, match="cannot read noise artifact"):
    noise_artifact.read(path)
  assert not noise_artifact.status(path, INPUTS)


@pytest.mark.parametrize("how", DAMAGE)
def test_npz_and_json_readers(tmp_path, how):
  npz = str(tmp_path / "a.npz")
  fileio.write_npz(npz, x=np.arange(3))
  _damage(npz, how)
  with pytest.raises(errors.ReadError):
    fileio.read_npz(npz)
  js = str(tmp_path / "a.json")
  fileio.write_json(js, {"a": [1, 2, 3]})
  _damage(js, how)
  with pytest.raises(errors.ReadError):
    fileio.read_json(js)


def test_missing_files_are_read_errors(tmp_path):
  for read in (fileio.read_json, fileio.read_npz, predictions.read, noise_artifact.read):
    with pytest.raises(errors.ReadError):
      read(str(tmp_path / "nope"))
  assert predictions.status(str(tmp_path / "nope"), INPUTS).reason == "missing"


def test_wrong_schema_and_shapes(tmp_path):
  path = _predictions(tmp_path / "p.npz")
  data = dict(np.load(path, allow_pickle=False))
  meta = json.loads(str(data["metadata"]))
  fileio.write_npz(path, **dict(data, metadata=np.array(json.dumps(dict(meta, schema="x/1")))))
  with pytest.raises(errors.ReadError, match="schema"):
    predictions.read(path)
  fileio.write_npz(path, **dict(data, topk=data["topk"][:2]))
  with pytest.raises(errors.ReadError, match="rows"):
    predictions.read(path)
  fileio.write_npz(path, **dict(data, metadata=np.array("[1, 2]")))
  with pytest.raises(errors.ReadError):
    predictions.read(path)
  # A pickled object array is refused on write and on read.
  with pytest.raises(errors.Error, match="dtype object"):
    fileio.write_npz(path, bad=np.array([{"a": 1}], dtype=object))
  np.savez(path, bad=np.array([{"a": 1}], dtype=object))
  with pytest.raises(errors.ReadError):
    fileio.read_npz(path)


def test_inputs_must_match(tmp_path):
  path = _predictions(tmp_path / "p.npz")
  assert predictions.status(path, INPUTS)
  state = predictions.status(path, dict(INPUTS, tflite="b" * 64))
  assert not state and state.reason == "its .tflite changed since it was evaluated"
  state = predictions.status(path, dict(INPUTS, split="c" * 64))
  assert not state and state.reason == "its input split changed since it was evaluated"
  state = predictions.status(path, INPUTS, need_logits=True)
  assert state  # logits were saved
  predictions.write(
    path, [1], [0], np.ones((1, 4), np.float32), {"inputs": INPUTS}, save_logits=False
  )
  assert predictions.status(path, INPUTS, need_logits=True).reason == "it has no logits"
  predictions.write(path, [1], [0], np.ones((1, 4), np.float32), {})
  assert "records no inputs" in predictions.status(path, INPUTS).reason


def _other_predictions(path):
  return _predictions(path, shift=1)


def _other_noise(path):
  return _noise(path, value=1)


@pytest.mark.parametrize(
  "make, make_other, status",
  [
    (_predictions, _other_predictions, predictions.status),
    (_noise, _other_noise, noise_artifact.status),
  ],
)
def test_a_file_copied_over_the_one_written_is_not_current(tmp_path, make, make_other, status):
  """Its inputs and schema are valid (another file of the same writer, other numbers), but its
  bytes are not those recorded when the artifact was written; nor is a file without that
  record."""
  (tmp_path / "a").mkdir()
  path = make(tmp_path / "a" / "x.npz")
  other = make_other(tmp_path / "other.npz")
  assert status(path, INPUTS)
  shutil.copyfile(other, path)
  state = status(path, INPUTS)
  assert not state and state.reason == (
    "its bytes are not those written (sha256 differs from the one recorded)"
  )
  os.remove(lineage.own_path(path))
  assert "has no record of its own sha256" in status(path, INPUTS).reason
  lineage.record_own(path)
  assert status(path, INPUTS)


def test_split_identity_distinguishes_inputs():
  ids = {
    predictions.split_identity("digits", {}, "test"),
    predictions.split_identity("digits", {}, "train"),
    predictions.split_identity("digits", {"image_size": [16, 16]}, "test"),
    predictions.split_identity("digits_biased", {}, "test"),
    predictions.split_identity("digits", {}, "test", corruption_meta_sha256="0" * 64),
  }
  assert len(ids) == 5
