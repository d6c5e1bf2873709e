#!/usr/bin/env bash
# drgn at scale (issue 32 item 3): a dump of Debian's 6.1 cloud kernel with
# 4 GiB of memory and 5,000 sleeping tasks, kdump-compressed, opened and
# run through crash's `ps`, `bt -a` and `log` three ways:
#   dwarf   drgn 0.3 with Debian's DWARF vmlinux (the peer);
#   plugin  drgn 0.3 with only btfkit-drgn (python/; BTFKIT_DRGN_BTF the
#           BTF of `btfkit encode --vars all`, no DWARF);
#   inspect `btfkit inspect DUMP --btf VARS ps 'bt -a' log`.
# Each round runs the three under GNU time (wall s, peak RSS KiB, user +
# system CPU s: steadier than wall on a loaded machine) after a warm-up
# round; the ratios (plugin/dwarf, inspect/dwarf) are the medians of
# per-round ratios. `bt -a` is each CPU's active task in all three
# (crash's meaning; `btfkit inspect` took it for every task before 01558e0).
#
# The dump is made once and cached in <cache>/dumps/scale-<version>-<GEN>:
# QEMU (TCG, 2 CPUs, 4 GiB, -device vmcoreinfo, a busybox initramfs that
# loads qemu_fw_cfg for VMCOREINFO and starts the sleeps) is stopped and
# dumped as ELF through QMP, and `makedumpfile -c -d 31` makes the
# kdump-compressed file (drgn 0.3's libkdumpfile does not open QEMU's own
# kdump format: its header has no utsname but the machine, see
# docs/inspect-and-drgn.md, "Which dumps drgn opens").
#
# Usage: bench/drgn-scale.sh     (RUNS=3 rounds; TASKS=5000; needs QEMU,
# busybox-static, makedumpfile, drgn, btfkit-drgn installed
# (scripts/python-test.sh), GNU time, and Debian's kernel in the cache:
# scripts/fetch-debian-kernel.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

GEN=scale-1
runs=${RUNS:-3}
tasks=${TASKS:-5000}
cache=${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}
vmlinux=$cache/vmlinux
version=$(cat "$cache/VERSION")
dir=$cache/dumps/scale-$version-$GEN-$tasks
dump=$dir/vmcore.mdf-zlib-d31
for t in qemu-system-x86_64 makedumpfile cpio /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install qemu-system-x86 makedumpfile cpio time)" >&2; exit 1; }
done
cargo build --release -q -p btfkit
btfkit="${CARGO_TARGET_DIR:-target}/release/btfkit"
tmp=$(mktemp -d)
qemu_pid=
cleanup() {
  if [ -n "$qemu_pid" ]; then kill "$qemu_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

make_dump() {
  local root=$tmp/root
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,lib/modules}
  cp /bin/busybox "$root/bin/busybox"
  cp "$cache/image-modules/kernel/drivers/firmware/qemu_fw_cfg.ko" "$root/lib/modules/"
  cat > "$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
insmod /lib/modules/qemu_fw_cfg.ko
i=0
while [ \$i -lt $tasks ]; do sleep 1000000 & i=\$((i + 1)); done
echo "BTFKIT-SCALE ready \$(ls -d /proc/[0-9]* | wc -l) tasks"
exec sleep 1000000
EOF
  chmod 755 "$root/init"
  (cd "$root" && find . | cpio -o -H newc --quiet) > "$tmp/initrd.cpio"
  nice -n 10 qemu-system-x86_64 -accel tcg -nodefaults -display none -no-reboot \
    -m 4096 -smp 2 -device vmcoreinfo \
    -kernel "$cache/vmlinuz" -initrd "$tmp/initrd.cpio" \
    -append "console=ttyS0 panic=-1" \
    -serial "file:$tmp/console.txt" -qmp "unix:$tmp/qmp,server=on,wait=off" &
  qemu_pid=$!
  local waited=0
  until grep -q 'BTFKIT-SCALE ready' "$tmp/console.txt" 2>/dev/null; do
    sleep 5
    waited=$((waited + 5))
    if [ "$waited" -gt 3600 ] || ! kill -0 "$qemu_pid" 2>/dev/null; then
      echo "the guest did not get ready:" >&2
      tail -20 "$tmp/console.txt" >&2
      exit 1
    fi
  done
  grep 'BTFKIT-SCALE ready' "$tmp/console.txt"
  mkdir -p "$dir"
  # Stop the CPUs, write the ELF dump, end the machine.
  python3 - "$tmp/qmp" "$tmp/vmcore.elf" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()
def qmp(cmd, **args):
    f.write(json.dumps({"execute": cmd, "arguments": args}) + "\n")
    f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r:
            return r
        if "error" in r:
            sys.exit(f"QMP {cmd}: {r['error']}")
qmp("qmp_capabilities")
qmp("stop")
qmp("dump-guest-memory", paging=False, protocol="file:" + sys.argv[2])
qmp("quit")
PY
  wait "$qemu_pid" || true
  qemu_pid=
  cp "$tmp/console.txt" "$dir/console.txt"
  # makedumpfile (1.7) reads the program headers as if they followed the ELF
  # header; QEMU writes the section headers first (as
  # crates/testkit/src/dumps.rs's program_headers_first does).
  python3 - "$tmp/vmcore.elf" "$tmp/vmcore.phfirst" <<'PY'
import shutil, struct, sys
src, dst = open(sys.argv[1], "rb"), open(sys.argv[2], "wb")
eh = bytearray(src.read(64))
phoff, = struct.unpack_from("<Q", eh, 0x20)
phentsize, phnum = struct.unpack_from("<HH", eh, 0x36)
assert phentsize == 56, "not an ELF64 dump"
src.seek(phoff)
ph = bytearray(src.read(56 * phnum))
struct.pack_into("<QQ", eh, 0x20, 64, 0)
struct.pack_into("<H", eh, 0x34, 64)
eh[0x3A:0x40] = bytes(6)
at, moves = 64 + len(ph), []
for i in range(phnum):
    offset, = struct.unpack_from("<Q", ph, 56 * i + 8)
    filesz, = struct.unpack_from("<Q", ph, 56 * i + 32)
    moves.append((offset, filesz))
    struct.pack_into("<Q", ph, 56 * i + 8, at)
    at += filesz
dst.write(eh)
dst.write(ph)
for offset, filesz in moves:
    src.seek(offset)
    left = filesz
    while left:
        b = src.read(min(left, 1 << 24))
        assert b, f"segment at {offset:#x} is short"
        dst.write(b)
        left -= len(b)
PY
  rm "$tmp/vmcore.elf"
  nice -n 10 makedumpfile -c -d 31 "$tmp/vmcore.phfirst" "$tmp/vmcore.part" > /dev/null
  rm "$tmp/vmcore.phfirst"
  mv "$tmp/vmcore.part" "$dump"
}

