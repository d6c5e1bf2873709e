"""What drgn says about a kernel dump, as JSON ({check: [lines]}): run once
with Debian's DWARF vmlinux (the oracle, btfkit's plugin disabled) and once
with no DWARF at all (btfkit's plugin only, loaded through drgn's entry
point), in separate processes (drgn loads its plugins once per process).

usage: python3 drgn_outputs.py dwarf|btf DUMP [DEBUG_FILE...]

DUMP /proc/kcore is the running kernel (drgn's `set_kernel`).
"""

import contextlib
import io
import json
import sys
import traceback
from typing import Callable, Dict, List

import drgn
from drgn.commands import run_command
from drgn.helpers.linux.cgroup import cgroup_path
from drgn.helpers.linux.cpumask import for_each_online_cpu
from drgn.helpers.linux.fs import d_path, for_each_file, for_each_mount, mount_dst, mount_fstype, mount_src
from drgn.helpers.linux.net import for_each_net, for_each_netdev
from drgn.helpers.linux.slab import find_slab_cache, slab_cache_for_each_allocated_object
from drgn.helpers.linux.module import for_each_module
from drgn.helpers.linux.percpu import per_cpu
from drgn.helpers.linux.pid import for_each_task
from drgn.helpers.linux.printk import get_dmesg

# The processes the test guest leaves running (crates/testkit/src/dumps.rs).
GUEST_TASKS = ("btfkit-sleeper", "btfkit-reader", "btfkit-opener")

# drgn's crash commands compared, with arguments that this guest has.
CRASH_COMMANDS = (
    "ps",
    "mod",
    "log",
    "sys",
    "bt 1",
    "bt -a",
    "struct list_head",
    "struct task_struct",
    "struct module",
    "whatis init_task",
    "whatis jiffies",
    "p init_task.comm",
    "p jiffies",
    "p init_uts_ns.name",
    "sym schedule",
    "sym linux_banner",
    "rd linux_banner 8",
    "files 1",
    "net",
    "dev",
    "irq",
    "runq",
    "timer",
    "kmem -i",
    "swap",
    "sig 1",
    "task 1",
    "vm 1",
    "foreach bt",
    "bpf",
)


def guest_tasks(prog: drgn.Program) -> List[drgn.Object]:
    return [
        t
        for t in for_each_task(prog)
        if t.comm.string_().decode() in GUEST_TASKS + ("init", "swapper/0")
    ]


def stack_names(prog: drgn.Program) -> List[str]:
    """Function name of each frame of a few tasks (DWARF's inline frames
    left out: BTF has no inlining)."""
    out = []
    for t in guest_tasks(prog):
        comm = t.comm.string_().decode()
        for i, frame in enumerate(f for f in drgn.stack_trace(t) if not f.is_inline):
            out.append(f"{comm} #{i} {frame.name}")
    return out


def stack_pcs(prog: drgn.Program) -> List[str]:
    out = []
    for t in guest_tasks(prog):
        comm = t.comm.string_().decode()
        for i, frame in enumerate(f for f in drgn.stack_trace(t) if not f.is_inline):
            out.append(f"{comm} #{i} {frame.pc:#x}")
    return out


def crash(command: str) -> Callable[[drgn.Program], List[str]]:
    def run(prog: drgn.Program) -> List[str]:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            run_command(prog, "crash " + command, globals={"prog": prog})
        return buf.getvalue().splitlines()

    return run


# Types of many shapes: bit fields, anonymous unions, function pointers,
# flexible arrays, enums of every size.
TYPES = (
    "struct sk_buff",
    "struct page",
    "struct inode",
    "struct file",
    "struct mm_struct",
    "struct net_device",
    "struct bpf_prog",
    "struct bio",
    "struct sched_entity",
    "struct cfs_rq",
    "struct irq_desc",
    "struct hrtimer",
    "struct device",
    "struct super_block",
    "struct dentry",
    "struct vm_area_struct",
    "struct perf_event",
    "struct file_operations",
    "struct sock",
    "struct tcp_sock",
    "union bpf_attr",
    "enum bpf_prog_type",
    "enum hrtimer_restart",
    "struct xarray",
    "struct maple_tree",
    "struct kvm",
)


