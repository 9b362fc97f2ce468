#!/usr/bin/env bash
# Fuzz smoke for CI: build the cargo-fuzz targets and run each for a bounded number of inputs.
#
# Works with the stable toolchain and without cargo-fuzz: the fuzz crate is built with plain
# `cargo build` and the SanitizerCoverage flags cargo-fuzz 0.13 passes for `--sanitizer none`,
# and the libFuzzer binaries are run directly on a throwaway corpus. A crashing input is kept
# under fuzz/artifacts/<target>/ and the script fails.
#
#   FUZZ_SMOKE_RUNS       inputs per target            (default 50000)
#   FUZZ_SMOKE_SECONDS    time cap per target, seconds (default 15)
#   FUZZ_SMOKE_SEED       libFuzzer seed               (default 1, for repeatable CI runs)
#   FUZZ_SMOKE_CARGO_FUZZ=1  use `cargo +nightly fuzz run` (AddressSanitizer) instead; needs
#                            cargo-fuzz and a nightly toolchain. Off by default.
set -euo pipefail
cd "$(dirname "$0")"

targets=(tokenizer index_build snapshot_load)
runs="${FUZZ_SMOKE_RUNS:-50000}"
seconds="${FUZZ_SMOKE_SECONDS:-15}"
seed="${FUZZ_SMOKE_SEED:-1}"
libfuzzer_args=(-runs="$runs" -max_total_time="$seconds" -seed="$seed" -timeout=10
  -print_final_stats=1)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

report() { # target log
  local units secs
  units="$(sed -n 's/^stat::number_of_executed_units: *//p' "$2" | tail -n 1)"
  secs="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$2" | tail -n 1)"
  echo "fuzz smoke: $1: ${units:-?} inputs executed in ${secs:-?} s, no crash"
}

fail() { # target log
  echo "fuzz smoke: $1 FAILED; last lines of its log:" >&2
  tail -n 60 "$2" >&2
  echo "fuzz smoke: reproduce with: fuzz/target/<host triple>/release/$1 <the crash- file above>" \
    "(or: cargo fuzz run $1 <file>)" >&2
  exit 1
}

if [[ "${FUZZ_SMOKE_CARGO_FUZZ:-0}" == 1 ]]; then
  cargo +nightly fuzz build
  for t in "${targets[@]}"; do
    mkdir -p "$work/corpus/$t"
    log="$work/$t.log"
    cargo +nightly fuzz run "$t" "$work/corpus/$t" -- "${libfuzzer_args[@]}" >"$log" 2>&1 ||
      fail "$t" "$log"
    report "$t" "$log"
  done
  exit 0
fi

triple="$(rustc -vV | sed -n 's/^host: //p')"
flags="-Cpasses=sancov-module"
flags+=" -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
flags+=" -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares"
flags+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0"
flags+=" --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
if [[ "$triple" == *-linux-* ]]; then
  flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth"
fi
# --target keeps these flags off build scripts and proc macros, as cargo-fuzz does; an explicit
# --target-dir keeps the binaries in fuzz/target whatever CARGO_TARGET_DIR says.
bins=()
for t in "${targets[@]}"; do bins+=(--bin "$t"); done
RUSTFLAGS="$flags ${RUSTFLAGS:-}" cargo build --release --manifest-path Cargo.toml \
  --target "$triple" --target-dir target --config 'profile.release.debug="line-tables-only"' \
  "${bins[@]}"

for t in "${targets[@]}"; do
  mkdir -p "$work/corpus/$t" "artifacts/$t"
  log="$work/$t.log"
  "target/$triple/release/$t" "${libfuzzer_args[@]}" -artifact_prefix="$PWD/artifacts/$t/" \
    "$work/corpus/$t" >"$log" 2>&1 || fail "$t" "$log"
  report "$t" "$log"
done
