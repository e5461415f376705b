/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software device's context: configuration, fabric port, the engine
 * lock; and the calls that run the engine (the doorbells, smlx5_progress,
 * the progress thread), on top of everything else in the device.
 */
#include "sim.h"
#include "sim_clock.h"
#include "sim_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

static uint64_t sim_env_u64(const char *name, uint64_t dflt)
{
    const char        *v = getenv(name);
    char              *end;
    unsigned long long x;

    if ((v == NULL) || (*v == '\0')) {
        return dflt;
    }
    x = strtoull(v, &end, 0);
    if (*end != '\0') {
        fprintf(stderr, "smlx5: ignoring %s='%s': not a number\n", name, v);
        return dflt;
    }
    return x;
}

int sim_config_read(sim_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->mtu = (uint32_t)sim_env_u64("STRAND_SIM_MTU", 4096);
    if ((cfg->mtu < 256) || (cfg->mtu > 4096) || (cfg->mtu & (cfg->mtu - 1))) {
        fprintf(stderr,
                "smlx5: STRAND_SIM_MTU=%u is not one of 256, 512, "
                "1024, 2048, 4096; using 4096\n",
                cfg->mtu);
        cfg->mtu = 4096;
    }
    cfg->timeout_ns_override = sim_env_u64("STRAND_SIM_TIMEOUT_NS", 0);
    cfg->rnr_timer_ns        = sim_env_u64("STRAND_SIM_RNR_NS", 0);
    cfg->progress_thread = (int)sim_env_u64("STRAND_SIM_PROGRESS_THREAD", 1);
    cfg->fastpath        = sim_env_u64("STRAND_SIM_FASTPATH", 1) != 0;
    cfg->atomics         = (int)sim_env_u64("STRAND_SIM_ATOMICS", 1);
    cfg->onecopy_min     = (uint32_t)sim_env_u64("STRAND_SIM_ONECOPY",
                                                 SIM_ONECOPY_DEFAULT_MIN);
    sim_fault_config_read(cfg);
    if (sim_perf_config_read(cfg) != 0) {
        return EINVAL;
    }
    return sim_caps_config_read(cfg);
}

/* ------------------------------------------------ device personality */

/* STRAND_SIM_CAPS keys, in the order sim_cap_set knows them. */
typedef enum sim_cap_key {
    SIM_CAP_MASKED_ATOMICS,
    SIM_CAP_ATOMIC_MODE8B,
    SIM_CAP_MAX_INLINE,
    SIM_CAP_MAX_SGE,
    SIM_CAP_DCI_LOG_CONCURENT,
    SIM_CAP_DCI_LOG_ERRORED,
    SIM_CAP_SCATTER_DCT,
    SIM_CAP_TM_MAX_NUM_TAGS,
    SIM_CAP_SIGNATURE,
    SIM_CAP_SIG_PIPELINING,
    SIM_CAP_DEVX,
    SIM_CAP_TRAFFIC_CLASS,
    SIM_CAP_NUM_KEYS
} sim_cap_key_t;

static const struct {
    const char *name;
    uint32_t    min, max;
} sim_cap_keys[SIM_CAP_NUM_KEYS] = {
        [SIM_CAP_MASKED_ATOMICS]    = {"masked_atomics", 0, 1},
        [SIM_CAP_ATOMIC_MODE8B]     = {"atomic_mode8b", 0, 1},
        [SIM_CAP_MAX_INLINE]        = {"max_inline", 0, SIM_MAX_INLINE},
        [SIM_CAP_MAX_SGE]           = {"max_sge", 1, SIM_MAX_SGE},
        [SIM_CAP_DCI_LOG_CONCURENT] = {"dci_log_concurent", 0, 4},
        [SIM_CAP_DCI_LOG_ERRORED]   = {"dci_log_errored", 0, 3},
        [SIM_CAP_SCATTER_DCT]       = {"scatter_dct", 0, 1},
        [SIM_CAP_TM_MAX_NUM_TAGS]   = {"tm_max_num_tags", 0, SIM_TM_MAX_TAGS},
        [SIM_CAP_SIGNATURE]         = {"signature", 0, 1},
        [SIM_CAP_SIG_PIPELINING]    = {"sig_pipelining", 0, 1},
        [SIM_CAP_DEVX]              = {"devx", 0, 1},
        [SIM_CAP_TRAFFIC_CLASS]     = {"traffic_class", 0, 255},
};

