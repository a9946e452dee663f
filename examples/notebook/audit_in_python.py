"""Audit your own model from Python — a notebook cell or a pipeline step.

    python examples/own_model/make_model.py --out=/tmp/own_model      # the user's files
    python examples/notebook/audit_in_python.py /tmp/own_model /tmp/own_model/audit_py

(with tf_forget installed — `pip install .` — or from the clone with `PYTHONPATH=.`). The
same audit as `tf-forget audit --dataset=folder:/tmp/own_model/images
--reference=/tmp/own_model/model.keras --candidate=int8=/tmp/own_model/model_int8.tflite
--compress=dynamic_int8 --max_accuracy_drop=0.02 --out=...`: the keywords are the command's
flags. The result holds the verdict and every report table as a pandas DataFrame.
"""

import sys

import tf_forget  # light: TensorFlow is loaded by the first audit, with Keras 2 selected


def audit(files, out):
  """Audits `files`/model.keras and its int8 file on `files`/images; returns the Result."""
  return tf_forget.audit(
    dataset=f"folder:{files}/images",
    reference=f"{files}/model.keras",
    candidate={"int8": f"{files}/model_int8.tflite"},  # your own .tflite file, as it is
    compress=["dynamic_int8"],  # and a format tf_forget makes
    max_accuracy_drop=0.02,  # a gate: result.passed is False
    out=out,  # when a file loses > 2 points
    log=lambda line: None,
  )  # no progress lines


def show(result):
  """What a notebook cell would display: the verdict, then the verdict table's numbers."""
  print("passed:", result.passed, "| failed:", ", ".join(result.failed_variants) or "none")
  print("ship:", result.verdict["file"], "—", result.verdict["why"])
  for line in result.verdict.get("users", []):  # what the audit says of your own files
    print(" ", line)
  table = result.tables["verdict"]
  print(table[["variant", "top1", "top1_change", "size_vs_dense", "gate"]].to_string(index=False))
  flips = result.tables.get("flips")  # the test images whose top-1 label changed
  print("flipped examples:", 0 if flips is None else len(flips))
  print("report:", result.paths["report_html"])


if __name__ == "__main__":
  if len(sys.argv) != 3:
    sys.exit("usage: audit_in_python.py FILES_DIR OUT_DIR")
  show(audit(sys.argv[1], sys.argv[2]))
