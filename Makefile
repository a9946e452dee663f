# Two commands do all set-up on a fresh machine (Python 3.11, root): see README.md.
#   make audit   set up, then run the main job on the embedded default data set (digits)
#   make test    set up, then run the whole test suite under Bazel
# TF_DEVICE=gpu (e.g. `make audit TF_DEVICE=gpu`) installs tensorflow[and-cuda] instead of
# tensorflow-cpu (tools/setup.sh); the tests always run CPU-only (no GPU is made visible).
SHELL := /bin/bash
BAZEL := bazel
AUDIT_ARGS ?=
TF_DEVICE ?= cpu

.PHONY: setup audit test test-fast clean reproduce-002

setup:
	@TF_DEVICE=$(TF_DEVICE) bash tools/setup.sh

audit: setup
	$(BAZEL) run //eval:audit -- $(AUDIT_ARGS)

# First the static checks (tools/static_checks.sh: ruff, mypy on the plain-data packages), then
# the repository's own checks (tools/check_repo.py: no history, no path outside, no dead
# link; tools/check_build.py: every project import a Bazel dep; seconds), then every test
# target (a package's suite of files that share a process, or one file alone; tools/pytest.bzl);
# pytest runs each and its JUnit XML is summed.
# SETUP_CHROMIUM=1: the set-up also installs Debian's chromium for the report's browser check
# (tests/report/render_check_test.py); the audit needs no browser.
test:
	@TF_DEVICE=$(TF_DEVICE) SETUP_CHROMIUM=1 bash tools/setup.sh
	bash tools/static_checks.sh
	.venv/bin/python tools/check_repo.py
	.venv/bin/python tools/check_build.py
	$(BAZEL) build //...
	@status=0; $(BAZEL) test --test_env=CUDA_VISIBLE_DEVICES= //... || status=$$?; \
	  .venv/bin/python tools/test_summary.py bazel-testlogs \
	    $$($(BAZEL) query 'tests(//...) except attr(tags, manual, //...)' 2>/dev/null) || status=1; \
	  exit $$status

# The quick check while you work (tools/fast_tests.py, docs/testing.md): the test files that
# import no TensorFlow and start no process, in one pytest process, in seconds.
test-fast: setup
	.venv/bin/python tools/fast_tests.py --run

# 002's MNIST / LeNet-5 tables side by side with ours (docs/reproductions/002_mnist.md): trains
# REPRO_MEMBERS LeNet-5 parents on the MNIST IDX files in MNIST_DIR, prunes each by MP at 002's
# ratios, fine-tunes, evaluates, then writes the CSV, the run facts and the page. Resumes after a
# kill; AUDIT_ARGS="--plan" prints the cost first.
REPRO_MEMBERS ?= 30
REPRO_OUT ?= runs/mnist_002
reproduce-002: setup
	@test -n "$(MNIST_DIR)" || { echo "reproduce-002: set MNIST_DIR=DIR, the directory of the four MNIST IDX files"; exit 2; }
	TF_USE_LEGACY_KERAS=1 PYTHONPATH=. .venv/bin/python eval/audit.py --dataset=mnist \
	  --data_dir=$(MNIST_DIR) --preset=lenet5_002 --pruning=oneshot --algorithms=mp \
	  --ratios=2,4,10,20,50 --exclude_classifier --ratio_over=all --members=$(REPRO_MEMBERS) \
	  --quantizations=float16 --pruned_quantizations=float16 --corruptions=none \
	  --noise_levels=none --deploy_encoding=plain --out=$(REPRO_OUT) $(AUDIT_ARGS)
	@if [[ " $(AUDIT_ARGS) " != *" --plan "* ]]; then \
	  PYTHONPATH=. .venv/bin/python tools/reproduce_002.py --run=$(REPRO_OUT) docs/reproductions; fi

clean:
	$(BAZEL) clean
