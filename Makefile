# Two commands do all set-up on a fresh machine (Python 3.11, root): see README.md.
#   make audit   set up, then run the main job on the embedded default data set (digits)
#   make test    set up, then run the whole test suite under Bazel
# TF_DEVICE=gpu (e.g. `make audit TF_DEVICE=gpu`) installs tensorflow[and-cuda] instead of
# tensorflow-cpu (tools/setup.sh); the tests always run CPU-only (no GPU is made visible).
SHELL := /bin/bash
BAZEL := bazel
AUDIT_ARGS ?=
TF_DEVICE ?= cpu

.PHONY: setup audit test clean

setup:
	@TF_DEVICE=$(TF_DEVICE) bash tools/setup.sh

audit: setup
	$(BAZEL) run //eval:audit -- $(AUDIT_ARGS)

# Every test file is its own py_test target; pytest runs each and its JUnit XML is summed.
# SETUP_CHROMIUM=1: the set-up also installs Debian's chromium for the report's browser check
# (tests/report/render_check_test.py); the audit needs no browser.
test:
	@TF_DEVICE=$(TF_DEVICE) SETUP_CHROMIUM=1 bash tools/setup.sh
	$(BAZEL) build //...
	@status=0; $(BAZEL) test --test_env=CUDA_VISIBLE_DEVICES= //... || status=$$?; \
	  .venv/bin/python tools/test_summary.py bazel-testlogs \
	    $$($(BAZEL) query 'tests(//...) except attr(tags, manual, //...)' 2>/dev/null) || status=1; \
	  exit $$status

clean:
	$(BAZEL) clean
