# Developer tasks. `make test` is the README's test command, which .ci/run runs on a clean clone;
# `make lint` is also run by the test suite (tests/test_lint.py).
.PHONY: test lint fix bench

test:
	pip install '.[test]' ./benches/seedref && cargo test && bash fuzz/smoke.sh && python -m pytest

lint:
	cargo fmt --check
	cargo clippy --all-features --all-targets -- -D warnings
	ruff check python tests benches _build
	ruff format --check python tests benches _build
	mypy python
	python -m mypy.stubtest toolsift._core

fix:
	cargo fmt
	ruff check --fix python tests benches _build
	ruff format python tests benches _build

bench:
	python benches/scale.py
	python benches/compare.py --rounds 5 --markdown
