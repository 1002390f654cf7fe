#!/usr/bin/env bash
# The README's test command. On a fresh Debian 12 machine as root it installs what is missing (by package
# name), builds the release and the ASan+UBSan configurations, fuzzes the frame parser for a minute, and runs
# every test in both builds. The last lines are ctest's summary of the release run.
#
# Environment: UROCE_FUZZ_SECONDS (default 60), UROCE_ASAN_SIM_MESSAGES (default 1000: the sanitizer build
# runs the 10,000-message simulation cases at this size to stay within CI time).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
jobs=$(nproc)

echo "== build: release and asan"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"

echo "== fuzz: frame parser under ASan+UBSan"
bash scripts/fuzz.sh "${UROCE_FUZZ_SECONDS:-60}"

echo "== tests: asan build"
# The preload shim is not instrumented and is loaded before the ASan runtime: tell ASan that is fine.
(cd build/asan && ASAN_OPTIONS=verify_asan_link_order=0 UROCE_SIM_MESSAGES="${UROCE_ASAN_SIM_MESSAGES:-1000}" \
  ctest -j "$jobs" --output-on-failure)

echo "== tests: release build"
(cd build/release && ctest -j "$jobs" --output-on-failure)
