// SPDX-License-Identifier: GPL-2.0
/*
 * An out-of-tree module for the boot tests (scripts/kernel/build.sh builds
 * it with `make M=`, so the kernel's build gives its BTF a distilled base
 * where the kernel has one). Its functions take pointers to vmlinux types,
 * so the module's BTF refers to the base's task_struct, file and inode, and
 * a fentry program on them is checked against those types.
 */
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/sched.h>

int btfkit_oot_task_pid(struct task_struct *task);
loff_t btfkit_oot_file_size(struct file *file);

int btfkit_oot_task_pid(struct task_struct *task)
{
	return task->pid;
}
EXPORT_SYMBOL_GPL(btfkit_oot_task_pid);

loff_t btfkit_oot_file_size(struct file *file)
{
	return i_size_read(file_inode(file));
}
EXPORT_SYMBOL_GPL(btfkit_oot_file_size);

static int __init btfkit_oot_init(void)
{
	return btfkit_oot_task_pid(current) < 0 ? -EINVAL : 0;
}

static void __exit btfkit_oot_exit(void)
{
}

module_init(btfkit_oot_init);
module_exit(btfkit_oot_exit);
MODULE_DESCRIPTION("btfkit's out-of-tree test module");
MODULE_LICENSE("GPL");