static void sim_cap_set(sim_config_t *cfg, sim_cap_key_t key, uint32_t v)
{
    switch (key) {
    case SIM_CAP_MASKED_ATOMICS:
        cfg->masked_atomics = v;
        break;
    case SIM_CAP_ATOMIC_MODE8B:
        cfg->atomic_mode8b = v;
        break;
    case SIM_CAP_MAX_INLINE:
        cfg->max_inline = v;
        break;
    case SIM_CAP_MAX_SGE:
        cfg->max_sge = v;
        break;
    case SIM_CAP_DCI_LOG_CONCURENT:
        cfg->dci_log_concurent = v;
        break;
    case SIM_CAP_DCI_LOG_ERRORED:
        cfg->dci_log_errored = v;
        break;
    case SIM_CAP_TM_MAX_NUM_TAGS:
        cfg->tm_max_num_tags = v;
        break;
    case SIM_CAP_SIGNATURE:
        cfg->signature = v;
        break;
    case SIM_CAP_SIG_PIPELINING:
        cfg->sig_pipelining = v;
        break;
    case SIM_CAP_DEVX:
        cfg->devx = v;
        break;
    case SIM_CAP_TRAFFIC_CLASS:
        cfg->port_tclass = (int)v;
        break;
    default:
        cfg->scatter_dct = v;
        break;
    }
}

/* The ConnectX the device looks like when STRAND_SIM_CAPS says nothing. */
static void sim_caps_defaults(sim_config_t *cfg)
{
    cfg->masked_atomics = true;
    /* what mlx5_core sets where the HCA supports it (and ConnectX-4 and
     * later do): 8-byte atomics answered in host order */
    cfg->atomic_mode8b     = 1;
    cfg->scatter_dct       = true;
    cfg->signature         = true;
    cfg->sig_pipelining    = true;
    cfg->max_inline        = SIM_MAX_INLINE;
    cfg->max_sge           = SIM_MAX_SGE;
    cfg->dci_log_concurent = 4;
    cfg->dci_log_errored   = 3;
    cfg->tm_max_num_tags   = SIM_TM_MAX_TAGS;
    cfg->link_layer        = IBV_LINK_LAYER_INFINIBAND;
    cfg->devx              = true;
    cfg->port_tclass       = -1;
}

/* One key=value of STRAND_SIM_CAPS; 0 or EINVAL (said on stderr). */
static int sim_cap_parse_one(sim_config_t *cfg, char *tok)
{
    char         *val = strchr(tok, '='), *end;
    unsigned long v;
    int           k;

    if (val != NULL) {
        *val++ = '\0';
    }
    for (k = 0; k < SIM_CAP_NUM_KEYS; ++k) {
        if (!strcmp(tok, sim_cap_keys[k].name)) {
            break;
        }
    }
    if (k == SIM_CAP_NUM_KEYS) {
        fprintf(stderr,
                "smlx5: STRAND_SIM_CAPS: unknown key '%s' (known: "
                "masked_atomics, atomic_mode8b, max_inline, max_sge, "
                "dci_log_concurent, dci_log_errored, scatter_dct, "
                "tm_max_num_tags, signature, sig_pipelining, devx, "
                "traffic_class)\n",
                tok);
        return EINVAL;
    }
    v = (val != NULL) ? strtoul(val, &end, 0) : 0;
    if ((val == NULL) || (*val == '\0') || (*end != '\0') ||
        (v < sim_cap_keys[k].min) || (v > sim_cap_keys[k].max)) {
        fprintf(stderr,
                "smlx5: STRAND_SIM_CAPS: %s='%s': valid range "
                "%u..%u\n",
                tok, val ? val : "", sim_cap_keys[k].min, sim_cap_keys[k].max);
        return EINVAL;
    }
    sim_cap_set(cfg, (sim_cap_key_t)k, (uint32_t)v);
    return 0;
}

