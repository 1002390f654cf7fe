#!/usr/bin/env bash
# Every environment variable the source reads is in the one table (runtime/env_vars.h) that `uroce env
# --list` prints, and docs/environment.md holds that table as `uroce env --list --markdown` prints it.
# Usage: env_vars_table.sh SOURCE_ROOT UROCE_BINARY
set -u
root=$1
uroce=$2
fail=0

# Names passed as string literals to getenv() and to the wrappers around it (env(), env_or_empty(),
# env_uint(), env_flag(), ...): any call whose function name contains "env", except the ones that set a
# variable for a child (setenv, set_env). Tests are left out.
names=$(cd "$root" && grep -rhoE '[A-Za-z_:]*env[A-Za-z_]*\("[A-Z][A-Z0-9_]+"' \
          --include='*.cc' --include='*.h' provider pmd_glue runtime tools cc transport |
        grep -vE '(^|:)(set|unset)_?env' | grep -oE '"[A-Z][A-Z0-9_]+"' | tr -d '"' | sort -u)
count=$(wc -w <<<"$names")
if ((count < 15)); then
  echo "only $count variable names found by the grep: the pattern no longer matches the source"
  exit 1
fi

listed=$("$uroce" env --list | awk '/^[A-Z]/ {print $1}' | sort -u)
if [ -z "$listed" ]; then
  echo "uroce env --list printed no table"
  exit 1
fi
for n in $names; do
  if ! grep -qx "$n" <<<"$listed"; then
    echo "read in the source but missing from runtime/env_vars.h (uroce env --list): $n"
    (cd "$root" && grep -rnE "env[A-Za-z_]*\(\"$n\"" --include='*.cc' --include='*.h' provider pmd_glue runtime tools)
    fail=1
  fi
done

doc=$(sed -n '/^<!-- begin: uroce env --list --markdown -->$/,/^<!-- end -->$/p' "$root/docs/environment.md" |
      sed '1d;$d')
if [ "$doc" != "$("$uroce" env --list --markdown)" ]; then
  echo "docs/environment.md differs from 'uroce env --list --markdown'; regenerate its table:"
  diff <(echo "$doc") <("$uroce" env --list --markdown)
  fail=1
fi
((fail == 0)) && echo "$count variables read in the source, all in the table; docs/environment.md matches"
exit $fail
