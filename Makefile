# Two set-up commands: `make demo` and `make test`. Both create .venv when missing and install
# torch first (TORCH_SPEC: override with your CUDA build, e.g. make test TORCH_SPEC="torch==2.13.0"
# TORCH_INDEX="--index-url https://download.pytorch.org/whl/cu128").
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
PIP := $(BIN)/python -m pip
OUT ?= ./gpu-proof-results

.PHONY: install install-test demo test lint typecheck format bench gpu-proof clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(PIP) install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# Serves the sizing dashboard on 127.0.0.1 and prints its URL; runs until Ctrl-C (CI runs `make test`).
demo: install
	$(BIN)/aiworkbook app sizing $(DEMO_ARGS)

# lint-imports: the layers of docs/architecture.md and no import circles ([tool.importlinter])
lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# mypy over aiworkbook/ and widgets/ ([tool.mypy] in pyproject.toml): no errors allowed.
typecheck: install-test
	$(BIN)/mypy

format: install-test
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Debian's packages the tests start or call, as command=package: Chromium for the browser tests
# (Playwright's own browser download does not work here), Prometheus for the fleet view
# (tests/prometheus_fleet.py), slurm-wlm, munge and shellcheck for the Slurm tests (tests/slurm_cluster.py),
# nginx as the rate limiter before FastChat (tests/test_serving_fastchat.py). Only the missing ones are
# installed, with one `apt-get update` for all of them, with sudo when not root.
SYSTEM_COMMANDS := chromium=chromium prometheus=prometheus slurmctld=slurm-wlm slurmd=slurm-wlm \
  sbatch=slurm-wlm munged=munge shellcheck=shellcheck nginx=nginx
.PHONY: system-packages chromium prometheus slurm nginx
system-packages:
	@missing=""; for pair in $(SYSTEM_COMMANDS); do \
	  cmd=$${pair%%=*}; pkg=$${pair#*=}; \
	  PATH="$$PATH:/usr/sbin:/sbin" command -v "$$cmd" >/dev/null 2>&1 || case " $$missing " in *" $$pkg "*) ;; *) missing="$$missing $$pkg";; esac; \
	done; \
	if [ -n "$$missing" ]; then \
	  SUDO=""; if [ "$$(id -u)" -ne 0 ]; then SUDO="sudo"; fi; \
	  echo "installing Debian's$$missing for the tests"; \
	  $$SUDO apt-get update -qq >/dev/null && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
chromium prometheus slurm nginx: system-packages

# The serving proof's tests run FastChat's OpenAI API server from its own venv (pydantic 1, exact pins:
# tools/fastchat-api.txt; tests/fastchat_server.py says why) and put Debian's nginx before it as a
# rate limiter (tests/test_serving_fastchat.py).
FASTCHAT_VENV ?= .venv-fastchat
$(FASTCHAT_VENV)/.installed: tools/fastchat-api.txt
	test -x $(FASTCHAT_VENV)/bin/python || $(PY) -m venv $(FASTCHAT_VENV)
	$(FASTCHAT_VENV)/bin/python -m pip install -q --no-deps -r tools/fastchat-api.txt
	touch $@

.PHONY: fastchat-api
fastchat-api: $(FASTCHAT_VENV)/.installed

# pytest exit code 5 means "no tests collected": say so instead of failing on an empty selection.
# The suite runs on PYTEST_WORKERS parallel workers (pytest-xdist; 0: in this process), a whole file
# per worker (--dist loadfile): a module's Voilà servers, browser and notebook kernel stay in one.
# Tests marked `serial` (timing that another worker's disk load upsets) run afterwards, alone.
# mypy (about 40 s from a fresh clone) runs beside the parallel part, which waits on servers and
# browsers much of the time, and is waited for before the serial part; its errors fail the run.
# A worker that crashes (a native abort) fails the run at once (--max-worker-restart 0): a replaced
# worker once left xdist's controller waiting for ever.
PYTEST_WORKERS ?= 2
test: install-test system-packages fastchat-api lint
	@$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & mp=$$!; \
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --max-worker-restart 0 -m "not serial" $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; \
	wait $$mp; rm=$$?; echo "mypy:"; cat $(VENV)/mypy.log; \
	$(BIN)/pytest -m serial tests $(PYTEST_ARGS); rs=$$?; if [ $$rs -eq 5 ]; then rs=0; fi; \
	if [ $$rm -ne 0 ]; then echo "mypy failed"; exit $$rm; fi; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; exit $$rs

bench: install
	$(BIN)/python benchmarks/run.py

# This load generator beside GuideLLM and vLLM's benchmark client (installed into .venv-peers on the
# first run, about 2 GB); not part of `make test` or `make bench` (docs/serving.md).
.PHONY: bench-peers
bench-peers: install
	$(BIN)/python benchmarks/peers.py $(PEERS_ARGS)

# On a lent GPU machine without network, use tools/gpu_proof_device.sh instead (docs/proofs.md).
# the machine's own CUDA torch, only the proofs' packages, offline with .whl/ (tools/gpu_proof.sh)
gpu-proof:
	OUT=$(OUT) bash tools/gpu_proof.sh

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info
