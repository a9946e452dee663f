"""Sparse-encoded files run as on a device: fallback, runtime record, twin check.

Real behaviour on this stack (TF 2.21, ai-edge-litert; measured, see
tf_forget/evaluate/interpreter.py): XNNPACK takes sparse float32 files and refuses sparse
dynamic_int8 / full_int8 files at allocation ("(TfLiteXNNPackDelegate) failed to prepare"). The
fallback test for a refusal at invoke uses a test double of the delegate failure (LiteRT raises it
only at allocation here).
"""

import os

from ai_edge_litert import interpreter as litert
import numpy as np
import pytest

from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.evaluate import agreement
from tf_forget.evaluate import batched
from tf_forget.evaluate import evaluate
from tf_forget.evaluate import interpreter
from tf_forget.evaluate import population_eval
from tf_forget.export import converter
from tf_forget.export import export

FORMATS = ["float32", "dynamic_int8", "full_int8"]


@pytest.fixture(scope="module")
def pruned_files():
  """(data set, {(format, encoding): bytes}) of a tfmot-pruned (90%, stripped) tiny CNN."""
  dataset = fake_run.SyntheticDataset()
  model = fake_run.prune(fake_run.train(fake_run.tiny_cnn(0), dataset, epochs=2), dataset, 0.9)
  rep = dataset.take("train", 50).images
  return (
    model,
    dataset,
    {
      (fmt, enc): converter.convert(model, fmt, rep, enc)
      for fmt in FORMATS
      for enc in names.ENCODINGS
    },
  )


@pytest.fixture(scope="module")
def run(tmp_path_factory, pruned_files):
  model, dataset, _ = pruned_files
  run_dir = str(tmp_path_factory.mktemp("run"))
  fake_run.write_member(run_dir, "prune_0.9", 0, model)
  export.export_population(
    run_dir, [], FORMATS, representative_size=50, dataset=dataset, encodings=("plain", "sparse")
  )
  tables = population_eval.evaluate_population(
    run_dir, dataset=dataset, batch_size=64, check_keras=False
  )
  return run_dir, dataset, tables["test"]


def test_sparse_predictions_equal_plain_twin_with_runtime_recorded(run):
  run_dir, _, table = run
  rows = {r["variant"]: r for r in table["rows"]}
  assert set(rows) == {
    "prune_0.9",
    "prune_0.9+sparse",
    "prune_0.9+dynamic_int8",
    "prune_0.9+dynamic_int8+sparse",
    "prune_0.9+full_int8",
    "prune_0.9+full_int8+sparse",
  }
  expected_runtime = {
    "prune_0.9": "xnnpack",
    "prune_0.9+sparse": "xnnpack",
    "prune_0.9+dynamic_int8": "xnnpack",
    "prune_0.9+dynamic_int8+sparse": "builtin",
    "prune_0.9+full_int8": "xnnpack",
    "prune_0.9+full_int8+sparse": "builtin",
  }
  assert {v: r["runtime"] for v, r in rows.items()} == expected_runtime
  for variant, row in rows.items():
    meta = predictions.read(row["path"])["metadata"]
    assert meta["runtime"] == expected_runtime[variant]
    if expected_runtime[variant] == "builtin":
      assert "failed to prepare" in meta["runtime_fallback"]
      assert "\n" not in meta["runtime_fallback"]
    else:
      assert meta["runtime_fallback"] is None
    if row["encoding"] == "sparse":
      twin = row["vs_plain_twin"]
      assert twin["equal"] and twin["reason"] is None, twin
      assert twin["top1_agreement"] == 1.0 and twin["logits_checked"]
      assert twin["max_abs_logit_error"] <= twin["atol"]
  assert table["twin_failures"] == []
  assert table["summary_vs_plain_twin"]["prune_0.9+full_int8+sparse"]["min_top1_agreement"] == 1


def test_full_int8_sparse_falls_back_to_builtin_for_real(pruned_files):
  _, dataset, files = pruned_files
  interp, runtime, reason = interpreter.create_for_device(files[("full_int8", "sparse")])
  assert runtime == "builtin" and "TfLiteXNNPackDelegate" in reason
  interp, runtime, reason = interpreter.create_for_device(files[("full_int8", "plain")])
  assert (runtime, reason) == ("xnnpack", None)
  with pytest.raises(interpreter.TfliteError, match="failed to prepare"):
    interpreter.create(files[("full_int8", "sparse")], runtime="xnnpack")