static int sim_caps_parse(sim_config_t *cfg, const char *spec)
{
    char *copy, *tok, *save = NULL;
    int   ret = 0;

    copy = strdup(spec);
    if (copy == NULL) {
        return ENOMEM;
    }
    for (tok = strtok_r(copy, ",", &save); (tok != NULL) && (ret == 0);
         tok = strtok_r(NULL, ",", &save)) {
        ret = sim_cap_parse_one(cfg, tok);
    }
    free(copy);
    if ((ret == 0) && (cfg->dci_log_errored > cfg->dci_log_concurent)) {
        fprintf(stderr,
                "smlx5: STRAND_SIM_CAPS: dci_log_errored=%u: valid "
                "range 0..dci_log_concurent (%u)\n",
                cfg->dci_log_errored, cfg->dci_log_concurent);
        ret = EINVAL;
    }
    return ret;
}

static int sim_link_layer_parse(sim_config_t *cfg, const char *v)
{
    if (!strcasecmp(v, "ib") || !strcasecmp(v, "infiniband")) {
        cfg->link_layer = IBV_LINK_LAYER_INFINIBAND;
    } else if (!strcasecmp(v, "ethernet") || !strcasecmp(v, "eth") ||
               !strcasecmp(v, "roce")) {
        cfg->link_layer = IBV_LINK_LAYER_ETHERNET;
    } else {
        fprintf(stderr,
                "smlx5: STRAND_SIM_LINK_LAYER='%s': valid values "
                "ib (infiniband) or ethernet (eth, roce)\n",
                v);
        return EINVAL;
    }
    return 0;
}

int sim_caps_config_read(sim_config_t *cfg)
{
    const char *caps = getenv("STRAND_SIM_CAPS");
    const char *ll   = getenv("STRAND_SIM_LINK_LAYER");
    int         ret;

    sim_caps_defaults(cfg);
    if ((caps != NULL) && (*caps != '\0')) {
        ret = sim_caps_parse(cfg, caps);
        if (ret != 0) {
            return ret;
        }
    }
    if (!cfg->atomics) {
        cfg->masked_atomics = false; /* no atomics at all */
    }
    return ((ll != NULL) && (*ll != '\0')) ? sim_link_layer_parse(cfg, ll) : 0;
}

const char *const *smlx5_device_names(int *num)
{
    static const char *const names[] = {SMLX5_DEV_NAME, NULL};

    if (num != NULL) {
        *num = 1;
    }
    return names;
}

/* -------------------------------------------------------- progress */

int smlx5_progress(smlx5_context_t *ctx)
{
    int count;

    /* The clock is read every 32 polls only: timers are microseconds to
     * milliseconds away, and "the owner polls" needs no finer grain. */
    if ((++ctx->polls & 31) == 0) {
        sim_fabric_port_touch(ctx->port);
        if (sim_timers_due(ctx)) {
            goto progress;
        }
    }
    if ((ctx->net != NULL) && ((ctx->polls & 3) == 0) &&
        sim_net_readable(ctx->net)) {
        goto progress;
    }
    /* rendezvous work of the device's own (a READ or FIN flushed by its
     * DCI's error, to post again) waits for no packet */
    if (!sim_fabric_rx_pending(ctx->port) && (ctx->tm_work == 0)) {
        return 0;
    }
progress:
    if (!sim_engine_enter(ctx, false)) {
        return 0; /* the progress thread is at it */
    }
    count = sim_engine_progress(ctx);
    sim_engine_leave(ctx);
    return count;
}

/* The doorbells: the device is told of new WQEs and runs at once (the
 * requester for the QP's new WQEs, then an engine pass). */
void smlx5_qp_doorbell(smlx5_qp_t *qp)
{
    smlx5_context_t *ctx = qp->ctx;

    if (!sim_bf_check(qp)) {
        return; /* lost: the device heard nothing */
    }
    sim_qp_told(qp);
    sim_engine_enter(ctx, true);
    if (ctx->net != NULL) {
        sim_net_batch_begin(ctx->net); /* the new WQEs' packets together */
    }
    sim_req_process(qp);
    sim_engine_progress(ctx);
    if (ctx->net != NULL) {
        sim_net_batch_end(ctx->net);
    }
    sim_engine_leave(ctx);
}

void smlx5_srq_doorbell(smlx5_srq_t *srq)
{
    /* WQEs are taken lazily from the doorbell record when a SEND arrives;
     * senders waiting out an RNR back-off retry on their own timer. */
    smlx5_progress(srq->ctx);
}

/* After handling traffic the thread keeps polling this long before it
 * sleeps: a stream of packets then costs no wakeup syscalls. */
