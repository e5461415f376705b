/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand's interface: its class, UCT operations and its part of the
 * shared code (dc.h has the types).
 */
#ifndef STRAND_DC_IFACE_H_
#define STRAND_DC_IFACE_H_

#include "dc.h"

extern uct_tl_t uct_dc_strand_tl;

/* dc_strand's UCT operations and its part of the shared code */
extern uct_iface_ops_t       strand_dc_iface_ops;
extern const strand_tl_ops_t strand_dc_tl_ops;

/* an interface of dc_strand with this configuration (what uct_iface_open
 * makes; rc_strand's connection manager opens one of its own) */
UCS_CLASS_DECLARE_NEW_FUNC(strand_dc_iface_t, uct_iface_t, uct_md_h,
                           uct_worker_h, const uct_iface_params_t *,
                           const uct_iface_config_t *);

#endif