class _RefusingAtInvoke(litert.Interpreter):
  """Test double: the XNNPACK path (AUTO resolver) fails at invoke like a refusing delegate."""

  invokes = 0

  def __init__(self, *args, **kwargs):
    self._refuse = kwargs.get("experimental_op_resolver_type") == litert.OpResolverType.AUTO
    super().__init__(*args, **kwargs)

  def invoke(self):
    if self._refuse:
      raise RuntimeError("Node number 7 (TfLiteXNNPackDelegate) failed to prepare.")
    type(self).invokes += 1
    return super().invoke()


def test_fallback_at_invoke_with_delegate_double(monkeypatch, pruned_files):
  _, dataset, files = pruned_files
  images = dataset.load("test").images[:40]
  plain = batched.BatchedRunner(files[("float32", "plain")], batch_size=16).run(images)
  monkeypatch.setattr(interpreter.litert, "Interpreter", _RefusingAtInvoke)
  runner = batched.BatchedRunner(files[("float32", "sparse")], batch_size=16, runtime="auto")
  assert runner.runtime == "xnnpack"  # allocation went through
  scores = runner.run(images)
  assert runner.runtime == "builtin" and "failed to prepare" in runner.fallback_reason
  assert agreement.twin_mismatch(scores, plain) is None
  # create_for_device's probe catches it at creation too.
  _, runtime, reason = interpreter.create_for_device(files[("float32", "sparse")])
  assert runtime == "builtin" and "failed to prepare" in reason
  # Without "auto" the refusal is an error, and a non-delegate failure is never swallowed.
  with pytest.raises(interpreter.TfliteError, match="invoke failed"):
    batched.BatchedRunner(files[("float32", "sparse")], batch_size=16).run(images)


def test_non_delegate_invoke_error_is_not_a_fallback(monkeypatch, pruned_files):
  _, dataset, files = pruned_files

  class Broken(litert.Interpreter):
    def invoke(self):
      raise RuntimeError("tensor 3 has the wrong type")

  monkeypatch.setattr(interpreter.litert, "Interpreter", Broken)
  runner = batched.BatchedRunner(files[("float32", "sparse")], batch_size=8, runtime="auto")
  with pytest.raises(interpreter.TfliteError, match="wrong type"):
    runner.run(dataset.load("test").images[:8])
  with pytest.raises(interpreter.TfliteError, match="wrong type"):
    interpreter.create_for_device(files[("float32", "sparse")])


@pytest.mark.parametrize("fmt", ["float32", "full_int8"])
@pytest.mark.parametrize("keep", [0.3, 0.7, 0.95])
def test_truncated_sparse_file_is_one_line_error(tmp_path, pruned_files, fmt, keep):
  _, dataset, files = pruned_files
  data = files[(fmt, "sparse")]
  path = tmp_path / "truncated.tflite"
  path.write_bytes(data[: int(len(data) * keep)])
  with pytest.raises(interpreter.TfliteError) as info:
    interpreter.create_for_device(str(path))
  assert "\n" not in str(info.value)
  with pytest.raises(interpreter.TfliteError):
    evaluate.evaluate_file(str(path), dataset.batches("test", 32), str(tmp_path / "p.npz"), "test")
  assert not os.path.exists(tmp_path / "p.npz")


def test_twin_mismatch_reasons():
  plain = np.array([[1.0, 0.0, 0.5], [0.0, 2.0, 1.0]], np.float32)
  assert agreement.twin_mismatch(plain + 5e-5, plain) is None  # within atol 1e-4
  reason = agreement.twin_mismatch(plain + np.array([0, 0, 1e-3], np.float32), plain)
  assert reason == (
    "sparse file disagrees with its plain twin: 2 scores differ by up to "
    "0.001 (tolerance 0.0001 + 0.0001 x |score|)"
  )
  flipped = plain[:, ::-1].copy()
  assert "top-1 differs on 1 of 2 examples" in agreement.twin_mismatch(flipped, plain)
  # int8 outputs: one output quantization step (scale 0.05) is tolerated, two are not.
  assert agreement.twin_mismatch(plain + 0.05, plain, output_scale=0.05) is None
  assert agreement.twin_mismatch(plain + 0.1, plain, output_scale=0.05) is not None
  # Without logits, top-1 only.
  topk = np.array([[0, 2], [1, 2]])
  assert agreement.twin_mismatch(None, None, topk, topk) is None
  assert "top-1 differs on 1 of 2" in agreement.twin_mismatch(
    None, None, topk, np.array([[0, 2], [2, 1]])
  )


