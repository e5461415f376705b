/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared interface's devices and capabilities (uct_iface_query,
 * the performance estimate UCP asks for); the transport's part through
 * iface->tl.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "iface_class.h"
#include "tag.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/topo/base/topo.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------- devices */

/* The PCI device of a hardware NIC (from the device layer's locality), so
 * that UCP ranks devices by distance; a software device has none. */
static ucs_sys_device_t strand_sys_device(const strand_dev_t *dev)
{
    ucs_sys_device_t sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;

    if ((dev->locality.pci_bdf[0] == '\0') ||
        (ucs_topo_find_device_by_bdf_name(dev->locality.pci_bdf, &sys_dev) !=
         UCS_OK)) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    strand_topo_set_device_name(sys_dev, dev->info.name);
    return sys_dev;
}

ucs_status_t strand_query_devices(uct_md_h                   uct_md,
                                  uct_tl_device_resource_t **devices_p,
                                  unsigned                  *num_devices_p)
{
    strand_md_t *md = ucs_derived_of(uct_md, strand_md_t);
    char         name[UCT_DEVICE_NAME_MAX];

    ucs_snprintf_zero(name, sizeof(name), "%s:%d", md->dev->info.name,
                      STRAND_PORT);
    return uct_single_device_resource(uct_md, name, UCT_DEVICE_TYPE_NET,
                                      strand_sys_device(md->dev), devices_p,
                                      num_devices_p);
}

/* --------------------------------------------------------------- query */

ucs_status_t strand_iface_perf(strand_iface_t *iface, strand_dev_perf_t *perf)
{
    int ret = iface->dev->ops->query_perf(iface->dev, perf);

    if (ret != 0) {
        ucs_error("%s: cannot get the device's performance estimates: %s",
                  iface->dev->info.name, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    if ((perf->source == STRAND_DEV_PERF_PORT_GUESS) ||
        (perf->source == STRAND_DEV_PERF_FIXED)) {
        /* UCP picks protocols from these; the run works either way */
        ucs_diag("%s: estimates not from the device: %s", iface->dev->info.name,
                 perf->what);
    }
    ucs_trace("%s: estimates (%s): latency %.0f ns, bandwidth %.0f MB/s, "
              "overhead %.0f/%.0f ns",
              iface->dev->info.name, perf->what, perf->latency * 1e9,
              perf->bandwidth / 1e6, perf->send_overhead * 1e9,
              perf->recv_overhead * 1e9);
    return UCS_OK;
}

/* The device's atomics: masked ones build every operation, 32 and 64 bit;
 * without, the standard 64-bit fetch-and-add and compare-and-swap only. */
static void
strand_iface_query_atomics(const strand_iface_t *iface, uct_iface_attr_t *attr)
{
    uint64_t amo = UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) |
                   UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR);
    uint64_t famo = amo | UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                    UCS_BIT(UCT_ATOMIC_OP_CSWAP);

    if (iface->dev->caps.atomics && iface->config.masked_atomics) {
        /* masked atomics build every operation, 32 and 64 bit */
        attr->cap.flags |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
        attr->cap.atomic32.op_flags  = amo;
        attr->cap.atomic32.fop_flags = famo;
        attr->cap.atomic64.op_flags  = amo;
        attr->cap.atomic64.fop_flags = famo;
    } else if (iface->dev->caps.atomics) {
        /* the standard 64-bit fetch-and-add and compare-and-swap only */
        attr->cap.flags |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
        attr->cap.atomic64.op_flags  = UCS_BIT(UCT_ATOMIC_OP_ADD);
        attr->cap.atomic64.fop_flags = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                                       UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    }
}

ucs_status_t strand_iface_query(strand_iface_t *iface, uct_iface_attr_t *attr)
{
    size_t            seg_size = iface->config.seg_size;
    strand_dev_perf_t perf;
    ucs_status_t      status;

    uct_base_iface_query(&iface->super, attr);

    attr->cap.flags = STRAND_IFACE_FLAGS_CONNECT | UCT_IFACE_FLAG_AM_SHORT |
                      UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_AM_ZCOPY |
                      UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
                      UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY |
                      UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      /* a bad local or remote buffer fails its ep, not the
                       * process (the device's protection and access
                       * errors); a pack callback that wrote too much is
                       * refused (strand_ep_check_packed) */
                      UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF |
                      UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM |
                      UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN |
                      UCT_IFACE_FLAG_EP_CHECK;
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                            UCT_IFACE_FLAG_EVENT_RECV |
                            UCT_IFACE_FLAG_EVENT_RECV_SIG |
                            UCT_IFACE_FLAG_EVENT_FD;

    strand_iface_query_atomics(iface, attr);

    attr->cap.am.max_short = iface->config.max_inline -
                             strand_am_hdr_len(iface);
    attr->cap.am.max_bcopy       = seg_size - strand_am_hdr_len(iface);
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = seg_size - strand_am_hdr_len(iface);
    attr->cap.am.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.am.align_mtu       = iface->dev->caps.mtu;
    attr->cap.am.max_hdr         = STRAND_AM_MAX_HDR;
    attr->cap.am.max_iov         = iface->config.max_sge - 1;

    attr->cap.put.max_short       = iface->config.max_inline;
    attr->cap.put.max_bcopy       = seg_size;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = STRAND_MAX_ZCOPY;
    attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.put.align_mtu       = iface->dev->caps.mtu;
    attr->cap.put.max_iov         = iface->config.max_sge;

    attr->cap.get.max_bcopy = seg_size;
    if (iface->integrity.kind != STRAND_INTEGRITY_OFF) {
        /* every GET lands through a checking mkey: zero-copy only */
        attr->cap.flags &= ~UCT_IFACE_FLAG_GET_BCOPY;
        attr->cap.get.max_bcopy = 0;
    }
    attr->cap.get.min_zcopy       = 1;
    attr->cap.get.max_zcopy       = STRAND_MAX_ZCOPY;
    attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.get.align_mtu       = iface->dev->caps.mtu;
    attr->cap.get.max_iov         = iface->config.max_sge;

    strand_tag_query(iface, attr);

    attr->ep_addr_len   = 0;
    attr->max_conn_priv = 0;
    attr->dev_num_paths = 1;
    attr->max_num_eps   = SIZE_MAX;

    /* what the device says it is worth (src/dev: the port's speed on a
     * NIC, measured costs on the software device): the link is shared by
     * every process on the port */
    status = strand_iface_perf(iface, &perf);
    if (status != UCS_OK) {
        return status;
    }
    attr->latency = ucs_linear_func_make(perf.latency, perf.latency_per_ep);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = perf.bandwidth;
    attr->overhead            = perf.send_overhead;
    attr->priority            = 0;
    return UCS_OK;
}

/* UCP's protocol selection asks for the send and receive overheads apart
 * (uct_iface_estimate_perf); the rest is what iface_query reports. */
ucs_status_t
strand_iface_estimate_perf(uct_iface_h tl_iface, uct_perf_attr_t *perf_attr)
{
    strand_iface_t   *iface = ucs_derived_of(tl_iface, strand_iface_t);
    strand_dev_perf_t perf;
    ucs_status_t      status;

    status = uct_base_iface_estimate_perf(tl_iface, perf_attr);
    if ((status != UCS_OK) ||
        !(perf_attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD)) {
        return status;
    }
    status = strand_iface_perf(iface, &perf);
    if (status == UCS_OK) {
        perf_attr->recv_overhead = perf.recv_overhead;
    }
    return status;
}
