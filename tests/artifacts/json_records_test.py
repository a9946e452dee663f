"""The JSON artifacts of a run: each one module with its schema id, `read` and atomic `write`.

Every module's `write` stamps its schema and `read` gives back what was written; a readable
file of another schema (or not an object) is an `errors.SchemaError` naming the schema, an
unreadable one an `errors.ReadError`: one line each, never a raw traceback.
"""

import json
import os

import pytest

from tf_forget.artifacts import agreement_table
from tf_forget.artifacts import audit_json
from tf_forget.artifacts import encodings
from tf_forget.artifacts import errors
from tf_forget.artifacts import layers_json
from tf_forget.artifacts import member_metadata
from tf_forget.artifacts import names
from tf_forget.artifacts import run_json
from tf_forget.artifacts import tflite_failure
from tf_forget.artifacts import tflite_json

MODULES = {
  "encodings": (encodings, lambda run: encodings.path(run)),
  "export JSON": (tflite_json, lambda run: tflite_json.paths(run, names.Variant("dense"), 0)[1]),
  "failure record": (
    tflite_failure,
    lambda run: tflite_failure.path(run, names.Variant("prune_0.9", "float32", "sparse"), 0),
  ),
  "run.json": (run_json, lambda run: run_json.path(run)),
  "member metadata": (member_metadata, lambda run: member_metadata.path(run, "dense", 0)),
  "agreement table": (agreement_table, lambda run: agreement_table.path(run, "test")),
  "layer analysis": (layers_json, lambda run: layers_json.path(run, "dense", 0, "full_int8")),
}
# The schema ids as docs/artifacts/*.md document them.
SCHEMAS = {
  "encodings": "tf_forget.encodings/1",
  "export JSON": "tf_forget.tflite/1",
  "failure record": "tf_forget.tflite_failure/1",
  "run.json": "tf_forget.run/1",
  "member metadata": "tf_forget.member/1",
  "agreement table": "tf_forget.agreement/1",
  "layer analysis": "tf_forget.layers/1",
}


@pytest.mark.parametrize("what", sorted(MODULES))
def test_write_stamps_the_schema_and_read_gives_it_back(tmp_path, what):
  module, path = MODULES[what]
  path = path(str(tmp_path))
  written = module.write(path, {"variant": "dense", "k": 0})
  assert module.SCHEMA == SCHEMAS[what] and written["schema"] == SCHEMAS[what]
  with open(path, encoding="utf-8") as f:
    assert json.load(f) == {"schema": SCHEMAS[what], "variant": "dense", "k": 0}
  assert module.read(path) == written
  assert not [n for n in os.listdir(os.path.dirname(path)) if ".tmp-" in n]


@pytest.mark.parametrize("what", sorted(MODULES))
@pytest.mark.parametrize(
  "text, error",
  [
    ('{"schema": "tf_forget.other/1"}', errors.SchemaError),
    ('["tf_forget.tflite/1"]', errors.SchemaError),
    ('{"schema": ', errors.ReadError),
  ],
)
def test_another_schema_or_garbage_is_one_line(tmp_path, what, text, error):
  module, path = MODULES[what]
  path = path(str(tmp_path))
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  with pytest.raises(error) as e:
    module.read(path)
  assert "\n" not in str(e.value) and path in str(e.value)
  if error is errors.SchemaError:
    assert str(e.value) == f"{path} is not a {SCHEMAS[what]} file"
  with pytest.raises(errors.ReadError):
    module.read(path + ".missing")


def test_audit_json_holds_the_identity_the_config_and_the_caveats(tmp_path):
  path = audit_json.path(str(tmp_path))
  audit_json.write(path, {"dataset": "digits"}, {"out": "x"}, ("an unsure scaling",))
  assert audit_json.read(path) == {
    "schema": "tf_forget.audit/1",
    "config": {"dataset": "digits"},
    "audit_config": {"out": "x"},
    "caveats": ["an unsure scaling"],
  }


def test_a_failure_record_names_the_plain_twin_and_the_reason_on_one_line():
  record = tflite_failure.record(
    names.Variant("prune_0.9", "full_int8", "sparse"), 2, "conversion failed:\n  some trace"
  )
  assert record == {
    "schema": "tf_forget.tflite_failure/1",
    "variant": "prune_0.9+full_int8+sparse",
    "member_variant": "prune_0.9",
    "k": 2,
    "format": "full_int8",
    "encoding": "sparse",
    "reason": "conversion failed: some trace",
    "plain_twin": "full_int8.tflite",
  }


def test_only_stem_json_files_are_export_jsons():
  assert tflite_json.is_export_json("full_int8+sparse.json")
  assert not tflite_json.is_export_json("full_int8+sparse.failed.json")
  assert not tflite_json.is_export_json("float32.json.tmp-1a2b3c4d")
  assert not tflite_json.is_export_json("float32.tflite")