def test_twin_disagreement_is_reported_in_the_table(run):
  run_dir, dataset, _ = run
  path = predictions.path(run_dir, "prune_0.9+sparse", 0, "test")
  d = predictions.read(path)
  logits = d["logits"].copy()
  logits[0] = logits[0][::-1]  # flips the top-1 of example 0 (a corrupted evaluation)
  meta = {k: v for k, v in d["metadata"].items() if k not in ("schema", "num_examples")}
  predictions.write(path, d["ids"], d["labels"], logits, meta)
  table = population_eval.evaluate_population(
    run_dir, dataset=dataset, batch_size=64, check_keras=False
  )["test"]
  failures = table["twin_failures"]
  assert [(f["variant"], f["k"]) for f in failures] == [("prune_0.9+sparse", 0)]
  assert "top-1 differs on 1 of 150" in failures[0]["reason"]
  row = [r for r in table["rows"] if r["variant"] == "prune_0.9+sparse"][0]
  assert not row["vs_plain_twin"]["equal"] and not row["vs_plain_twin"]["encoding_exact"]
  assert "same_runtime" not in row["vs_plain_twin"]  # both ran on XNNPACK


def _tamper(path, i):
  """Reverses the scores of example i of a predictions file (a corrupted evaluation)."""
  d = predictions.read(path)
  logits = d["logits"].copy()
  logits[i] = logits[i][::-1]
  predictions.write(path, d["ids"], d["labels"], logits, d["metadata"])


def test_runtime_path_difference_is_told_from_encoding_difference(run):
  run_dir, dataset, _ = run
  # The plain full_int8 twin's (XNNPACK) predictions corrupted: the sparse file (built-in
  # kernels) then differs from them, but equals the plain file run on the built-in kernels.
  _tamper(predictions.path(run_dir, "prune_0.9+full_int8", 0, "test"), 0)
  table = population_eval.evaluate_population(
    run_dir, dataset=dataset, batch_size=64, check_keras=False
  )["test"]
  row = [r for r in table["rows"] if r["variant"] == "prune_0.9+full_int8+sparse"][0]
  twin = row["vs_plain_twin"]
  assert not twin["equal"] and twin["encoding_exact"]
  assert (twin["runtime"], twin["plain_runtime"]) == ("builtin", "xnnpack")
  assert twin["same_runtime"]["equal"] and twin["same_runtime"]["plain_runtime"] == "builtin"
  assert twin["reason"].endswith("the runtime path differs, not the encoding)")
  assert os.path.exists(
    os.path.join(run_dir, "eval", "twin_runtime", "prune_0.9+full_int8", "0", "test.builtin.npz")
  )
  # Now the sparse file's own predictions corrupted too: different on the same runtime.
  _tamper(predictions.path(run_dir, "prune_0.9+full_int8+sparse", 0, "test"), 1)
  table = population_eval.evaluate_population(
    run_dir, dataset=dataset, batch_size=64, check_keras=False
  )["test"]
  twin = [r for r in table["rows"] if r["variant"] == "prune_0.9+full_int8+sparse"][0][
    "vs_plain_twin"
  ]
  assert not twin["encoding_exact"] and "also on the same runtime builtin" in twin["reason"]
  assert "\n" not in twin["reason"]


def test_failed_sparse_conversion_is_in_the_table(tmp_path, pruned_files):
  model, dataset, _ = pruned_files
  run_dir = str(tmp_path)
  fake_run.write_member(run_dir, "prune_0.9", 0, model)
  export.export_population(run_dir, [], ["float32"], dataset=dataset)
  export.record_failure(
    run_dir,
    names.Variant("prune_0.9", "float32", "sparse"),
    0,
    "TFLite conversion to float32 (sparse encoding) failed: boom",
  )
  table = population_eval.evaluate_population(
    run_dir, dataset=dataset, batch_size=64, check_keras=False
  )["test"]
  assert [r["variant"] for r in table["rows"]] == ["prune_0.9"]
  assert table["twin_failures"] == [
    {
      "variant": "prune_0.9+sparse",
      "k": 0,
      "reason": "sparse conversion failed, plain file kept: TFLite conversion to float32 "
      "(sparse encoding) failed: boom",
    }
  ]
