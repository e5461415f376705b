/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strand's UCT component, for the programs that drive strand through UCT
 * (strand-hwcheck, the multi-process peers of the tests and benchmarks):
 * the one strand-run loaded, or, run by hand, the plugin STRAND_PLUGIN
 * names. NULL when neither is there.
 */
#ifndef STRAND_CONTRIB_UCT_LOADER_H_
#define STRAND_CONTRIB_UCT_LOADER_H_

#include <uct/api/uct.h>

uct_component_h strand_uct_component(void);

#endif
