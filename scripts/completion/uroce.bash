# bash completion for uroce and uroced (installed as share/bash-completion/completions/uroce and .../uroced).
# Self-contained: compgen only, no helper from the bash-completion package.

_uroce() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmds="setup env run devices stats capture exp help"
  local cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -*) ;;
      *) cmd=${COMP_WORDS[i]}; break ;;
    esac
  done
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
    return
  fi
  # After `run ... --` (or CMD): complete the command, then leave its arguments to files.
  if [[ $cmd == run ]]; then
    for ((j = i + 1; j < COMP_CWORD; j++)); do
      if [[ ${COMP_WORDS[j]} == -- ]]; then
        if ((j + 1 == COMP_CWORD)); then
          COMPREPLY=($(compgen -c -- "$cur"))
        else
          COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
      fi
    done
  fi
  case $prev in
    --dev) COMPREPLY=($(compgen -W "uroce0 uroce1 uroce2 uroce3" -- "$cur")); return ;;
    --cc) COMPREPLY=($(compgen -W "none dcqcn timely hpcc swift dctcp example_aimd" -- "$cur")); return ;;
    --mtu) COMPREPLY=($(compgen -W "256 512 1024 2048 4096" -- "$cur")); return ;;
    --port) COMPREPLY=($(compgen -W "uroced loopback memif: af_packet:iface= tap:iface=" -- "$cur")); return ;;
    --netdev) COMPREPLY=($(compgen -W "$(ls /sys/class/net 2>/dev/null)" -- "$cur")); return ;;
    -w | --out) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --ip | --pid | --watch | -c | --duration | -s | --snaplen | --seed | --duration-us | --cc-param) return ;;
  esac
  local opts
  case $cmd in
    setup | devices) opts="--help" ;;
    help) opts=$cmds ;;
    env) opts="--dev --ip --list --markdown --help" ;;
    run) opts="--dev --ip --port --netdev --xdp --cc --cc-param --mtu --help --" ;;
    stats) opts="--pid --dev --json --all --watch --help" ;;
    capture) opts="--pid --dev -w --force -c --duration -s --snaplen --help" ;;
    exp)
      if [[ " ${COMP_WORDS[*]} " == *" --realtime "* ]]; then
        # `uroce exp --realtime --list` names its scenarios at the start of two-space indented lines.
        opts="--list --out --duration --cc --no-plots --help"
        [[ $cur != -* ]] && opts="$opts $("${COMP_WORDS[0]}" exp --realtime --list 2>/dev/null |
          awk '/^  [a-z]/ {print $1}')"
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
      fi
      opts="--list --out --seed --duration-us --cc --no-plots --ns3 --realtime --help gen-flows gen-topo"
      # The scenarios, as `uroce exp --list` names them ("NAME (default N us)" lines).
      [[ $cur != -* ]] && opts="$opts $("${COMP_WORDS[0]}" exp --list 2>/dev/null |
        awk '/^[a-z0-9_]+ \(default/ {print $1}')"
      ;;
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}

_uroced() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  case $prev in
    --config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --pause | --ecn | --credit) COMPREPLY=($(compgen -W "off" -- "$cur")); return ;;
    --pfc) COMPREPLY=($(compgen -W "on off" -- "$cur")); return ;;
    --idle-exit | --uplink | --subnet | --max-clients | --seed | --rate | --burst | --buffer | --loss | \
      --pfc-watchdog-us) return ;;
  esac
  COMPREPLY=($(compgen -W "--daemon --foreground --config --idle-exit --uplink --subnet --max-clients --seed
                           --credit --pfc-watchdog-us --rate --burst --buffer --pause --pfc --ecn --loss --stats
                           --stop --set --version --help" \
                 -- "$cur"))
}

complete -F _uroce uroce
complete -F _uroced uroced
