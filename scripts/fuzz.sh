#!/usr/bin/env bash
# Builds the libFuzzer targets (`fuzz` preset: clang, ASan + UBSan), seeds a scratch corpus with one frame per
# opcode x IPv4/IPv6 x VLAN, and fuzzes parse_frame for SECONDS (default 60) on one core.
# Exits non-zero if the fuzzer finds a crash; the input is kept under build/fuzz/artifacts/.
#
# Usage: scripts/fuzz.sh [SECONDS]
# Reproduce a crash: build/fuzz/tests/fuzz/fuzz_parse_frame build/fuzz/artifacts/crash-...
set -euo pipefail

secs=${1:-60}
[[ $secs =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS]" >&2; exit 2; }
cd "$(dirname "$0")/.."

out=build/fuzz
mkdir -p "$out"
if ! { cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_parse_frame make_seeds; } \
  >"$out/build.log" 2>&1; then
  cat "$out/build.log" >&2
  echo "fuzz.sh: build failed" >&2
  exit 1
fi

corpus=$out/corpus/parse_frame  # scratch: grows across runs, never committed (build/ is ignored)
artifacts=$out/artifacts
log=$out/fuzz_parse_frame.log
mkdir -p "$corpus" "$artifacts"
"$out/tests/fuzz/make_seeds" "$corpus" >/dev/null

# Value profiling lets the fuzzer steer inputs towards the IPv4 checksum and the ICRC the parser compares.
rc=0
"$out/tests/fuzz/fuzz_parse_frame" -max_len=4200 -max_total_time="$secs" -timeout=10 -use_value_profile=1 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || rc=$?

stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
corp=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")
if ((rc == 0)); then
  echo "fuzz_parse_frame: OK, $(stat number_of_executed_units) execs in ${secs}s" \
    "($(stat average_exec_per_sec)/s), cov $cov, ft $ft, corpus $corp inputs, no crash (log: $log)"
else
  crash=$(sed -n 's/.*Test unit written to \(.*\)/\1/p' "$log" | tail -1)
  echo "fuzz_parse_frame: FAILED (exit $rc) after $(stat number_of_executed_units) execs, cov $cov;" \
    "input: ${crash:-none}; log: $log" >&2
fi
exit $rc
