"""tf_forget.policy: the rules the audit decides by, as the user sets them.

The gates (`gates`: bounds on what a compressed file may change, and each variant's verdict),
the ship rule (`ship_rule`: which file to ship) and the paired comparisons it rests on
(`file_pairs`), and what the report does for the human study (`human_study_options`). The
configuration (`tf_forget.config`), the bundle (`tf_forget.evaluate.deploy`) and the report
(`tf_forget.report`) read them; this package imports only `tf_forget.artifacts` (numpy and
scipy besides), never TensorFlow.
"""
