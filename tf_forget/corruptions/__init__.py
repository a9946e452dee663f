"""Corruption suites for any data set (issue #5): ImageNet-C / CIFAR-10-C corruptions, cache."""