[ -f "$dump" ] || make_dump
python3 -c 'import drgn, btfkit_drgn' || { echo "missing drgn or btfkit-drgn (bash scripts/python-test.sh installs it)" >&2; exit 1; }
"$btfkit" encode "$vmlinux" --vars all -o "$tmp/vars.btf"

cat > "$tmp/drgn_crash.py" <<'PY'
import sys, drgn
from drgn.commands import run_command
prog = drgn.Program()
prog.set_core_dump(sys.argv[1])
if sys.argv[2:]:
    prog.load_debug_info(sys.argv[2:])
else:
    # As `drgn --no-default-symbols`: the plugin gives types and symbols.
    try:
        prog.load_debug_info(None, default=False, main=False)
    except drgn.MissingDebugInfoError:
        pass
for command in ("ps", "bt -a", "log"):
    run_command(prog, "crash " + command, globals={"prog": prog})
PY

dwarf() { DRGN_DISABLE_PLUGINS=btfkit python3 "$tmp/drgn_crash.py" "$dump" "$vmlinux"; }
plugin() { BTFKIT_DRGN_BTF="$tmp/vars.btf" python3 "$tmp/drgn_crash.py" "$dump"; }
inspect() { "$btfkit" inspect "$dump" --btf "$tmp/vars.btf" ps 'bt -a' log; }

timed() { # name: runs it once under GNU time, prints "wall KiB CPU"
  /usr/bin/time -f "%e %M %U %S" -o "$tmp/$1.time" bash -c "$(declare -f "$1"); $1" \
    > "$tmp/$1.out" 2> "$tmp/$1.err" || { echo "$1 failed:" >&2; tail "$tmp/$1.err" >&2; exit 1; }
  tail -1 "$tmp/$1.time" | awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}'
}

export tmp dump vmlinux btfkit
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "dump: $dump ($(stat -c %s "$dump") bytes), $(grep -o 'ready [0-9]* tasks' "$dir/console.txt")"
echo "drgn $(python3 -c 'import drgn; print(drgn.__version__)'); btfkit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) cores"
printf '%-6s %-24s %-24s %-24s %s\n' round "dwarf s/KiB/CPU s" "plugin s/KiB/CPU s" "inspect s/KiB/CPU s" "plugin/dwarf wall, RSS, CPU; inspect/dwarf wall, RSS, CPU"
: > "$tmp/ratios"
for r in $(seq 0 "$runs"); do
  read -r dw dm dc < <(timed dwarf)
  read -r pw pm pc < <(timed plugin)
  read -r iw im ic < <(timed inspect)
  ratios=$(echo "$pw/$dw; $pm/$dm; $pc/$dc; $iw/$dw; $im/$dm; $ic/$dc" | sed 's/;/\n/g' | sed 's/^ *//; s/^/scale=4; /' | bc | tr '\n' ' ')
  if [ "$r" -gt 0 ]; then echo "$ratios" >> "$tmp/ratios"; fi
  printf '%-6s %-24s %-24s %-24s %s%s\n' "$r" "$dw / $dm / $dc" "$pw / $pm / $pc" "$iw / $im / $ic" "$ratios" "$([ "$r" = 0 ] && echo ' (warm-up)')"
done
echo
for i in 1 2 3 4 5 6; do m[$i]=$(cut -d' ' -f"$i" "$tmp/ratios" | median); done
echo "plugin/dwarf: wall ${m[1]}, peak RSS ${m[2]} (target <= 0.3), CPU ${m[3]}; inspect/dwarf: wall ${m[4]} (target <= 0.1), peak RSS ${m[5]}, CPU ${m[6]}; medians of $runs rounds"
for t in dwarf plugin inspect; do echo "$t: $(wc -l < "$tmp/$t.out") lines of output"; done