def types(prog: drgn.Program) -> List[str]:
    out = []
    for name in TYPES:
        out.extend(str(prog.type(name)).splitlines())
    return out


CHECKS: Dict[str, Callable[[drgn.Program], List[str]]] = {
    "init_task.comm": lambda prog: [prog["init_task"].comm.string_().decode()],
    "for_each_task": lambda prog: [
        f"{t.pid.value_()} {t.comm.string_().decode()}" for t in for_each_task(prog)
    ],
    "get_dmesg": lambda prog: get_dmesg(prog).decode(errors="replace").splitlines(),
    "for_each_module": lambda prog: [
        m.name.string_().decode() for m in for_each_module(prog)
    ],
    "types": types,
    "function prototypes": lambda prog: [
        f"{name} {prog[name].type_} {prog[name].address_:#x}"
        for name in ("schedule", "map_create", "do_wait", "kernel_wait4", "vfs_write")
    ],
    # Names of several functions: drgn+DWARF gives any of them, from run to
    # run; their symbols are compared.
    "function instances": lambda prog: [
        name + " " + " ".join(sorted(hex(s.address) for s in prog.symbols(name)))
        for name in ("wakeup_show", "bpf_iter_detach_map")
    ],
    # Per-CPU variables through __per_cpu_offset.
    "per_cpu": lambda prog: [
        f"{cpu} {per_cpu(prog['runqueues'], cpu).curr.comm.string_().decode()} "
        f"{per_cpu(prog['runqueues'], cpu).nr_running.value_()}"
        for cpu in for_each_online_cpu(prog)
    ],
    "d_path of open files": lambda prog: [
        f"{t.pid.value_()} {fd} {d_path(f.f_path).decode(errors='replace')}"
        for t in guest_tasks(prog)
        for fd, f in for_each_file(t)
    ],
    "cgroup_path": lambda prog: [
        f"{t.pid.value_()} {cgroup_path(t.cgroups.dfl_cgrp).decode()}" for t in for_each_task(prog)
    ],
    "for_each_mount": lambda prog: [
        f"{mount_src(m).decode()} {mount_dst(m).decode()} {mount_fstype(m).decode()}"
        for m in for_each_mount(prog)
    ],
    "for_each_net": lambda prog: [
        " ".join(d.name.string_().decode() for d in for_each_netdev(net))
        for net in for_each_net(prog)
    ],
    "slab objects": lambda prog: sorted(
        t.comm.string_().decode()
        for t in slab_cache_for_each_allocated_object(
            find_slab_cache(prog, "task_struct"), "struct task_struct"
        )
    ),
    "stack_trace names": stack_names,
    "stack_trace pcs": stack_pcs,
    **{"crash " + c: crash(c) for c in CRASH_COMMANDS},
}


def main() -> None:
    mode, dump, debug_files = sys.argv[1], sys.argv[2], sys.argv[3:]
    prog = drgn.Program()
    if dump == "/proc/kcore":
        prog.set_kernel()
    else:
        prog.set_core_dump(dump)
    if mode == "dwarf":
        prog.load_debug_info(debug_files)
    else:
        # As `drgn --no-default-symbols`: drgn makes its modules (and
        # finds their ORC in memory) but loads no file.
        try:
            prog.load_debug_info(None, default=False, main=False)
        except drgn.MissingDebugInfoError:
            pass
    result = {}
    for name, check in CHECKS.items():
        try:
            result[name] = check(prog)
        except Exception as e:
            tb = traceback.format_exception_only(type(e), e)[-1].strip()
            result[name] = [f"ERROR: {tb}"]
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
