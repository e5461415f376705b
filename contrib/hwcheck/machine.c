/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NIC as the kernel and rdma-core show it, before the plugin is asked
 * anything: the device in sysfs and its driver, the verbs device, port 1
 * (state, link layer, LID or GID, speed), DEVX (a DEVX context and one
 * harmless PRM command), what mlx5dv and verbs report (DC, DCI streams,
 * signature offload, tag matching, atomics), and the memlock limit.
 * strand uses port 1 of a device, so that is the port checked.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hwcheck.h"

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define HC_SYSFS_IB    "/sys/class/infiniband"
#define HC_PORT        1
#define HC_MAX_DEVICES 32

/* PRM QUERY_HCA_CAP: opcode 0x100; op_mod 1 = general device
 * capabilities, current values; the answer's first byte is its status. */
#define HC_CMD_QUERY_HCA_CAP 0x100
#define HC_CMD_OUT_SIZE      (16 + 4096)

/* ------------------------------------------------------------ sysfs */

/* src into buf, cut to fit (sysfs names are short) */
static void hc_copy(char *buf, size_t max, const char *src)
{
    size_t n = strlen(src);

    n = (n < max) ? n : max - 1;
    memcpy(buf, src, n);
    buf[n] = '\0';
}

/* A sysfs attribute of an RDMA device, its trailing newline cut ("" when
 * there is none). */
