"""Corruption suites for any data set: ImageNet-C / CIFAR-10-C corruptions, cache."""
