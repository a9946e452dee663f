"""The formats a population's members are exported to by default: those of the protocol of the
run's data set (`tf_forget.data.protocols`; docs/spec.md §1.1, §2.3). No TensorFlow here.

`protocol_formats(run_dir)` is what `export_population` uses when `--formats` or
`--pruned_formats` is not given: float32 plus the protocol's post-training formats for dense
members (CelebA: dynamic_int8 and full_int8; the others also float16), float32 only for pruned
members.
"""

import os

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.data.protocols import protocol_registry as protocols


def members_dataset(run_dir):
  """The data set of a run: `run.json`'s, else the one every member's metadata names.

  Raises:
    errors.ReadError: unreadable `run.json` or metadata, no member, or members of several data
      sets.
  """
  path = layout.run_file(run_dir)
  if filesystem.exists(path):
    run = fileio.read_json(path, "run config")
    return run.get("dataset") if isinstance(run, dict) else None
  found = set()
  for _, _, kdir in layout.walk(layout.members_root(run_dir)):
    meta_path = os.path.join(kdir, layout.METADATA_FILE)
    if filesystem.exists(meta_path):
      meta = fileio.read_json(meta_path, "member metadata")
      found.add(meta.get("dataset") if isinstance(meta, dict) else None)
  if len(found) != 1:
    what = "no member" if not found else f"members of several data sets {sorted(map(str, found))}"
    raise errors.ReadError(f"{run_dir} has no run.json and {what}")
  return found.pop()


def protocol_formats(run_dir):
  """(dense, pruned) comma-separated formats of the protocol of the run's data set.

  Raises:
    errors.ReadError: see `members_dataset`; protocols.ProtocolError: no protocol.
  """
  protocol = protocols.get(members_dataset(run_dir))
  return (
    ",".join(("float32",) + protocol.quantizations),
    ",".join(("float32",) + protocol.pruned_quantizations),
  )