static void
hc_sysfs_read(const char *dev, const char *attr, char *buf, size_t max)
{
    char  path[PATH_MAX];
    FILE *f;

    buf[0] = '\0';
    snprintf(path, sizeof(path), HC_SYSFS_IB "/%s/%s", dev, attr);
    f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    if (fgets(buf, (int)max, f) == NULL) {
        buf[0] = '\0';
    }
    buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

/* The kernel driver bound to an RDMA device's PCI function. */
static void hc_sysfs_driver(const char *dev, char *buf, size_t max)
{
    char        path[PATH_MAX], link[PATH_MAX];
    const char *base;
    ssize_t     n;

    snprintf(path, sizeof(path), HC_SYSFS_IB "/%s/device/driver", dev);
    n = readlink(path, link, sizeof(link) - 1);
    if (n < 0) {
        snprintf(buf, max, "no driver");
        return;
    }
    link[n] = '\0';
    base    = strrchr(link, '/');
    hc_copy(buf, max, (base != NULL) ? base + 1 : link);
}

static int hc_is_mlx5(const char *dev)
{
    char driver[64];

    hc_sysfs_driver(dev, driver, sizeof(driver));
    return !strcmp(driver, "mlx5_core");
}

static int hc_port_active(const char *dev)
{
    char state[64];

    hc_sysfs_read(dev, "ports/1/state", state, sizeof(state));
    return strstr(state, "ACTIVE") != NULL;
}

/* The RDMA devices sysfs lists: their count, -1 without the directory. */
static int hc_sysfs_devices(char names[][64], int max)
{
    DIR           *dir = opendir(HC_SYSFS_IB);
    struct dirent *e;
    int            n = 0;

    if (dir == NULL) {
        return -1;
    }
    while (((e = readdir(dir)) != NULL) && (n < max)) {
        if (e->d_name[0] != '.') {
            hc_copy(names[n++], 64, e->d_name);
        }
    }
    closedir(dir);
    return n;
}

int hc_machine_pick(const char *want, hc_machine_t *m, char *why, size_t max)
{
    char   names[HC_MAX_DEVICES][64], driver[64], list[512] = "";
    int    i, n, pick                                       = -1;
    size_t len = 0;

    memset(m, 0, sizeof(*m));
    n = hc_sysfs_devices(names, HC_MAX_DEVICES);
    if (n <= 0) {
        snprintf(why, max, "no mlx5 NIC on this machine (" HC_SYSFS_IB " %s)",
                 (n < 0) ? "does not exist: no RDMA driver is loaded" :
                           "is empty");
        return -1;
    }
    for (i = 0; i < n; ++i) {
        if (!hc_is_mlx5(names[i])) {
            continue;
        }
        if ((want != NULL) ? !strcmp(names[i], want) :
                             ((pick < 0) || (!hc_port_active(names[pick]) &&
                                             hc_port_active(names[i])))) {
            pick = i;
        }
    }
    if (pick >= 0) {
        hc_copy(m->device, sizeof(m->device), names[pick]);
        return 0;
    }
    /* say what is there instead */
    for (i = 0; (i < n) && (len < sizeof(list)); ++i) {
        hc_sysfs_driver(names[i], driver, sizeof(driver));
        len += snprintf(list + len, sizeof(list) - len, "%s%s (%s)",
                        (i > 0) ? ", " : "", names[i], driver);
    }
    if (want != NULL) {
        snprintf(why, max,
                 "no mlx5 device named %s on this machine "
                 "(" HC_SYSFS_IB ": %s)",
                 want, list);
    } else {
        snprintf(why, max,
                 "no mlx5 NIC on this machine (" HC_SYSFS_IB
                 " has %s; none with the mlx5_core driver)",
                 list);
    }
    return -1;
}

/* ----------------------------------------------------------- verbs */

static struct ibv_device *
hc_verbs_find(struct ibv_device **list, int num, const char *name)
{
    int i;

    for (i = 0; i < num; ++i) {
        if (!strcmp(ibv_get_device_name(list[i]), name)) {
            return list[i];
        }
    }
    return NULL;
}

static const char *hc_port_state(enum ibv_port_state s)
{
    switch (s) {
    case IBV_PORT_DOWN:
        return "DOWN";
    case IBV_PORT_INIT:
        return "INIT";
    case IBV_PORT_ARMED:
        return "ARMED";
    case IBV_PORT_ACTIVE:
        return "ACTIVE";
    default:
        return "unknown";
    }
}

static const char *hc_port_speed(uint8_t speed)
{
    switch (speed) {
    case 1:
        return "SDR";
    case 2:
        return "DDR";
    case 4:
        return "QDR";
    case 8:
        return "FDR10";
    case 16:
        return "FDR";
    case 32:
        return "EDR";
    case 64:
        return "HDR";
    case 128:
        return "NDR";
    default:
        return "unknown speed";
    }
}

static const char *hc_port_width(uint8_t width)
{
    switch (width) {
    case 1:
        return "1x";
    case 2:
        return "4x";
    case 4:
        return "8x";
    case 8:
        return "12x";
    case 16:
        return "2x";
    default:
        return "?x";
    }
}

/* A port strand cannot use says why; an InfiniBand port needs a subnet
 * manager to get ACTIVE and a LID. */
static void hc_check_port(struct ibv_context *ctx, hc_machine_t *m)
{
    struct ibv_port_attr pa;
    char                 link[96];
    int                  roce;

    if (ibv_query_port(ctx, HC_PORT, &pa) != 0) {
        hc_fail("port 1", "ibv_query_port: %s", strerror(errno));
        return;
    }
    roce          = (pa.link_layer == IBV_LINK_LAYER_ETHERNET);
    m->link_layer = roce ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    snprintf(link, sizeof(link), "%s, %s %s, MTU %u",
             roce ? "Ethernet (RoCE)" : "InfiniBand",
             hc_port_width(pa.active_width), hc_port_speed(pa.active_speed),
             128u << pa.active_mtu);
    if (pa.state != IBV_PORT_ACTIVE) {
        hc_fail("port 1", "%s, %s: %s", hc_port_state(pa.state), link,
                roce ? "the link is not up (cable, switch port, netdev)" :
                (pa.state == IBV_PORT_DOWN) ?
                       "the link is down (cable, switch port)" :
                       "no subnet manager has made it active (opensm)");
    } else if (!roce && (pa.lid == 0)) {
        hc_fail("port 1",
                "ACTIVE, %s, but no LID: the subnet manager "
                "assigned none",
                link);
    } else if (roce) {
        hc_ok("port 1", "ACTIVE, %s", link);
    } else {
        hc_ok("port 1", "ACTIVE, %s, LID 0x%x", link, pa.lid);
    }
}

/* On RoCE a GID is the address: strand prefers a RoCE v2 one (it routes
 * beyond the subnet). */
static void hc_check_gid(struct ibv_context *ctx, const hc_machine_t *m)
{
    struct ibv_port_attr pa;
    struct ibv_gid_entry e, best;
    static const uint8_t zero[16];
    char                 text[INET6_ADDRSTRLEN];
    int                  i, found = 0;

    if ((m->link_layer != IBV_LINK_LAYER_ETHERNET) ||
        (ibv_query_port(ctx, HC_PORT, &pa) != 0)) {
        return;
    }
    for (i = 0; i < pa.gid_tbl_len; ++i) {
        if ((ibv_query_gid_ex(ctx, HC_PORT, i, &e, 0) != 0) ||
            !memcmp(e.gid.raw, zero, sizeof(zero))) {
            continue;
        }
        if (!found || ((best.gid_type != IBV_GID_TYPE_ROCE_V2) &&
                       (e.gid_type == IBV_GID_TYPE_ROCE_V2))) {
            best  = e;
            found = 1;
        }
    }
    if (!found) {
        hc_fail("RoCE GID", "the GID table is empty: give the port's "
                            "network interface an IP address");
        return;
    }
    inet_ntop(AF_INET6, best.gid.raw, text, sizeof(text));
    if (best.gid_type == IBV_GID_TYPE_ROCE_V2) {
        hc_ok("RoCE GID", "index %u, RoCE v2, %s", best.gid_index, text);
    } else {
        hc_off("RoCE GID",
               "only RoCE v1 GIDs (index %u, %s): traffic stays "
               "in one Ethernet segment",
               best.gid_index, text);
    }
}

/* DEVX: strand reads the atomic capabilities through it and needs it for
 * indirect mkeys and signature pipelining; without it strand falls back
 * to plain verbs. */
static void hc_check_devx(struct ibv_device *ibdev, hc_machine_t *m)
{
    struct mlx5dv_context_attr attr = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};
    uint8_t                    in[16], out[HC_CMD_OUT_SIZE];
    struct ibv_context        *ctx;
    int                        ret;

    ctx = mlx5dv_open_device(ibdev, &attr);
    if (ctx == NULL) {
        hc_off("DEVX",
               "mlx5dv_open_device with DEVX: %s; strand uses plain "
               "verbs: 64-bit add and cswap only, no mkeys, no signature "
               "pipelining",
               strerror(errno));
        return;
    }
    memset(in, 0, sizeof(in));
    memset(out, 0, sizeof(out));
    in[0] = HC_CMD_QUERY_HCA_CAP >> 8;
    in[1] = HC_CMD_QUERY_HCA_CAP & 0xff;
    in[7] = 1; /* general capabilities, current values */
    ret   = mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out));
    if (ret != 0) {
        hc_fail("DEVX", "a DEVX context opened, but QUERY_HCA_CAP failed: %s",
                strerror((ret > 0) ? ret : errno));
    } else if (out[0] != 0) {
        hc_fail("DEVX",
                "QUERY_HCA_CAP answered status 0x%x, syndrome "
                "0x%02x%02x%02x%02x",
                out[0], out[4], out[5], out[6], out[7]);
    } else {
        m->devx = 1;
        hc_ok("DEVX", "a DEVX context, QUERY_HCA_CAP answered");
    }
    ibv_close_device(ctx);
}