#define SIM_PROGRESS_SPIN_NS 50000ull
/* A sender that found a peer's inbound ring full retries this soon. */
#define SIM_BACKLOG_RETRY_NS 20000ull

static inline void sim_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static void *sim_progress_thread(void *arg)
{
    smlx5_context_t *ctx = arg;
    uint64_t         deadline, now, busy_until = 0;
    int64_t          timeout;
    bool             backlog;
    int              count;

    while (!atomic_load(&ctx->stop)) {
        pthread_mutex_lock(&ctx->lock);
        count    = sim_engine_progress(ctx);
        deadline = ctx->next_deadline_ns;
        atomic_fetch_add_explicit(&ctx->thread_loops, 1, memory_order_relaxed);
        backlog = ctx->tx_backlog;
        pthread_mutex_unlock(&ctx->lock);

        now = sim_now_ns();
        if (backlog) {
            /* a peer's ring was full: try again shortly */
            uint64_t retry = now + SIM_BACKLOG_RETRY_NS;
            if ((deadline == 0) || (retry < deadline)) {
                deadline = retry;
            }
        }
        if (count > 0) {
            busy_until = now + SIM_PROGRESS_SPIN_NS;
        }
        if ((now < busy_until) &&
            !((ctx->net != NULL) && sim_fabric_owner_polling(ctx->port))) {
            /* traffic is flowing: poll without sleeping (yield now and
             * then: the process's own threads may share the core). Not
             * across hosts while the owner polls: it reads the socket
             * itself, and a thread spinning beside it on a busy machine
             * took the engine and the core from it (8 B MPI round trips
             * 45 us with it, 30 without). */
            unsigned spins = 0;
            while (!sim_fabric_rx_pending(ctx->port) &&
                   !atomic_load(&ctx->stop) &&
                   !((ctx->net != NULL) && ((spins & 7) == 7) &&
                     sim_net_readable(ctx->net))) {
                if ((++spins & 255) == 0) {
                    now = sim_now_ns();
                    if ((now >= busy_until) ||
                        (deadline && (now >= deadline))) {
                        break;
                    }
                    sched_yield();
                }
                sim_cpu_relax();
            }
            continue;
        }

        if (deadline == 0) {
            timeout = -1;
        } else {
            timeout = (deadline > now) ? (int64_t)(deadline - now) : 0;
        }
        if (timeout != 0) {
            sim_fabric_wait(ctx->port, timeout);
        }
    }
    return NULL;
}

/* ----------------------------------------------------------- context */

/* MLX5_SINGLE_THREADED=1: the application's word to rdma-core's mlx5
 * provider that one thread uses the context (read as the provider reads
 * it: "1" and nothing else). */
static bool sim_app_single_threaded(void)
{
    const char *env = getenv("MLX5_SINGLE_THREADED");

    return (env != NULL) && !strcmp(env, "1");
}

/* The fabric: this host's segment of one that spans hosts
 * (STRAND_SIM_FABRIC=udp:<name>, sim_net.h), or one host's own. */
static int sim_device_attach(smlx5_context_t *ctx)
{
    int ret = sim_net_open(&ctx->net);

    if (ret < 0) {
        return ret;
    }
    if (ctx->net == NULL) {
        return sim_fabric_attach(NULL, &ctx->fabric);
    }
    if (ctx->cfg.mtu > sim_net_path_mtu(ctx->net)) {
        ctx->cfg.mtu = sim_net_path_mtu(ctx->net);
    }
    ret = sim_fabric_attach_host(sim_net_segment(ctx->net),
                                 sim_net_self(ctx->net),
                                 sim_net_identity(ctx->net), &ctx->fabric);
    if (ret == -EPROTO) {
        fprintf(stderr,
                "smlx5: the fabric segment %s on this host was "
                "made with another host list or port (STRAND_SIM_HOSTS, "
                "STRAND_SIM_UDP_PORT must be the same for every process)\n",
                sim_net_segment(ctx->net));
    }
    if (ret < 0) {
        sim_net_close(ctx->net);
        ctx->net = NULL;
    }
    return ret;
}

static smlx5_context_t *sim_the_context;
static pthread_mutex_t  sim_open_lock = PTHREAD_MUTEX_INITIALIZER;

