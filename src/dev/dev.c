/*
 * Discovery and open across the device backends.
 */
#include "dev.h"

#include <errno.h>

static const strand_dev_ops_t *strand_dev_backend(strand_dev_kind_t kind)
{
    return (kind == STRAND_DEV_KIND_HW) ? &strand_dev_hw_ops :
                                          &strand_dev_sim_ops;
}

int strand_dev_list(unsigned kind_mask, strand_dev_info_t *out, int max)
{
    int n = 0;

    /* hardware first: it is what a user with a NIC wants */
    if (kind_mask & (1u << STRAND_DEV_KIND_HW)) {
        n += strand_dev_hw_ops.list(out + n, max - n);
    }
    if ((kind_mask & (1u << STRAND_DEV_KIND_SIM)) && (n < max)) {
        n += strand_dev_sim_ops.list(out + n, max - n);
    }
    return n;
}

int strand_dev_open(const strand_dev_info_t *info, strand_dev_t **dev_p)
{
    if ((info == NULL) || (dev_p == NULL)) {
        return EINVAL;
    }
    return strand_dev_backend(info->kind)->open(info, dev_p);
}
