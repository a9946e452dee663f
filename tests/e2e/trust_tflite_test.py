"""The user's `.tflite` files, refused in one line when they cannot be audited.

Over the files `user_files.make` builds (a tiny digits classifier, its plain converter's full
int8 and float32 files, a PNG folder):

  * a `.tflite` cut at any length, or with bytes overwritten, given as `--candidate` or as
    `--reference`, is refused before anything is written: exit 1, one line naming the file
    and saying it "is not a complete TFLite flatbuffer (truncated or corrupt: ...)" — found
    by the bounds-checked parse (`tf_forget.export.flatbuffer.verify`) or, for the parts the
    parser does not read (an operator's options), by loading it in the LiteRT interpreter
    (`tf_forget.pipeline.user_plan`);
  * a quantized file (full int8, dynamic-range int8, float16 weights: the plain converter's
    own options) given as `--reference` is refused with what it is and how to give it; the
    float32 file stays accepted.

Every cut, overwrite and quantized file is checked by the function the audit calls on each `.tflite`
it is given (`tf_forget.pipeline.user_checks.read_tflite`, then `candidates.check_float_reference` for
a reference); one case of each kind also goes through the audit binary as a user runs it
(`audit_binary`), which must refuse it in that one line and write nothing: `--out` does not exist
afterwards when it did not before, and an existing empty one stays empty.
"""

import struct

from ai_edge_litert import schema_py_generated as schema
import numpy as np
import pytest
import tensorflow as tf

from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.compat import keras2
from tf_forget.export import candidates
from tf_forget.export import flatbuffer_graph
from tf_forget.pipeline import user_checks

CUTS = ("0", "1", "7", "8", "100", "half", "len-100", "len-1")
INCOMPLETE = "is not a complete TFLite flatbuffer (truncated or corrupt: "


def _convert(model, **target):
  """The plain converter's quantized file: dynamic-range int8, or float16 weights."""
  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  converter.target_spec.supported_types = target.get("supported_types", [])
  return converter.convert()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  """The user's files (once for the module), plus float16.tflite and dynamic.tflite."""
  root = user_files.make(tmp_path_factory.mktemp("user"))
  model = keras2.keras().models.load_model(str(root / "model.keras"))
  (root / "float16.tflite").write_bytes(_convert(model, supported_types=[tf.float16]))
  (root / "dynamic.tflite").write_bytes(_convert(model))
  return root


