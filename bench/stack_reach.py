#!/usr/bin/env python3
"""bench/stack_reach.py TRACE...: the fraction of allocations whose backtrace
reaches an entry of the program (issue 26's measure of the default depth).

A backtrace reaches an entry when its outermost frame is one: the return
address inside the executable's or the dynamic loader's entry code (`_start`,
told by the ELF header's entry address, so stripped programs count too), or
a thread's root (`clone`/`clone3`/`start_thread`, by the resolved name). A
backtrace cut by the depth limit ends anywhere else. The trace is read after
`alloctrace-postproc -c -r` (grouped, resolved); calls that returned no
block (free, failed allocations) are not counted.
"""
import re
import subprocess
import sys

ENTRY_WINDOW = 0x100   # _start's call of __libc_start_main is near its top

def entry_of(path, cache={}):
    if path not in cache:
        try:
            out = subprocess.run(["readelf", "-h", path], capture_output=True,
                                 text=True).stdout
            m = re.search(r"Entry point address:\s+0x([0-9a-f]+)", out)
            cache[path] = int(m.group(1), 16) if m else None
        except OSError:
            cache[path] = None
    return cache[path]

def reach(path):
    maps = []          # (start, end, path)
    allocs = reached = 0
    calls = 0          # allocation calls of the current group
    frames = []
    in_frames = False
    alloc_re = re.compile(r"^\d+\. .*\) = 0x[0-9a-f]*[1-9a-f]")
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(": ") and " => 0x" in line:
                mod, rng = line[2:].rstrip("\n").rsplit(" => ", 1)
                s, e = rng.split("-")
                maps.append((int(s, 16), int(e, 16), mod))
                continue
            if line.startswith("\t") and line[1:3] == "0x":
                frames.append(line[1:].rstrip("\n"))
                in_frames = True
                continue
            if line == "\n":
                if calls:
                    allocs += calls
                    if frames and is_entry(frames[-1], maps):
                        reached += calls
                calls, frames, in_frames = 0, [], False
                continue
            if alloc_re.match(line):
                calls += 1
    return allocs, reached

def is_entry(frame, maps):
    addr = int(frame.split()[0], 16)
    text = frame.split(None, 1)[1] if " " in frame else ""
    if re.search(r"\b(clone3?|__clone|start_thread|_start|__libc_start_main)\(", text):
        return True
    for s, e, mod in maps:
        if s <= addr < e:
            ent = entry_of(mod)
            return ent is not None and 0 <= addr - s - ent < ENTRY_WINDOW
    return False

if __name__ == "__main__":
    for t in sys.argv[1:]:
        a, r = reach(t)
        print("%s: %d allocations, %d reach an entry (%.1f%%)" %
              (t, a, r, 100.0 * r / a if a else 0))
