#!/bin/sh
# A scripted approver for the headless demo (`--approver command:demo/approver.sh`). airlock
# sends one JSON object on stdin; printing `allow` (exit 0) approves, anything else denies.
# This one approves the demo's write of utils.py and its test command, and nothing else.
request=$(cat)
case $request in
  *'"tool":"write"'*'/utils.py"'*) echo allow ;;
  *'"tool":"bash"'*'unittest'*) echo allow ;;
  *) echo deny ;;
esac
