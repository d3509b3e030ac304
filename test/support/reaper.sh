#!/usr/bin/env bash
# Reaps what a test process started once that process is gone, however it died:
# the kernel closes our stdin when the last writer (the test process) exits.
# Lines: "pid N" / "gone N" (a process group to kill), "mark D" / "unmark D"
# (kill processes whose command line names D), "dir D" / "undir D" (the same,
# then remove D), "done" (all reaped already: exit quietly).
declare -A pids=() marks=() dirs=()
while read -r kind value; do
  case $kind in
    pid) pids[$value]=1 ;;
    gone) unset "pids[$value]" ;;
    dir) dirs[$value]=1 ;;
    undir) unset "dirs[$value]" ;;
    mark) marks[$value]=1 ;;
    unmark) unset "marks[$value]" ;;
    done) exit 0 ;;
  esac
done
for pid in "${!pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null; done
(( ${#dirs[@]} + ${#marks[@]} )) || exit 0
# Patterns from a file, so grep's own command line does not match them.
patterns=$(mktemp)
# An empty pattern would match every process: only absolute paths are kept.
for mark in "${!dirs[@]}" "${!marks[@]}"; do [[ $mark == /?* ]] && printf '%s\n' "$mark"; done >"$patterns"
[[ -s $patterns ]] || { rm -f "$patterns"; exit 0; }
for file in $(grep -laFf "$patterns" /proc/[0-9]*/cmdline 2>/dev/null); do
  pid=${file#/proc/}; pid=${pid%/cmdline}
  [[ $pid != "$$" ]] && kill -KILL "$pid" 2>/dev/null
done
rm -f "$patterns"
for dir in "${!dirs[@]}"; do rm -rf -- "$dir"; done
