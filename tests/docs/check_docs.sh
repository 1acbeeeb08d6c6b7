#!/usr/bin/env bash
# The bash completion and the man page generated from the built binary's --help
# (scripts/gen-completion, scripts/gen-man) as a user meets them: bash completes commands,
# subcommands, flags and flag values the binary has; the man page names every command and renders.
#   tests/docs/check_docs.sh GPUTRIAGE_BINARY WORK_DIR
# Exit 77 (skipped) when help2man is missing for the man page part and the completion passed.
set -euo pipefail
bin=$1 work=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
fail=0
"$src/scripts/gen-completion" "$bin" "$work/gputriage.bash"

# complete_words WORDS...: what bash offers for the last word of "gputriage WORDS...", sorted
complete_words() {
  bash -c '
    source "$1"; shift
    COMP_WORDS=(gputriage "$@"); COMP_CWORD=$#; COMP_LINE="gputriage $*"; COMP_POINT=${#COMP_LINE}
    _gputriage gputriage "${COMP_WORDS[$COMP_CWORD]}" "${COMP_WORDS[$((COMP_CWORD-1))]}"
    printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$work/gputriage.bash" "$@"
}
# expect WANTED WORDS...: WANTED (space-separated, sorted) is exactly what bash offers
expect() {
  local want=$1
  shift
  local got
  got=$(complete_words "$@" | tr '\n' ' ' | sed 's/ *$//')
  if [ "$got" != "$want" ]; then
    echo "completion of 'gputriage $*': got '$got', want '$want'" >&2
    fail=1
  fi
}
expect "capture" ca
expect "pack prune" bundles p
expect "--telemetry-period" run --tele
expect "always auto never" doctor --color ""
expect "default nagios npd" doctor --exit-codes ""

if ! command -v help2man >/dev/null; then
  echo "help2man is not installed (scripts/install-deps --package): the man page is not checked" >&2
  [ "$fail" = 0 ] && exit 77
  exit 1
fi
"$src/scripts/gen-man" "$bin" "$work/gputriage.1"
sed 's/\\-/-/g' "$work/gputriage.1" >"$work/gputriage.1.txt"  # roff writes - as \-
for word in doctor snapshot run capture analyze report inspect libs validate bundles kb --telemetry-period; do
  if ! grep -q -- "$word" "$work/gputriage.1.txt"; then
    echo "man page: '$word' is not in it" >&2
    fail=1
  fi
done
if command -v man >/dev/null; then
  rendered=$(MANWIDTH=100 man -l "$work/gputriage.1" 2>&1 | col -b 2>/dev/null || true)
  case "$rendered" in
    *"gputriage capture"*) ;;
    *) echo "man -l: the rendered page lacks 'gputriage capture'" >&2; fail=1 ;;
  esac
fi
exit "$fail"