/* DC: a DCI created and destroyed at once (what dc_strand's queues are);
 * also the inline size the device gives it. */
static void hc_check_dc(struct ibv_context *ctx)
{
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;
    struct ibv_pd             *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = (pd != NULL) ? ibv_create_cq(ctx, 1, NULL, NULL, 0) :
                                       NULL;
    struct ibv_qp *qp = NULL;

    if (cq != NULL) {
        memset(&init, 0, sizeof(init));
        init.qp_type             = IBV_QPT_DRIVER;
        init.send_cq             = cq;
        init.recv_cq             = cq;
        init.pd                  = pd;
        init.comp_mask           = IBV_QP_INIT_ATTR_PD;
        init.cap.max_send_wr     = 1;
        init.cap.max_send_sge    = 1;
        init.cap.max_inline_data = 64;
        memset(&dv, 0, sizeof(dv));
        dv.comp_mask            = MLX5DV_QP_INIT_ATTR_MASK_DC;
        dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
        qp                      = mlx5dv_create_qp(ctx, &init, &dv);
    }
    if (qp != NULL) {
        hc_ok("DC", "a DCI could be created");
        ibv_destroy_qp(qp);
    } else {
        hc_fail("DC", "%s: %s",
                (pd == NULL) ? "ibv_alloc_pd" :
                (cq == NULL) ? "ibv_create_cq" :
                               "mlx5dv_create_qp (DCI)",
                strerror(errno));
    }
    if (cq != NULL) {
        ibv_destroy_cq(cq);
    }
    if (pd != NULL) {
        ibv_dealloc_pd(pd);
    }
}