smlx5_context_t *smlx5_open_device(const char *name)
{
    smlx5_context_t    *ctx;
    pthread_mutexattr_t mattr;
    int                 ret;

    if ((name == NULL) || strcmp(name, SMLX5_DEV_NAME)) {
        errno = ENODEV;
        return NULL;
    }

    pthread_mutex_lock(&sim_open_lock);
    if (sim_the_context != NULL) {
        /* One software NIC per process: every open shares it. */
        ctx = sim_the_context;
        ctx->refs++;
        pthread_mutex_unlock(&sim_open_lock);
        return ctx;
    }

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        pthread_mutex_unlock(&sim_open_lock);
        errno = ENOMEM;
        return NULL;
    }

    ret = -sim_config_read(&ctx->cfg);
    if (ret < 0) {
        goto err_free;
    }
    if (ctx->cfg.onecopy_min > 0) {
        /* other processes on the fabric read and write this one's
         * registered memory (one-copy transfers): where the kernel's
         * Yama module limits that to descendants, allow any process of
         * ours (it fails harmlessly without Yama) */
        (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    }
    ret = sim_device_attach(ctx);
    if (ret < 0) {
        goto err_free;
    }
    ret = sim_fabric_port_open(ctx->fabric, &ctx->port);
    if (ret < 0) {
        goto err_detach;
    }
    ctx->lid = sim_fabric_port_lid(ctx->port);
    if (ctx->net != NULL) {
        struct sockaddr_in at;
        unsigned           slot = sim_fabric_lid_slot(ctx->lid);

        ret = sim_net_port_open(ctx->net, slot);
        if (ret < 0) {
            sim_fabric_port_close(ctx->port);
            goto err_detach;
        }
        sim_net_port_addr(ctx->net, slot, &at);
        sim_fabric_port_sleep_on(ctx->port, sim_net_fd(ctx->net), &at);
    }
    sim_port_identity_init(ctx);
    sim_fault_seed(ctx);
    ctx->key_gen = (uint32_t)(ctx->rng & 0xff);
    ctx->refs    = 1;

    pthread_mutexattr_init(&mattr);
    pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&ctx->lock, &mattr);
    pthread_mutexattr_destroy(&mattr);
    /* the one thread that uses the context owns the engine: nobody else
     * (no progress thread) runs it */
    ctx->single_thread = sim_app_single_threaded() && !ctx->cfg.progress_thread;

    ctx->async_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ctx->async_fd < 0) {
        ret = -errno;
        goto err_port;
    }
    ret = -sim_bf_init(ctx);
    if (ret < 0) {
        goto err_fd;
    }

    if (ctx->cfg.progress_thread) {
        ret = -pthread_create(&ctx->thread, NULL, sim_progress_thread, ctx);
        if (ret < 0) {
            goto err_bf;
        }
        ctx->thread_running = true;
    }

    sim_the_context = ctx;
    pthread_mutex_unlock(&sim_open_lock);
    return ctx;

err_bf:
    sim_bf_cleanup(ctx);
err_fd:
    close(ctx->async_fd);
err_port:
    pthread_mutex_destroy(&ctx->lock);
    sim_fabric_port_close(ctx->port);
err_detach:
    sim_fabric_detach(ctx->fabric);
    sim_net_close(ctx->net);
err_free:
    free(ctx);
    pthread_mutex_unlock(&sim_open_lock);
    errno = -ret;
    return NULL;
}

int smlx5_close_device(smlx5_context_t *ctx)
{
    pthread_mutex_lock(&sim_open_lock);
    if (--ctx->refs > 0) {
        pthread_mutex_unlock(&sim_open_lock);
        return 0;
    }
    sim_the_context = NULL;
    pthread_mutex_unlock(&sim_open_lock);

    if (ctx->thread_running) {
        atomic_store(&ctx->stop, true);
        sim_fabric_port_wake(ctx->port);
        pthread_join(ctx->thread, NULL);
    }
    sim_fault_cleanup(ctx);
    sim_bf_cleanup(ctx);
    sim_fabric_port_close(ctx->port);
    sim_fabric_detach(ctx->fabric);
    sim_net_close(ctx->net);
    close(ctx->async_fd);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return 0;
}

