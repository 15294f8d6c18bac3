#!/bin/sh
# A scripted approver for the headless demo (`--approver command:demo/approver.sh`). airlock
# sends one JSON object on stdin; printing `allow` (exit 0) approves, anything else denies.
# This one approves the demo's write of utils.py and its test command, and nothing else.
request=$(cat)
has() { case $request in *"$1"*) return 0 ;; esac; return 1; }
if has '"tool":"write"' && has '/utils.py"'; then
  echo allow
elif has '"tool":"bash"' && has '"command":"python3 -B -m unittest -q test_utils"'; then
  echo allow
else
  echo deny
fi