static void hc_check_dv_caps(struct ibv_context *ctx, hc_machine_t *m)
{
    struct mlx5dv_context         dv;
    const struct mlx5dv_sig_caps *sig = &dv.sig_caps;

    memset(&dv, 0, sizeof(dv));
    dv.comp_mask = MLX5DV_CONTEXT_MASK_DCI_STREAMS |
                   MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD;
    if (mlx5dv_query_device(ctx, &dv) != 0) {
        hc_fail("mlx5dv caps", "mlx5dv_query_device: %s", strerror(errno));
        return;
    }
    if ((dv.comp_mask & MLX5DV_CONTEXT_MASK_DCI_STREAMS) &&
        (dv.dci_streams_caps.max_log_num_concurent > 0)) {
        m->dci_streams = 1;
        if (m->devx) {
            hc_ok("DCI streams", "%u per DCI, a DCI fails after %u errored",
                  1u << dv.dci_streams_caps.max_log_num_concurent,
                  1u << dv.dci_streams_caps.max_log_num_errored);
        } else {
            hc_off("DCI streams",
                   "off (no DEVX): %u per DCI, but a failed "
                   "stream is reset with a DEVX command "
                   "(mlx5dv_dci_stream_id_reset): dc_strand uses the "
                   "dcs_quota policy, and TX_POLICY=streams is refused",
                   1u << dv.dci_streams_caps.max_log_num_concurent);
        }
    } else {
        hc_off("DCI streams",
               "not reported by the NIC (firmware or "
               "rdma-core too old): dc_strand uses the dcs_quota policy, "
               "where an error fails every endpoint on its DCI");
    }
    if ((dv.comp_mask & MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD) &&
        (sig->block_prot != 0)) {
        hc_ok("signature offload", "%s%s%s%s",
              (sig->block_prot & MLX5DV_SIG_PROT_CAP_T10DIF) ? "T10-DIF " : "",
              (sig->crc_type & MLX5DV_SIG_CRC_TYPE_CAP_CRC32) ? "CRC32 " : "",
              (sig->crc_type & MLX5DV_SIG_CRC_TYPE_CAP_CRC32C) ? "CRC32C " : "",
              "blocks: UCX_*_STRAND_INTEGRITY can be used");
    } else {
        hc_off("signature offload", "none reported: integrity-checked GETs "
                                    "(UCX_*_STRAND_INTEGRITY) cannot be used");
    }
}