int smlx5_query_device(smlx5_context_t *ctx, smlx5_device_caps_t *caps)
{
    memset(caps, 0, sizeof(*caps));
    snprintf(caps->attr.fw_ver, sizeof(caps->attr.fw_ver), "strand-sim-1");
    caps->attr.vendor_id           = 0x02c9; /* Mellanox */
    caps->attr.vendor_part_id      = 4123;   /* ConnectX-6 */
    caps->attr.max_mr_size         = 1ull << 40;
    caps->attr.max_qp              = SIM_MAX_QPS;
    caps->attr.max_qp_wr           = SIM_SQ_MAX_WQE;
    caps->attr.max_sge             = ctx->cfg.max_sge;
    caps->attr.max_cq              = SIM_MAX_CQS;
    caps->attr.max_cqe             = 1 << 22;
    caps->attr.max_mr              = SIM_MAX_MRS;
    caps->attr.max_pd              = 1 << 16;
    caps->attr.max_qp_rd_atom      = SIM_MAX_RD_ATOMIC;
    caps->attr.max_qp_init_rd_atom = SIM_MAX_RD_ATOMIC;
    caps->attr.max_srq             = SIM_MAX_SRQS;
    caps->attr.max_srq_wr          = 1 << 15;
    caps->attr.max_srq_sge         = ctx->cfg.max_sge;
    /* as mlx5_ib: verbs atomics (IBV_ATOMIC_HCA) only where the HCA
     * answers 8-byte atomics in host order, as verbs users expect; in the
     * big-endian mode the HCA still executes them, for users that read
     * the mode (the HCA capabilities below, what UCX reads through DEVX) */
    caps->attr.atomic_cap    = (ctx->cfg.atomics && ctx->cfg.atomic_mode8b) ?
                                       IBV_ATOMIC_HCA :
                                       IBV_ATOMIC_NONE;
    caps->attr.phys_port_cnt = 1;
    caps->max_inline_data    = ctx->cfg.max_inline;
    caps->max_mtu            = ctx->cfg.mtu;
    caps->dci_max_log_num_concurent = ctx->cfg.dci_log_concurent;
    caps->dci_max_log_num_errored   = ctx->cfg.dci_log_errored;
    caps->devx                      = ctx->cfg.devx;
    caps->port_tclass               = ctx->cfg.port_tclass;
    caps->tm_max_num_tags           = ctx->cfg.tm_max_num_tags;
    caps->tm_max_ops                = SIM_TM_MAX_OPS;
    caps->tm_max_sge                = 1;
    caps->tm_max_rndv_hdr_size      = SIM_TM_RNDV_HDR;
    caps->flags                     = SMLX5_CAP_CQE_V1;
    if (ctx->cfg.masked_atomics) {
        caps->flags |= SMLX5_CAP_MASKED_ATOMICS;
    }
    if (ctx->cfg.atomics) {
        caps->flags |= SMLX5_CAP_ATOMICS;
    }
    caps->atomic_mode8b = ctx->cfg.atomic_mode8b;
    if (ctx->cfg.scatter_dct) {
        caps->flags |= SMLX5_CAP_SCATTER_TO_CQE_DCT;
    }
    if (ctx->cfg.signature) {
        /* what sim_mkey.c accepts: CRC32, CRC32C and T10-DIF (CRC or IP
         * checksum guard) on every block size */
        if (ctx->cfg.sig_pipelining) {
            caps->flags |= SMLX5_CAP_SIG_PIPELINING;
        }
        caps->sig_caps.block_size = MLX5DV_BLOCK_SIZE_CAP_512 |
                                    MLX5DV_BLOCK_SIZE_CAP_520 |
                                    MLX5DV_BLOCK_SIZE_CAP_4048 |
                                    MLX5DV_BLOCK_SIZE_CAP_4096 |
                                    MLX5DV_BLOCK_SIZE_CAP_4160;
        caps->sig_caps.block_prot = MLX5DV_SIG_PROT_CAP_T10DIF |
                                    MLX5DV_SIG_PROT_CAP_CRC;
        caps->sig_caps.t10dif_bg = MLX5DV_SIG_T10DIF_BG_CAP_CRC |
                                   MLX5DV_SIG_T10DIF_BG_CAP_CSUM;
        caps->sig_caps.crc_type = MLX5DV_SIG_CRC_TYPE_CAP_CRC32 |
                                  MLX5DV_SIG_CRC_TYPE_CAP_CRC32C;
    }
    return 0;
}

