"""The predictions artifact: see `tf_forget.artifacts.predictions` (moved there, issue #14).

Kept so that `from eval import predictions` keeps working; numpy only, no TensorFlow.
"""

from tf_forget.artifacts.predictions import MAX_TOPK  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import PredictionsError  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import SCHEMA  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import is_complete  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import path  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import read  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import split_identity  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import status  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import topk  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import topk_size  # pylint: disable=unused-import
from tf_forget.artifacts.predictions import write  # pylint: disable=unused-import
