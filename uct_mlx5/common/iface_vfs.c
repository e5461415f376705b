/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What UCX's VFS (and tests) can read of an interface: its send queues,
 * async events, QoS, integrity and tag matching state.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "iface_class.h"
#include "txq_pool.h"

#include <ucs/vfs/base/vfs_obj.h>

static void strand_iface_vfs_show_txq_pool(void *obj, ucs_string_buffer_t *strb,
                                           void *arg_ptr, uint64_t arg_u64)
{
    strand_txq_pool_show(obj, strb);
}

/* The device's async events so far: "<event> <count> qpn 0x<last>". */
static void strand_iface_vfs_show_async(void *obj, ucs_string_buffer_t *strb,
                                        void *arg_ptr, uint64_t arg_u64)
{
    strand_iface_t *iface = obj;
    strand_md_t    *md    = ucs_derived_of(iface->super.md, strand_md_t);
    uint64_t        count;
    uint32_t        qpn;
    unsigned        t;

    strand_async_drain(&md->async);
    for (t = 0; t < STRAND_ASYNC_MAX_TYPE; ++t) {
        count = strand_async_count(&md->async, (enum ibv_event_type)t, &qpn);
        if (count > 0) {
            ucs_string_buffer_appendf(strb, "%s %" PRIu64 " qpn 0x%x\n",
                                      ibv_event_type_str(
                                              (enum ibv_event_type)t),
                                      count, qpn);
        }
    }
}

/* Tag matching: the list, the phase, and which path messages took. */
static void strand_iface_vfs_show_integrity(void                *obj,
                                            ucs_string_buffer_t *strb,
                                            void *arg_ptr, uint64_t arg_u64)
{
    strand_iface_t *iface = obj;
    char            buf[256];

    strand_integrity_summary(&iface->integrity, buf, sizeof(buf));
    ucs_string_buffer_appendf(strb, "%s\n", buf);
}

static void strand_iface_vfs_show_tm(void *obj, ucs_string_buffer_t *strb,
                                     void *arg_ptr, uint64_t arg_u64)
{
    strand_iface_t *iface = obj;

    strand_tm_show(&iface->tm, strb);
}

/* The service level and traffic class the interface's packets carry, and
 * what the port received by each (where the device counts it). */
static void strand_iface_vfs_show_qos(void *obj, ucs_string_buffer_t *strb,
                                      void *arg_ptr, uint64_t arg_u64)
{
    strand_iface_t *iface = obj;
    strand_dev_t   *dev   = iface->dev;
    uint64_t        sl[16], tclass[256];
    unsigned        i;

    ucs_string_buffer_appendf(strb, "sl %u traffic_class %u\n", iface->path.sl,
                              iface->path.tclass);
    if (dev->ops->rx_qos == NULL) {
        return;
    }
    dev->ops->rx_qos(dev, sl, tclass);
    for (i = 0; i < 16; ++i) {
        if (sl[i] != 0) {
            ucs_string_buffer_appendf(strb, "rx sl %u: %" PRIu64 "\n", i,
                                      sl[i]);
        }
    }
    for (i = 0; i < 256; ++i) {
        if (tclass[i] != 0) {
            ucs_string_buffer_appendf(strb,
                                      "rx traffic_class %u: %" PRIu64 "\n", i,
                                      tclass[i]);
        }
    }
}

/* What UCX's VFS (and tests) can read: the send queues (dc_strand's
 * dci_pool, rc_strand's qp_pool), async events, tag matching, QoS. */
void strand_iface_vfs_refresh(uct_iface_h tl_iface)
{
    strand_iface_t *iface = ucs_derived_of(tl_iface, strand_iface_t);

    ucs_vfs_obj_add_ro_file(iface, strand_iface_vfs_show_txq_pool, NULL, 0,
                            "%s_pool", iface->tl->names.sq_vfs);
    ucs_vfs_obj_add_ro_file(iface, strand_iface_vfs_show_async, NULL, 0,
                            "async_events");
    ucs_vfs_obj_add_ro_file(iface, strand_iface_vfs_show_qos, NULL, 0, "qos");
    if (iface->integrity.kind != STRAND_INTEGRITY_OFF) {
        ucs_vfs_obj_add_ro_file(iface, strand_iface_vfs_show_integrity, NULL, 0,
                                "integrity");
    }
    if (iface->have_tm) {
        ucs_vfs_obj_add_ro_file(iface, strand_iface_vfs_show_tm, NULL, 0,
                                "tag_matching");
    }
}