static enum ibv_mtu sim_mtu_enum(uint32_t mtu)
{
    switch (mtu) {
    case 256:
        return IBV_MTU_256;
    case 512:
        return IBV_MTU_512;
    case 1024:
        return IBV_MTU_1024;
    case 2048:
        return IBV_MTU_2048;
    default:
        return IBV_MTU_4096;
    }
}

int smlx5_query_port(smlx5_context_t *ctx, uint8_t port,
                     struct ibv_port_attr *attr)
{
    if (port != SMLX5_PORT_NUM) {
        return EINVAL;
    }
    memset(attr, 0, sizeof(*attr));
    attr->state        = IBV_PORT_ACTIVE;
    attr->max_mtu      = sim_mtu_enum(ctx->cfg.mtu);
    attr->active_mtu   = attr->max_mtu;
    attr->gid_tbl_len  = ctx->num_gids;
    attr->lid          = sim_port_is_eth(ctx) ? 0 : ctx->lid;
    attr->sm_lid       = 1;
    attr->lmc          = 0;
    attr->max_msg_sz   = 1u << 30;
    attr->pkey_tbl_len = 1;
    attr->link_layer   = ctx->cfg.link_layer;
    attr->active_width = 4;  /* 4x */
    attr->active_speed = 32; /* EDR */
    attr->phys_state   = 5;  /* LinkUp */
    return 0;
}

int smlx5_query_gid(smlx5_context_t *ctx, uint8_t port, int index,
                    union ibv_gid *gid)
{
    if ((port != SMLX5_PORT_NUM) || (index < 0) ||
        ((unsigned)index >= ctx->num_gids)) {
        return EINVAL;
    }
    *gid = ctx->gids[index];
    return 0;
}

int smlx5_query_gid_ex(smlx5_context_t *ctx, uint8_t port, uint32_t index,
                       struct ibv_gid_entry *entry)
{
    if ((port != SMLX5_PORT_NUM) || (index >= ctx->num_gids)) {
        return EINVAL;
    }
    memset(entry, 0, sizeof(*entry));
    entry->gid       = ctx->gids[index];
    entry->gid_index = index;
    entry->port_num  = port;
    entry->gid_type  = ctx->gid_types[index];
    return 0;
}

int smlx5_set_fastpath(smlx5_context_t *ctx, int on)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->cfg.fastpath = (on != 0);
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

int smlx5_progress_stats(smlx5_context_t *ctx, smlx5_progress_stats_t *st)
{
    sim_port_stats_t ps;

    sim_fabric_port_stats(ctx->port, &ps);
    st->loops           = atomic_load(&ctx->thread_loops);
    st->sleeps          = ps.sleeps;
    st->untimed_sleeps  = ps.untimed_sleeps;
    st->asleep_untimed  = ps.asleep_untimed;
    st->engine_unlocked = ctx->single_thread;
    return 0;
}

_Static_assert(SMLX5_WIRE_DROP_REASONS == SIM_WIRE_DROP_MAX,
               "smlx5_wire_stats_t has a counter per drop reason");

int smlx5_wire_stats(smlx5_context_t *ctx, smlx5_wire_stats_t *st)
{
    sim_udp_stats_t us;
    unsigned        i;

    if (ctx->net == NULL) {
        return ENODEV;
    }
    /* the counters are the engine's: read under its lock */
    pthread_mutex_lock(&ctx->lock);
    sim_net_stats(ctx->net, &us);
    pthread_mutex_unlock(&ctx->lock);
    st->tx      = us.tx;
    st->tx_busy = us.tx_busy;
    st->rx      = us.rx;
    for (i = 0; i < SMLX5_WIRE_DROP_REASONS; ++i) {
        st->drops[i] = us.drops[i];
    }
    return 0;
}

const char *smlx5_wire_drop_name(unsigned reason)
{
    return sim_wire_drop_name((sim_wire_drop_t)reason);
}

int smlx5_wire_addr(smlx5_context_t *ctx, uint32_t *ipv4, uint16_t *port)
{
    struct sockaddr_in at;

    if (ctx->net == NULL) {
        return ENODEV;
    }
    sim_net_port_addr(ctx->net, sim_fabric_lid_slot(ctx->lid), &at);
    *ipv4 = at.sin_addr.s_addr;
    *port = at.sin_port;
    return 0;
}
