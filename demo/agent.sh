#!/bin/sh
# The demo agent: a scripted stand-in for a model-driven agent. It runs as airlock's confined
# worker and reaches files only through the broker (`airlock tool …`), reporting each step.
set -u

step() {
  name=$1
  shift
  out=$("$@" 2>&1)
  status=$?
  case $status in
    0) verdict="done" ;;
    3) verdict="refused by policy" ;;
    4) verdict="refused: sandbox unavailable" ;;
    *) verdict="failed (exit $status)" ;;
  esac
  printf '\n== %s: %s\n%s\n' "$name" "$verdict" "$out" | cut -c1-400
}

echo "demo agent: session $AIRLOCK_SESSION, talking to the broker on descriptor $AIRLOCK_FD"
step "list the workspace" airlock tool ls .
step "read utils.py" airlock tool read utils.py
step "read a file outside the workspace (/etc/hostname)" airlock tool read /etc/hostname
step "write directly, bypassing the broker" sh -c 'echo hacked > utils.py'
echo
echo "demo agent: finished"
