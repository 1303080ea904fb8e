/* SPDX-License-Identifier: GPL-2.0 */
/* Stub of <linux/module.h> for compiling PCC-Kernel's tcp_pcc.c in user space (tests/test_pcc_vivace_equivalence.py):
 * the module boilerplate only. */
#ifndef PCC_EQUIV_LINUX_MODULE_H
#define PCC_EQUIV_LINUX_MODULE_H
#include "equiv.h"

#define __init
#define __exit
#define THIS_MODULE ((struct module *)0)
#define module_init(fn) static int (*equiv_module_init_fn)(void) __attribute__((unused)) = fn
#define module_exit(fn) static void (*equiv_module_exit_fn)(void) __attribute__((unused)) = fn
#define MODULE_AUTHOR(s) struct equiv_module_info
#define MODULE_LICENSE(s) struct equiv_module_info
#define MODULE_DESCRIPTION(s) struct equiv_module_info
struct module;

#endif