static void hc_check_verbs_caps(struct ibv_context *ctx, hc_machine_t *m)
{
    struct ibv_device_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    if (ibv_query_device_ex(ctx, NULL, &attr) != 0) {
        hc_fail("verbs caps", "ibv_query_device_ex: %s", strerror(errno));
        return;
    }
    m->tm_max_num_tags = attr.tm_caps.max_num_tags;
    if (attr.tm_caps.max_num_tags > 0) {
        hc_ok("tag matching (NIC)",
              "%u tags, %u list operations, "
              "rendezvous header %u bytes",
              attr.tm_caps.max_num_tags, attr.tm_caps.max_ops,
              attr.tm_caps.max_rndv_hdr_size);
    } else {
        hc_off("tag matching (NIC)", "tm_caps report none");
    }
    if (attr.orig_attr.atomic_cap != IBV_ATOMIC_NONE) {
        hc_ok("atomics (verbs)", "%s",
              (attr.orig_attr.atomic_cap == IBV_ATOMIC_HCA) ?
                      "atomic within the NIC" :
                      "atomic with the CPU too");
    } else {
        hc_off("atomics (verbs)", "the NIC reports none: no atomic "
                                  "operations");
    }
}

/* Registered memory is locked memory: a small limit fails registrations
 * (root is not limited). */
static void hc_check_memlock(void)
{
    struct rlimit rl;

    if (geteuid() == 0) {
        hc_ok("memlock", "root: not limited");
    } else if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
        hc_fail("memlock", "getrlimit: %s", strerror(errno));
    } else if (rl.rlim_cur == RLIM_INFINITY) {
        hc_ok("memlock", "unlimited");
    } else {
        hc_off("memlock",
               "ulimit -l is %llu KiB: larger registrations "
               "fail; make it unlimited (/etc/security/limits.conf)",
               (unsigned long long)rl.rlim_cur / 1024);
    }
}

void hc_machine_check(hc_machine_t *m)
{
    char                driver[64], hca[64], board[64], fw[64];
    struct ibv_device **list;
    struct ibv_device  *ibdev;
    struct ibv_context *ctx;
    int                 num = 0;

    hc_section("machine: %s", m->device);
    hc_step("driver");
    hc_sysfs_driver(m->device, driver, sizeof(driver));
    hc_sysfs_read(m->device, "hca_type", hca, sizeof(hca));
    hc_sysfs_read(m->device, "board_id", board, sizeof(board));
    hc_sysfs_read(m->device, "fw_ver", fw, sizeof(fw));
    hc_ok("driver", "%s, %s, board %s, firmware %s", driver,
          hca[0] ? hca : "HCA type unknown", board[0] ? board : "unknown",
          fw[0] ? fw : "unknown");

    hc_step("verbs device");
    list  = ibv_get_device_list(&num);
    ibdev = (list != NULL) ? hc_verbs_find(list, num, m->device) : NULL;
    if (list == NULL) {
        hc_fail("verbs device",
                "ibv_get_device_list: %s (is the ib_uverbs "
                "kernel module loaded? /dev/infiniband/uverbs*)",
                strerror(errno));
    } else if (ibdev == NULL) {
        hc_fail("verbs device",
                "libibverbs does not list %s: is "
                "ibverbs-providers (libmlx5) installed?",
                m->device);
    } else if (!mlx5dv_is_supported(ibdev)) {
        hc_fail("verbs device",
                "%s is not driven by rdma-core's mlx5 "
                "provider (mlx5dv_is_supported)",
                m->device);
        ibdev = NULL;
    } else if ((ctx = ibv_open_device(ibdev)) == NULL) {
        hc_fail("verbs device", "ibv_open_device(%s): %s", m->device,
                strerror(errno));
        ibdev = NULL;
    } else {
        hc_ok("verbs device", "%s, mlx5 provider", ibdev->ibdev_path);
        hc_step("port 1");
        hc_check_port(ctx, m);
        hc_check_gid(ctx, m);
        hc_step("DEVX");
        hc_check_devx(ibdev, m);
        hc_step("DC");
        hc_check_dc(ctx);
        hc_step("mlx5dv caps");
        hc_check_dv_caps(ctx, m);
        hc_check_verbs_caps(ctx, m);
        ibv_close_device(ctx);
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    hc_check_memlock();
}
