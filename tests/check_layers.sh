#!/usr/bin/env bash
# Layer rules (DESIGN.md), by grep; the build enforces both too (uroce_pure_layer and uroce_layer in the top
# CMakeLists.txt, whose table of allowed folders must match the one below; layer_rules_build).
#   1. transport/, cc/, fabric/ and sim/ include neither DPDK nor libibverbs/librdmacm headers.
#   2. Project includes go downwards only:
#        cc/        -> cc/
#        transport/ -> transport/, cc/
#        fabric/    -> fabric/, transport/, cc/
#        sim/       -> sim/, fabric/, transport/, cc/
#        runtime/   -> runtime/
#        pmd_glue/  -> pmd_glue/, transport/, cc/, runtime/
#        provider/  -> provider/, pmd_glue/, fabric/, transport/, cc/, runtime/
#        tools/     -> tools/ and everything below it (not provider/)
#   3. The tools' own folders do not include each other both ways.
set -u
root=${1:-.}
bad=0
for d in transport cc fabric sim runtime pmd_glue provider tools; do
  # A moved or renamed folder must not pass as a folder with no violations.
  [ -d "$root/$d" ] || { echo "layer rule check: $root/$d is missing (moved? update this script)"; bad=1; continue; }
  [ -n "$(find "$root/$d" -name '*.cc' -o -name '*.h' | head -1)" ] || { echo "no sources under $root/$d"; bad=1; continue; }
done
for d in transport cc fabric sim; do
  hits=$(grep -rnE '#\s*include\s*[<"](rte_[^>"]*|infiniband/[^>"]*|rdma/[^>"]*|dpdk/[^>"]*)[>"]' "$root/$d")
  if [ -n "$hits" ]; then
    echo "layer rule broken: $d/ must not include DPDK or libibverbs headers:"
    echo "$hits"
    bad=1
  fi
done
allowed() {
  case $1 in
    cc) echo "cc" ;;
    transport) echo "transport cc" ;;
    fabric) echo "fabric transport cc" ;;
    sim) echo "sim fabric transport cc" ;;
    runtime) echo "runtime" ;;
    pmd_glue) echo "pmd_glue transport cc runtime" ;;
    provider) echo "provider pmd_glue fabric transport cc runtime" ;;
    tools) echo "tools sim fabric pmd_glue transport cc runtime" ;;
  esac
}
for d in cc transport fabric sim runtime pmd_glue provider tools; do
  ok=$(allowed $d)
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    top=$(sed -E 's/.*#\s*include\s*"([^/"]+)\/.*/\1/' <<<"$line")
    case " $ok " in *" $top "*) ;; *)
      case $top in cc|transport|fabric|sim|runtime|pmd_glue|provider|tools)
        echo "layer rule broken: $d/ may include only $ok: $line"; bad=1 ;;
      esac ;;
    esac
  done < <(grep -rnE '#\s*include\s*"[a-z_]+/' "$root/$d" --include='*.cc' --include='*.h')
done
# 3. No include loop between the tools' folders (tools/uroce, tools/uroced, tools/exp, tools/observe): what
#    two of them share lives in one of them, or below in runtime/.
for a in "$root"/tools/*/; do
  for b in "$root"/tools/*/; do
    [ "$a" \< "$b" ] || continue
    an=$(basename "$a") bn=$(basename "$b")
    if grep -rqE "#\s*include\s*\"tools/$bn/" "$a" && grep -rqE "#\s*include\s*\"tools/$an/" "$b"; then
      echo "layer rule broken: tools/$an and tools/$bn include each other:"
      grep -rnE "#\s*include\s*\"tools/($an|$bn)/" "$a" "$b" | grep -vE "^$a[^:]*:.*tools/$an/|^$b[^:]*:.*tools/$bn/"
      bad=1
    fi
  done
done
[ $bad = 0 ] && echo "layer rules hold: no vendor header in transport/, cc/, fabric/ or sim/, project includes go downwards only"
exit $bad
