"""tf_forget.stats: every measure of the four papers, pure numpy / scipy / pandas.

Importing this package never imports TensorFlow or any other part of tf_forget, so the
measures run on predictions from any framework. See docs/artifacts/stats.md for the
input arrays and output tables, and docs/spec.md §3-§7 for the settled choices.

Modules: validate, accuracy, class_level, exemplars, cie, subgroups, robustness,
recall_distortion, lost_in_pruning, representation, paired (one network against its own
compressed file, K = 1: per-example paired tests and intervals).
"""
