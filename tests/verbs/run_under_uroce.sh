#!/usr/bin/env bash
# run_under_uroce.sh UROCE PROGRAM [ARGS...]
# Runs a verbs test program the way a user does: through `uroce run`, so the system's libibverbs finds the
# uroce provider. As root it runs `uroce setup` first (idempotent); without the device nodes and not root it
# skips (exit 77) with the instruction. The per-user sysfs tree goes to a scratch runtime dir.
set -u
uroce=$1
shift
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
XDG_RUNTIME_DIR=$(mktemp -d)
export XDG_RUNTIME_DIR
trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT
# Under a sanitizer build the preloaded shim precedes the ASan runtime in the library list: allow it.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
# The verbs tests talk between contexts of one process: the in-process loopback port, no host switch.
export UROCE_PORT=${UROCE_PORT:-loopback}
exec "$uroce" run -- "$@"