def _cut(data, cut):
  length = {"half": len(data) // 2, "len-100": len(data) - 100, "len-1": len(data) - 1}
  return data[: length[cut] if cut in length else int(cut)]


def _snapshot(out):
  """None if `out` does not exist, else {relative path: bytes (None for a folder)}."""
  if not out.exists():
    return None
  return {
    str(p.relative_to(out)): None if p.is_dir() else p.read_bytes() for p in sorted(out.rglob("*"))
  }


def _refused(root, args, out):
  """The one stderr line of a refused audit; checks exit 1 and that `out` is unchanged."""
  before = _snapshot(out)
  result = audit_binary.audit(args, cwd=root)
  line = audit_binary.one_line(result)
  assert _snapshot(out) == before
  assert line.startswith("audit: error: "), line
  return line


def _reference_args(reference, out, *extra):
  """`--reference=<a .tflite file>` with the user's int8 candidate."""
  return [
    "--dataset=folder:images",
    f"--reference={reference}",
    "--candidate=int8=int8.tflite",
    f"--out={out}",
    *user_files.COMMON,
    *extra,
  ]


def _existing_out(tmp_path):
  """An existing, empty run directory (one the audit would write into): must stay empty."""
  out = tmp_path / "out"
  out.mkdir()
  return out


def _read_error(path):
  """The one-line error of the audit's read of a user's `.tflite` file."""
  with pytest.raises(candidates.CandidateError) as e:
    user_checks.read_tflite(str(path))
  return str(e.value)


@pytest.mark.parametrize("name", ["int8.tflite", "float.tflite"])
@pytest.mark.parametrize("cut", CUTS)
def test_a_file_cut_at_any_length_is_refused(root, tmp_path, name, cut):
  path = tmp_path / f"cut_{cut}_{name}"
  path.write_bytes(_cut((root / name).read_bytes(), cut))
  line = _read_error(path)
  assert line.startswith(f"{path} {INCOMPLETE}") and line.endswith(")"), line


@pytest.mark.parametrize("cut, existing", [("len-100", True), ("8", False)])
def test_truncated_candidate_is_refused_by_the_audit(root, tmp_path, cut, existing):
  """A candidate missing its last 100 bytes (or all but its first 8): one line, not a traceback."""
  path = root / f"int8_cut_{cut}.tflite"
  path.write_bytes(_cut((root / "int8.tflite").read_bytes(), cut))
  out = _existing_out(tmp_path) if existing else tmp_path / "out"
  line = _refused(root, user_files.args(out, f"--candidate=cut={path.name}"), out)
  assert line == "audit: error: " + _read_error(path)


def test_truncated_reference_is_refused_by_the_audit(root, tmp_path):
  path = root / "float_cut_half.tflite"
  path.write_bytes(_cut((root / "float.tflite").read_bytes(), "half"))
  out = _existing_out(tmp_path)
  line = _refused(root, _reference_args(path.name, out), out)
  assert f"{path} {INCOMPLETE}" in line and line.endswith(")"), line


def _overwrite_name_length(data, seed):
  """`data` with random bytes over the length of its input tensor's name (the middle of the
  file), the top bit set: a string that runs past the end of the file."""
  name = flatbuffer_graph.io_details(data)["inputs"][0]["name"].encode()
  pos = data.index(name + b"\0") - 4
  assert struct.unpack_from("<I", data, pos)[0] == len(name)  # the string's length prefix
  noise = bytearray(np.random.default_rng(seed).integers(0, 256, 4, dtype=np.uint8).tobytes())
  noise[3] |= 0x80
  return data[:pos] + bytes(noise) + data[pos + 4 :]


def _overwrite_options(data):
  """`data` with the first operator's options table pointing its vtable outside the file:
  a part `flatbuffer` does not parse, refused when the LiteRT interpreter loads it."""
  options = schema.Model.GetRootAs(data, 0).Subgraphs(0).Operators(0).BuiltinOptions()
  return data[: options.Pos] + struct.pack("<i", -(1 << 30)) + data[options.Pos + 4 :]


def _overwritten(root, name, corruption):
  data = (root / name).read_bytes()
  path = root / f"{corruption}_{name}"
  path.write_bytes(
    _overwrite_name_length(data, seed=35)
    if corruption == "name_length"
    else _overwrite_options(data)
  )
  return path


@pytest.mark.parametrize("name", ["int8.tflite", "float.tflite"])
@pytest.mark.parametrize("corruption", ["name_length", "options"])
def test_overwritten_bytes_are_refused(root, name, corruption):
  path = _overwritten(root, name, corruption)
  line = _read_error(path)
  assert line.startswith(f"{path} {INCOMPLETE}"), line
  if corruption == "name_length":  # the bounds-checked parse names the string
    assert "tensor" in line and ": name: " in line and "past the end of the" in line, line
  else:
    assert "the LiteRT interpreter refuses it" in line, line


@pytest.mark.parametrize("flag", ["candidate", "reference"])
def test_overwritten_bytes_are_refused_by_the_audit(root, tmp_path, flag):
  """The part the parser does not read: found when the interpreter loads the file."""
  path = _overwritten(root, "int8.tflite" if flag == "candidate" else "float.tflite", "options")
  out = tmp_path / "out"
  args = (
    user_files.args(out, f"--candidate=bad={path.name}")
    if flag == "candidate"
    else _reference_args(path.name, out)
  )
  line = _refused(root, args, out)
  assert f"{path} {INCOMPLETE}" in line and "the LiteRT interpreter refuses it" in line, line


def _quantized_reference_error(path):
  return (
    f"--reference must be the float model; {path} is a "
    f"{KINDS[path.name]} file: give it as --candidate=NAME={path}"
  )


KINDS = {
  "int8.tflite": "full-integer int8",
  "dynamic.tflite": "dynamic-range int8",
  "float16.tflite": "float16-weight",
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_quantized_reference_is_refused(root, name):
  path = root / name
  with pytest.raises(candidates.CandidateError) as e:
    candidates.check_float_reference(user_checks.read_tflite(str(path)), str(path))
  assert str(e.value) == _quantized_reference_error(path)


def test_quantized_reference_is_refused_by_the_audit(root, tmp_path):
  out = tmp_path / "out"
  line = _refused(root, _reference_args("dynamic.tflite", out), out)
  assert line == "audit: error: " + _quantized_reference_error(root / "dynamic.tflite")


def test_float_reference_is_accepted(root, tmp_path):
  out = tmp_path / "out"
  result = audit_binary.audit(_reference_args("float.tflite", out, "--plan"), cwd=root)
  assert result.returncode == 0, result.stderr[-3000:]
  assert "audit plan: your model (tflite, 1 reference, 8x8x1 -> 10 classes)" in result.stdout
  assert "candidates: int8" in result.stdout
  candidates.check_float_reference((root / "float.tflite").read_bytes(), "float.tflite")
