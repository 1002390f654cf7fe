#!/usr/bin/env bash
# cm_ports.sh UROCE UROCED
# The host's RDMA CM port spaces through uroced's control socket: two lease holders (two processes) cannot
# bind the same TCP-space port on loopback, a lookup of 127.0.0.1:PORT names the listener's lease address,
# port 0 gets an ephemeral port, a leaseholder's forked child binds with its parent's lease, requests from a
# process without a lease (or a leaseholding parent) are refused, and a process's ports go with it.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir UROCED_CONFIG=$dir/uroced.conf
: >"$UROCED_CONFIG"
trap 'kill $pa $pb 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "== uroced log"; cat "$dir"/uroce-*/uroced.log 2>/dev/null; exit 1; }
"$uroced" --daemon >/dev/null 2>&1 || fail "uroced --daemon"
sock=$(ls "$dir"/uroce-*/uroced.sock) || fail "no control socket"

# A lease holder: leases an address, then answers each line written to its fifo with uroced's reply (each
# request on a new connection, from this same process, as a provider does).
holder() {  # NAME
  mkfifo "$dir/$1.in"
  /usr/bin/python3 -u - "$sock" "$dir/$1.in" >"$dir/$1.out" <<'PY' &
import os, socket, sys
def ask(line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1]); s.sendall((line + "\n").encode())
    out = b""
    while True:
        b = s.recv(4096)
        if not b: break
        out += b
    return out.decode().strip()
print(ask("lease"), flush=True)
with open(sys.argv[2]) as f:
    for line in f:
        line = line.strip()
        if line.startswith("child "):  # from a forked child of the leaseholder, as a forking server asks
            pid = os.fork()
            if pid == 0:
                print(ask(line[6:]), flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
        else:
            print(ask(line), flush=True)
PY
}
# ask NAME LINE: the holder's reply to LINE
ask() {
  local n before
  before=$(wc -l <"$dir/$1.out")
  echo "$2" >&"${fds[$1]}"
  for _ in $(seq 100); do n=$(wc -l <"$dir/$1.out"); [ "$n" -gt "$before" ] && break; sleep 0.05; done
  tail -1 "$dir/$1.out"
}
declare -A fds
holder a; pa=$!; exec {fa}>"$dir/a.in"; fds[a]=$fa
holder b; pb=$!; exec {fb}>"$dir/b.in"; fds[b]=$fb
for n in a b; do
  for _ in $(seq 100); do grep -q '^ok ip=' "$dir/$n.out" 2>/dev/null && break; sleep 0.05; done
  grep -q '^ok ip=' "$dir/$n.out" || fail "holder $n got no lease: $(cat "$dir/$n.out")"
done
ipa=$(sed -n '1s/^ok ip=\([^ ]*\).*/\1/p' "$dir/a.out")
echo "holder a has $ipa, holder b has $(sed -n '1s/^ok ip=\([^ ]*\).*/\1/p' "$dir/b.out")"

r=$(ask a "cm bind 0x106 127.0.0.1 7174"); [ "$r" = "ok port=7174" ] || fail "a: bind 7174: $r"
r=$(ask b "cm bind 0x106 0.0.0.0 7174"); case $r in "error errno=98 "*) ;; *) fail "b: bind 7174 again: $r";; esac
r=$(ask b "cm lookup 0x106 127.0.0.1 7174"); case $r in "error errno=111 "*) ;; *) fail "lookup before listen: $r";; esac
r=$(ask a "cm listen 0x106 127.0.0.1 7174"); [ "$r" = ok ] || fail "a: listen: $r"
r=$(ask b "cm lookup 0x106 127.0.0.9 7174"); [ "$r" = "ok ip=$ipa pid=$pa" ] || fail "lookup: $r"
r=$(ask b "cm bind 0x111 127.0.0.1 7174"); [ "$r" = "ok port=7174" ] || fail "b: UDP space is another: $r"
r=$(ask b "cm bind 0x106 0.0.0.0 0")
port=${r#ok port=}
[ "$port" != "$r" ] && [ "$port" -gt 1023 ] || fail "ephemeral bind: $r"
r=$(ask b "cm bind 0x106 $ipa 9000"); case $r in "error errno=99 "*) ;; *) fail "bind to a's address: $r";; esac
r=$(ask a "child cm bind 0x106 0.0.0.0 7300"); [ "$r" = "ok port=7300" ] || fail "a's forked child could not bind with a's lease: $r"
r=$(/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"cm bind 0x106 127.0.0.1 7301\n")
print(s.recv(4096).decode().strip())' "$sock")
case $r in "error errno=1 "*) ;; *) fail "a process without a lease bound a port: $r";; esac
echo "binds, conflicts, lookup and ephemeral ports as expected (b got ephemeral port $port)"

# a exits: its listener and binding go with its lease.
exec {fa}>&-
kill $pa; wait $pa 2>/dev/null
for _ in $(seq 100); do
  r=$(ask b "cm lookup 0x106 127.0.0.1 7174"); case $r in "error errno=111 "*) break;; esac; sleep 0.05
done
case $r in "error errno=111 "*) ;; *) fail "a's listener outlived it: $r";; esac
r=$(ask b "cm bind 0x106 127.0.0.1 7174"); [ "$r" = "ok port=7174" ] || fail "7174 not free after a exited: $r"
echo "PASS"
