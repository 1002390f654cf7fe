#!/usr/bin/env bash
# The man pages render without warnings and, with the bash completion, know every option that
# `uroce CMD --help` and `uroced --help` list; the completion completes commands, options and values.
# Usage: man_completion.sh SOURCE_ROOT UROCE_BINARY UROCED_BINARY
set -u
root=$1
uroce=$2
uroced=$3
fail=0
command -v man >/dev/null || { echo "SKIP: man not installed"; exit 77; }
completion=$root/scripts/completion/uroce.bash

for page in uroce.1 uroced.1; do
  warnings=$(MANWIDTH=100 man --warnings -E UTF-8 -l "$root/docs/man/$page" 2>&1 >/dev/null)
  if [ -n "$warnings" ]; then
    echo "$page: man warns:"
    echo "$warnings"
    fail=1
  fi
  MANWIDTH=100 man -l "$root/docs/man/$page" 2>/dev/null | grep -q '^NAME' || { echo "$page: no NAME section"; fail=1; }
done

# The roff source with its escapes undone (\- is -, \fB.. font changes go).
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$1"; }
# The options a help text lists: the words starting with - at the start of its option lines.
options_of() { grep -E '^ +-' | grep -oE '(^|[ ,])--?[a-z][a-z0-9-]*' | tr -d ' ,' | grep -vx -- '-h' | sort -u; }

check() {  # check WHAT PAGE OPTIONS...
  local what=$1 page=$2 o
  shift 2
  for o in "$@"; do
    grep -qF -- "$o" <(plain "$root/docs/man/$page") || { echo "$page lacks $what option $o"; fail=1; }
    grep -qE -- "(^|[ \"])$o([ \"]|\$)" "$completion" || { echo "completion lacks $what option $o"; fail=1; }
  done
}

n=0
for cmd in setup env run devices stats capture exp; do
  opts=$("$uroce" "$cmd" --help | options_of)
  [ -n "$opts" ] || { echo "uroce $cmd --help lists no option"; fail=1; }
  # shellcheck disable=SC2086
  check "uroce $cmd" uroce.1 $opts
  n=$((n + $(wc -w <<<"$opts")))
done
opts=$("$uroced" --help | options_of)
# shellcheck disable=SC2086
check uroced uroced.1 $opts
n=$((n + $(wc -w <<<"$opts")))

# The completion itself, as bash calls it.
complete_words() {  # complete_words FUNC WORDS...: COMPREPLY for the last word
  bash -c 'source "$1"; f=$2; shift 2; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); $f
           echo "${COMPREPLY[*]}"' _ "$completion" "$@"
}
expect() {  # expect WANT GOT
  [ "$2" = "$1" ] || { echo "completion: expected '$1', got '$2'"; fail=1; }
}
expect "stats" "$(complete_words _uroce "$uroce" st)"
expect "--cc --cc-param" "$(complete_words _uroce "$uroce" run --c)"
expect "dcqcn dctcp" "$(complete_words _uroce "$uroce" run --cc dc)"
expect "uroce2" "$(complete_words _uroce "$uroce" stats --dev uroce2)"
expect "incast" "$(complete_words _uroce "$uroce" exp inc)"
expect "--version" "$(complete_words _uroced "$uroced" --vers)"
got=$(complete_words _uroce "$uroce" run --dev uroce1 -- bas)
grep -qw bash <<<"$got" || { echo "completion: 'uroce run -- bas' did not offer bash: $got"; fail=1; }

((fail == 0)) && echo "man pages render cleanly; $n options of uroce and uroced in both pages and the completion"
exit $fail
