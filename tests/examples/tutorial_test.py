"""examples/tutorial/README.md's commands, run as written.

The README's shell block makes the files of TensorFlow's post-training integer quantization
tutorial with Keras 3 (`make_files.py`) and audits them as they are. The test runs that block
(the interpreter running this test, a temporary directory for /tmp/tutorial) and checks:

  * every variant's top-1 against an independent count: each `.tflite` file run here in the
    LiteRT interpreter on the PNGs, fed as the tutorial feeds it (pixels / 255, `[N, 8, 8]`,
    the uint8 file's input quantized with its own scale and zero point);
  * the verdict's sentences about the user's two files;
  * the README's refusal without `--preprocess=unit`: one line, exit 1, nothing written.
"""

import glob
import json
import os
import subprocess

from ai_edge_litert import interpreter as litert
import numpy as np
from PIL import Image

from tests.examples import readme_commands

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env():
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1", CUDA_VISIBLE_DEVICES="")
  env.pop("BUILD_WORKING_DIRECTORY", None)
  return env


def _test_images(root):
  """(images uint8 [N, 8, 8], labels [N]) of images/test/<digit>/*.png."""
  paths = sorted(glob.glob(os.path.join(root, "images", "test", "*", "*.png")))
  images = np.stack([np.asarray(Image.open(p)) for p in paths])
  labels = np.array([int(os.path.basename(os.path.dirname(p))) for p in paths])
  return images, labels


def _top1(path, images):
  """The file's top-1 on `images`, one at a time, fed pixels / 255 as the tutorial does."""
  interpreter = litert.Interpreter(model_path=path)
  interpreter.allocate_tensors()
  inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
  top1 = []
  for image in images:
    x = image[None].astype(np.float32) / 255.0
    if inp["dtype"] == np.uint8:
      scale, zero = inp["quantization"]
      x = np.clip(np.round(x / scale) + zero, 0, 255).astype(np.uint8)
    interpreter.set_tensor(inp["index"], x.reshape(inp["shape"]))
    interpreter.invoke()
    top1.append(int(np.argmax(interpreter.get_tensor(out["index"])[0])))
  return np.array(top1)


def test_the_readme_commands_audit_the_tutorials_files_as_they_are(tmp_path):
  out = str(tmp_path / "tutorial")
  commands = readme_commands.commands("examples/tutorial/README.md", "/tmp/tutorial", out)
  for command in commands:
    result = subprocess.run(
      command,
      shell=True,
      cwd=ROOT,
      env=_env(),
      text=True,
      capture_output=True,
      timeout=900,
      check=False,
    )
    assert result.returncode == 0, (command, result.stderr[-3000:])
  # A small audit runs in its own process: a worker pool would cost more than it saves.
  assert "executor: this process (the work is estimated at " in result.stdout, result.stdout
  report = json.loads(open(os.path.join(out, "audit", "report.json")).read())
  assert set(report["variants"]) == {"dense", "user_dynamic", "user_quant"}
  images, labels = _test_images(out)
  files = {
    "dense": os.path.join(out, "audit", "deploy", "dense", "0.tflite"),
    "user_dynamic": os.path.join(out, "mnist_model_dynamic.tflite"),
    "user_quant": os.path.join(out, "mnist_model_quant.tflite"),
  }
  if not os.path.exists(files["dense"]):  # the bundle ships the recommended file only
    files["dense"] = os.path.join(out, "mnist_model.tflite")
  for variant, path in files.items():
    want = float(np.mean(_top1(path, images) == labels))
    assert report["variants"][variant]["top1"] == want, (variant, want)
  assert report["variants"]["user_quant"]["top1"] > 0.85  # a working file, not a clamped one
  users = " ".join(report["recommendation"]["users"])
  assert "Your dynamic file (user_dynamic" in users and "is recommended" in users, users
  assert "Your quant file (user_quant" in users and "the same top-1 predictions" in users, users
  page = open(os.path.join(out, "audit", "report.html"), encoding="utf-8").read()
  assert "Your quant file" in page and "Your dynamic file" in page

  raw = [c for c in commands if "eval/audit.py" in c][0].replace(" --preprocess=unit", "")
  refused_out = os.path.join(out, "audit")
  raw = raw.replace(f"--out={refused_out}", f"--out={out}/raw")
  result = subprocess.run(
    raw, shell=True, cwd=ROOT, env=_env(), text=True, capture_output=True, timeout=900, check=False
  )
  lines = result.stderr.strip().splitlines()
  assert result.returncode == 1 and len(lines) == 1, result.stderr[-3000:]
  assert lines[0].startswith(
    f"audit: error: candidate quant {files['user_quant']} takes uint8 "
    "input calibrated for values in [0, 1] (scale 0.00392, zero "
    "point 0), but "
  ), lines[0]
  assert lines[0].endswith(
    "it was calibrated for --preprocess=unit; give it, or "
    "--input_scaling_check=off to audit as given"
  ), lines[0]
  assert not os.path.exists(os.path.join(out, "raw"))
