"""What the report does for the human study: the `Options` section.

A light module (standard library only): the configuration tree (`tf_forget.config.tree`) holds
these options as its `human_study` section, and reading the configuration must not load the
study's statistics; the study itself is `tf_forget.report.human_study`.
"""

import dataclasses
from typing import Optional, Sequence

CONFIDENCE = 0.95  # the level of the ratio intervals


@dataclasses.dataclass(frozen=True)
class Options:
  """What the report does for the human study (`tf_forget.report.write.build_report`'s
  `human_study`).

  Attributes:
    export_dir: write the blind-annotation export here (`sheet/` for the annotators,
      `key.json` apart); None: no export. A directory that holds another study's export is
      refused (its key would be lost); one that holds this very study's is kept as it is
      (an annotator may be filling it in place).
    annotations: a filled annotation CSV to read back (adds the `human_study` table).
    key: its `key.json`; default: `export_dir/key.json` if it exists, else the `key.json`
      beside the `sheet/` directory the annotations file sits in.
    variant, group, per_group, seed, percentile: the study (defaults: the variant with the
      most examples in the group, "pie", 100, 0, 90 (cie only)). Reading back, None means the
      key's; a value given must equal the key's.
    columns: extra 0/1 attribute columns put on the sheet after `VOCABULARY`.
    confidence: level of the ratio intervals.
  """

  export_dir: Optional[str] = None
  annotations: Optional[str] = None
  key: Optional[str] = None
  variant: Optional[str] = None
  group: Optional[str] = None
  per_group: Optional[int] = None
  seed: Optional[int] = None
  percentile: Optional[float] = None
  columns: Sequence[str] = ()
  confidence: float = CONFIDENCE
