#!/usr/bin/env bash
# check_timeouts.sh BUILD_DIR
# Every ctest entry of the build tree has a TIMEOUT property, so a hung test fails on its own instead of
# holding the suite until ctest's 1500 s default. Lists the entries without one.
set -u
build=$1
json=$(cd "$build" && ctest --show-only=json-v1 2>/dev/null) || { echo "FAIL: ctest --show-only failed"; exit 1; }
/usr/bin/python3 -c '
import json, sys
tests = json.loads(sys.stdin.read())["tests"]
missing = [t["name"] for t in tests
           if not any(p["name"] == "TIMEOUT" and float(p["value"]) > 0 for p in t.get("properties", []))]
print(f"{len(tests)} ctest entries, {len(missing)} without a TIMEOUT")
for name in missing:
    print("  no TIMEOUT:", name)
sys.exit(1 if missing or not tests else 0)
' <<<"$json"
