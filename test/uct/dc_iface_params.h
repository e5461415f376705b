/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interface parameters every dc_strand test opens with: device mode on
 * the software device's port, with an error handler. Shared by the gtest
 * fixture and the multi-process programs.
 */
#ifndef STRAND_TEST_DC_IFACE_PARAMS_H_
#define STRAND_TEST_DC_IFACE_PARAMS_H_

#include <uct/api/uct.h>

#include <string.h>

static inline void strand_test_dc_iface_params(uct_iface_params_t *params,
                                               uct_error_handler_t err_cb,
                                               void               *err_arg)
{
    memset(params, 0, sizeof(*params));
    params->field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                         UCT_IFACE_PARAM_FIELD_DEVICE |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                         UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params->open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params->mode.device.tl_name  = "dc_strand";
    params->mode.device.dev_name = "smlx5_0:1";
    params->err_handler          = err_cb;
    params->err_handler_arg      = err_arg;
    params->err_handler_flags    = 0;
}

#endif
