#!/usr/bin/env python3
"""Which `VMFuncRef`s the instances in a running host have written, and on how many pages.

    scripts/func-refs.py PID [--names]

Reads the host's memory (`/proc/PID/mem`; needs root or ptrace rights over it) while it runs.
wasmtime 48 keeps one 32-byte `VMFuncRef` per function a module's imports, exports and table
name in each instance's `VMContext` (array_call, wasm_call, type index, vmctx), and writes one
when it is first used. A written one is found as a record whose two code pointers lie in a
module's mapped `.text` (a `.cwasm` of the cache) and whose `vmctx` pointer lies within
64 KiB before the record; an unwritten one holds whatever the allocation held. Per module it
prints the instances found, the func refs each has written and the 4 KiB pages they lie on;
with `--names`, the functions written (named by the `.cwasm`'s symbol table) and how many
instances wrote each. A diagnostic for a measurement of the book's levers page ("The func refs an idle instance
writes, placed together"), not part of any test.
"""
import bisect
import collections
import re
import struct
import subprocess
import sys

VMCTX_REACH = 64 * 1024
TEXT_FILE_OFFSET = 0x1000  # where wasmtime places `.text` in a `.cwasm`


def mappings(pid):
    for line in open(f"/proc/{pid}/maps"):
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        yield start, end, fields[1], int(fields[2], 16), fields[5] if len(fields) > 5 else ""


def symbols(path):
    """(offset in .text, size, name) of the module's functions, sorted."""
    out = subprocess.run(["readelf", "-sW", path], capture_output=True, text=True, check=True)
    found = []
    for line in out.stdout.splitlines():
        m = re.match(r"\s*\d+: ([0-9a-f]+)\s+(\d+) FUNC\s+\S+\s+\S+\s+\S+ (.*)", line)
        if m:
            found.append((int(m.group(1), 16), int(m.group(2)), m.group(3)))
    return sorted(found)


def main():
    pid = int(sys.argv[1])
    names = "--names" in sys.argv[2:]
    maps = list(mappings(pid))
    texts = [(s, e, off, path) for s, e, perm, off, path in maps
             if path.endswith(".cwasm") and "x" in perm]
    if not texts:
        sys.exit("no module code is mapped (no instance resident?)")

    def text_of(addr):
        for s, e, off, path in texts:
            if s <= addr < e:
                return path, addr - s + off - TEXT_FILE_OFFSET
        return None

    lowest = min(s for s, _, _, _ in texts)
    highest = max(e for _, e, _, _ in texts)
    mem = open(f"/proc/{pid}/mem", "rb")
    written = collections.defaultdict(dict)  # vmctx -> {record address: (module, text offset)}
    for start, end, perm, _, path in maps:
        if "rw" not in perm or path not in ("", "[heap]"):
            continue
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except OSError:
            continue
        words = struct.unpack(f"<{len(data) // 8}Q", data[: len(data) // 8 * 8])
        for i in range(len(words) - 3):
            array_call, wasm_call, vmctx = words[i], words[i + 1], words[i + 3]
            if not (lowest <= wasm_call < highest and lowest <= array_call < highest):
                continue
            code = text_of(wasm_call)
            if code is None or text_of(array_call) is None:
                continue
            addr = start + 8 * i
            if addr - VMCTX_REACH < vmctx <= addr:
                written[vmctx][addr] = code

    per_module = collections.defaultdict(list)
    for vmctx, records in written.items():
        module = next(iter(records.values()))[0]
        per_module[module].append(records)
    for module, instances in per_module.items():
        counts = sorted(len(r) for r in instances)
        pages = sorted(len({a >> 12 for a in r}) for r in instances)
        print(f"{module}: {len(instances)} instances; func refs written: "
              f"min {counts[0]}, median {counts[len(counts) // 2]}, max {counts[-1]}; "
              f"on pages: min {pages[0]}, median {pages[len(pages) // 2]}, max {pages[-1]}")
        if names:
            table = symbols(module)
            starts = [start for start, _, _ in table]
            seen = collections.Counter()
            for records in instances:
                seen.update(offset for _, offset in records.values())
            for offset, count in seen.most_common():
                i = bisect.bisect_right(starts, offset) - 1
                start, size, name = table[i] if i >= 0 else (0, 0, "?")
                print(f"  {count:4}  {name if offset < start + size else '?'}")


if __name__ == "__main__":
    main()
