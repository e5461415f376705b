/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's interface: its class, UCT operations and its part of the
 * shared code (rc.h has the types).
 */
#ifndef STRAND_RC_IFACE_H_
#define STRAND_RC_IFACE_H_

#include "rc.h"

extern uct_tl_t uct_rc_strand_tl;

#endif
