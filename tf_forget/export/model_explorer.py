"""Per-layer quantization error as Model Explorer node data: colours the ops of a .tflite graph.

Google's Model Explorer (github.com/google-ai-edge/model-explorer, PyPI `ai-edge-model-explorer`)
overlays "custom node data" loaded from a JSON file on a graph. Format, read in the package's
`model_explorer/node_data_builder.py` (release 0.1.34, the wheel on PyPI; GitHub commit
06091442ede407959d767cfc0d9169176ccd82dc has the same classes without `name`):
  * `GraphNodeData` (one graph): `results` {node key: `NodeDataResult` {"value": number,
    optional "bgColor", "textColor"}}, optional `name` (display name), optional `thresholds`
    [{"value", "bgColor", "textColor"?}], optional `gradient` [`GradientItem` {"stop": 0..1,
    "bgColor"?, "textColor"?}] where stop 0 is the smallest value in `results` and stop 1 the
    largest ("stops for 0 and 1 should always be provided"; colours in hex or by name; the
    gradient takes precedence over thresholds), and optional booleans
    (`hideInAggregatedStatsTable`, ...). `to_json_string` drops None fields.
  * `ModelNodeData`: {graph id: GraphNodeData}. The web app (`getNodeDataProviderData` in the
    bundled main-*.js) takes a file whose `results` exists and has no `results` of its own as
    one GraphNodeData and applies it to the graph on screen; we write that form.
  * Node keys (`GraphNodeData.results` comment; `processNodeDataProviderDataForGraph` in the web
    app): a node id, or any output tensor name of a node, matched against the `tensor_name` of
    the node's `outputsMetadata`. The TFLite flatbuffer adapter
    (`src/builtin-adapter/adapters/litert/direct_flatbuffer_to_json_graph_convert.cc`, commit
    1c9e4cf94b90d1bafd2eef48ac8e2fddcedd59e1) gives op i of a subgraph the node id "i" and
    records each output's tensor name there. We key by the op's
    output tensor name in the plain full_int8 file (`layer_error` row `file_tensor_name`), which
    does not depend on the op numbering.

Checked by the tests with the package's own dataclasses (tests/export/
model_explorer_schema.py: `GraphNodeData` read in dacite's strict mode, written back identically
by its `to_json_string`; the package is installed without its dependencies).

Use: `model_explorer.visualize("<member>.full_int8.tflite", node_data={"name": "nmse",
"node_data_path": "<this file>.json"})` (`apis.py`, `NodeDataInfo`), or load the file in the
web app's node data panel.
"""

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio

# The colour ramp (hex; a gradient takes hex colours or colour names): low error white, high
# error red.
LOW_COLOR = "#ffffff"
MID_COLOR = "#fbbc04"
HIGH_COLOR = "#d93025"
# Metrics where a larger value means a better quantized layer: their ramp runs the other way.
HIGHER_IS_BETTER = ("snr_db", "cosine")


class NodeDataError(errors.Error):
  """A node-data request the layer errors cannot answer (one line)."""


def model_explorer_node_data(result, metric, subset):
  """Model Explorer `GraphNodeData` (as a plain dict) of one metric of `layer_error` rows.

  Args:
    result: rows of `layer_error.layer_errors`.
    metric: one of `layer_error.METRICS` ("mse", "float_power", "nmse", "snr_db", "cosine").
    subset: one of the result's subsets.

  Returns:
    {"name": "<metric> on <subset>",
     "results": {output tensor name in the full_int8 file: {"value": float}},
     "gradient": [{"stop": 0, "bgColor": ...}, {"stop": 0.5, ...}, {"stop": 1, ...}]}:
    red for the layers with the worst error (the largest mse / nmse, the smallest snr_db /
    cosine). Layers whose value is undefined (None) are left out.

  Raises:
    NodeDataError: an unknown metric or subset.
  """
  results = {}
  for row in result:
    values = row["subsets"].get(subset)
    if values is None:
      raise NodeDataError(
        f"layer errors have no subset {subset!r} (have {', '.join(sorted(row['subsets']))})"
      )
    if metric not in values or metric == "count":
      raise NodeDataError(
        f"unknown metric {metric!r} (one of {', '.join(k for k in values if k != 'count')})"
      )
    if values[metric] is not None and row.get("file_tensor_name"):
      results[row["file_tensor_name"]] = {"value": float(values[metric])}
  colors = [LOW_COLOR, MID_COLOR, HIGH_COLOR]
  if metric in HIGHER_IS_BETTER:
    colors.reverse()
  gradient = [{"stop": stop, "bgColor": color} for stop, color in zip((0, 0.5, 1), colors)]
  return {"name": f"{metric} on {subset}", "results": results, "gradient": gradient}


def write_model_explorer_json(path, data):
  """Writes node data as strict JSON, atomically (temporary name, then rename).

  Raises:
    errors.WriteError: the file cannot be written; no partial or temporary file is left.
  """
  fileio.write_json(path, data, strict=True)
