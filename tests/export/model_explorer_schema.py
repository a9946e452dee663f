"""Model Explorer's own node-data schema, for the tests: the package's dataclasses.

`ai-edge-model-explorer==0.1.34` is installed without its dependencies (requirements-nodeps.txt:
its graph adapter wheel is 128 MB). Its `model_explorer/__init__.py` imports the server (flask),
so the package is entered through a bare parent module and only `node_data_builder` (with the
`utils` / `types` / `graph_builder` modules it imports) is executed. Node data is read into
`GraphNodeData` with dacite in strict mode (an unknown field, a missing required field or a
value of the wrong type fails), and written back with the package's own `to_json_string`.
"""

import importlib
import importlib.util
import json
import sys
import types

import dacite

_PACKAGE = "model_explorer"


def node_data_builder():
  """The package's `model_explorer.node_data_builder` module (its `__init__` not executed)."""
  name = f"{_PACKAGE}.node_data_builder"
  if name in sys.modules:
    return sys.modules[name]
  spec = importlib.util.find_spec(_PACKAGE)
  if spec is None:
    raise ImportError("ai-edge-model-explorer is not installed (requirements-nodeps.txt)")
  if _PACKAGE not in sys.modules:
    parent = types.ModuleType(_PACKAGE)
    parent.__path__ = list(spec.submodule_search_locations)
    sys.modules[_PACKAGE] = parent
  return importlib.import_module(name)


def load_graph_node_data(data):
  """`data` (a dict) as the package's `GraphNodeData`; raises dacite.DaciteError if it is not."""
  return dacite.from_dict(
    node_data_builder().GraphNodeData, data, config=dacite.Config(strict=True)
  )


def round_trip(data):
  """`data` read into `GraphNodeData` and written by the package (`to_json_string`), as a dict."""
  return json.loads(load_graph_node_data(data).to_json_string())
