/*
 * The software device's context: configuration, fabric port, the engine
 * lock, the progress thread and asynchronous events.
 */
#include "sim.h"
#include "sim_clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

uint64_t sim_now_ns(void)
{
    return sim_clock_ns();
}

static uint64_t sim_env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    char *end;
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

void sim_config_read(sim_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->mtu = (uint32_t)sim_env_u64("STRAND_SIM_MTU", 4096);
    if ((cfg->mtu < 256) || (cfg->mtu > 4096) || (cfg->mtu & (cfg->mtu - 1))) {
        fprintf(stderr, "smlx5: STRAND_SIM_MTU=%u is not one of 256, 512, "
                "1024, 2048, 4096; using 4096\n", cfg->mtu);
        cfg->mtu = 4096;
    }
    cfg->timeout_ns_override = sim_env_u64("STRAND_SIM_TIMEOUT_NS", 0);
    cfg->rnr_timer_ns        = sim_env_u64("STRAND_SIM_RNR_NS", 0);
    cfg->progress_thread     = (int)sim_env_u64("STRAND_SIM_PROGRESS_THREAD", 1);
    cfg->atomics             = (int)sim_env_u64("STRAND_SIM_ATOMICS", 1);
    sim_fault_config_read(cfg);
}

/* IBA timeout encoding: 4.096 us * 2^timeout (0 = infinite: we use 2^31). */
uint64_t sim_timeout_ns(const smlx5_qp_t *qp)
{
    if (qp->ctx->cfg.timeout_ns_override != 0) {
        return qp->ctx->cfg.timeout_ns_override;
    }
    if (qp->timeout == 0) {
        return 4096ull << 31;
    }
    return 4096ull << qp->timeout;
}

/* IBA RNR timer encoding (table 45), in microseconds, indexed by the 5-bit
 * field; 0 means 655.36 ms. */
uint64_t sim_rnr_timer_ns(const smlx5_context_t *ctx, uint8_t t)
{
    static const uint32_t us[32] = {
        655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
        1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
        40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520
    };

    if (ctx->cfg.rnr_timer_ns != 0) {
        return ctx->cfg.rnr_timer_ns;
    }
    return (uint64_t)us[t & 31] * 1000ull;
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
    if (!sim_fabric_rx_pending(ctx->port)) {
        return 0;
    }
progress:
    if (pthread_mutex_trylock(&ctx->lock) != 0) {
        return 0; /* the progress thread is at it */
    }
    count = sim_engine_progress(ctx);
    pthread_mutex_unlock(&ctx->lock);
    return count;
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
    uint64_t deadline, now, busy_until = 0;
    int64_t timeout;
    bool backlog;
    int count;

    while (!atomic_load(&ctx->stop)) {
        pthread_mutex_lock(&ctx->lock);
        count    = sim_engine_progress(ctx);
        deadline = ctx->next_deadline_ns;
        backlog  = ctx->tx_backlog;
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
        if (now < busy_until) {
            /* traffic is flowing: poll without sleeping (yield now and
             * then: the process's own threads may share the core) */
            unsigned spins = 0;
            while (!sim_fabric_rx_pending(ctx->port) &&
                   !atomic_load(&ctx->stop)) {
                if ((++spins & 255) == 0) {
                    now = sim_now_ns();
                    if ((now >= busy_until) || (deadline && (now >= deadline))) {
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

static smlx5_context_t *sim_the_context;
static pthread_mutex_t sim_open_lock = PTHREAD_MUTEX_INITIALIZER;

smlx5_context_t *smlx5_open_device(const char *name)
{
    smlx5_context_t *ctx;
    pthread_mutexattr_t mattr;
    int ret;

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

    sim_config_read(&ctx->cfg);
    ret = sim_fabric_attach(NULL, &ctx->fabric);
    if (ret < 0) {
        goto err_free;
    }
    ret = sim_fabric_port_open(ctx->fabric, &ctx->port);
    if (ret < 0) {
        goto err_detach;
    }
    ctx->lid = sim_fabric_port_lid(ctx->port);
    /* GID: link-local prefix + pid/LID, unique on the fabric. */
    ctx->gid.global.subnet_prefix = htobe64(0xfe80000000000000ull);
    ctx->gid.global.interface_id  = htobe64(((uint64_t)getpid() << 16) |
                                            ctx->lid);
    /* with a fault seed, runs draw the same faults (per LID) */
    ctx->rng     = ctx->cfg.seed ?
                   (ctx->cfg.seed * 0x9e3779b97f4a7c15ull) ^ ctx->lid :
                   sim_now_ns() ^ ((uint64_t)getpid() << 32);
    ctx->rng     = ctx->rng ? ctx->rng : 1;
    ctx->key_gen = (uint32_t)(ctx->rng & 0xff);
    ctx->refs    = 1;

    pthread_mutexattr_init(&mattr);
    pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&ctx->lock, &mattr);
    pthread_mutexattr_destroy(&mattr);

    ctx->async_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ctx->async_fd < 0) {
        ret = -errno;
        goto err_port;
    }

    if (ctx->cfg.progress_thread) {
        ret = -pthread_create(&ctx->thread, NULL, sim_progress_thread, ctx);
        if (ret < 0) {
            goto err_fd;
        }
        ctx->thread_running = true;
    }

    sim_the_context = ctx;
    pthread_mutex_unlock(&sim_open_lock);
    return ctx;

err_fd:
    close(ctx->async_fd);
err_port:
    pthread_mutex_destroy(&ctx->lock);
    sim_fabric_port_close(ctx->port);
err_detach:
    sim_fabric_detach(ctx->fabric);
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
    sim_fabric_port_close(ctx->port);
    sim_fabric_detach(ctx->fabric);
    close(ctx->async_fd);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return 0;
}

int smlx5_query_device(smlx5_context_t *ctx, smlx5_device_caps_t *caps)
{
    memset(caps, 0, sizeof(*caps));
    snprintf(caps->attr.fw_ver, sizeof(caps->attr.fw_ver), "strand-sim-1");
    caps->attr.vendor_id       = 0x02c9;  /* Mellanox */
    caps->attr.vendor_part_id  = 4123;    /* ConnectX-6 */
    caps->attr.max_mr_size     = 1ull << 40;
    caps->attr.max_qp          = SIM_MAX_QPS;
    caps->attr.max_qp_wr       = SIM_SQ_MAX_WQE;
    caps->attr.max_sge         = SIM_MAX_SGE;
    caps->attr.max_cq          = SIM_MAX_CQS;
    caps->attr.max_cqe         = 1 << 22;
    caps->attr.max_mr          = SIM_MAX_MRS;
    caps->attr.max_pd          = 1 << 16;
    caps->attr.max_qp_rd_atom  = SIM_MAX_RD_ATOMIC;
    caps->attr.max_qp_init_rd_atom = SIM_MAX_RD_ATOMIC;
    caps->attr.max_srq         = SIM_MAX_SRQS;
    caps->attr.max_srq_wr      = 1 << 15;
    caps->attr.max_srq_sge     = SIM_MAX_SGE;
    caps->attr.atomic_cap      = ctx->cfg.atomics ? IBV_ATOMIC_HCA :
                                                  IBV_ATOMIC_NONE;
    caps->attr.phys_port_cnt   = 1;
    caps->max_inline_data      = SIM_MAX_INLINE;
    caps->max_mtu              = ctx->cfg.mtu;
    caps->dci_max_log_num_concurent = 4;
    caps->dci_max_log_num_errored   = 3;
    caps->tm_max_num_tags      = 1023;
    caps->tm_max_ops           = 128;
    caps->tm_max_sge           = 1;
    caps->tm_max_rndv_hdr_size = 64;
    caps->flags = SMLX5_CAP_CQE_V1;
    if (ctx->cfg.atomics) {
        caps->flags |= SMLX5_CAP_MASKED_ATOMICS | SMLX5_CAP_ATOMIC_REPLY_BE;
    }
    return 0;
}

static enum ibv_mtu sim_mtu_enum(uint32_t mtu)
{
    switch (mtu) {
    case 256:  return IBV_MTU_256;
    case 512:  return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default:   return IBV_MTU_4096;
    }
}

int smlx5_query_port(smlx5_context_t *ctx, uint8_t port,
                     struct ibv_port_attr *attr)
{
    if (port != SMLX5_PORT_NUM) {
        return EINVAL;
    }
    memset(attr, 0, sizeof(*attr));
    attr->state       = IBV_PORT_ACTIVE;
    attr->max_mtu     = sim_mtu_enum(ctx->cfg.mtu);
    attr->active_mtu  = attr->max_mtu;
    attr->gid_tbl_len = 1;
    attr->lid         = ctx->lid;
    attr->sm_lid      = 1;
    attr->lmc         = 0;
    attr->max_msg_sz  = 1u << 30;
    attr->pkey_tbl_len = 1;
    attr->link_layer  = IBV_LINK_LAYER_INFINIBAND;
    attr->active_width = 4;   /* 4x */
    attr->active_speed = 32;  /* EDR */
    attr->phys_state  = 5;    /* LinkUp */
    return 0;
}

int smlx5_query_gid(smlx5_context_t *ctx, uint8_t port, int index,
                    union ibv_gid *gid)
{
    if ((port != SMLX5_PORT_NUM) || (index != 0)) {
        return EINVAL;
    }
    *gid = ctx->gid;
    return 0;
}

/* ------------------------------------------------------- async events */

void sim_async_push(smlx5_context_t *ctx, enum ibv_event_type type,
                    void *element)
{
    sim_async_queue_t *q = &ctx->async;
    smlx5_async_event_t *ev;
    uint64_t one = 1;

    if (q->tail - q->head >= 256) {
        return; /* queue full: the oldest events are kept */
    }
    ev       = &q->ev[q->tail++ % 256];
    ev->type = type;
    switch (type) {
    case IBV_EVENT_CQ_ERR:
        ev->element.cq = element;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        ev->element.srq = element;
        break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
        ev->element.port_num = SMLX5_PORT_NUM;
        break;
    default:
        ev->element.qp = element;
        break;
    }
    if (write(ctx->async_fd, &one, sizeof(one)) < 0) {
        /* counter saturated: readers still find the queued event */
    }
}

int smlx5_async_fd(smlx5_context_t *ctx)
{
    return ctx->async_fd;
}

int smlx5_get_async_event(smlx5_context_t *ctx, smlx5_async_event_t *ev)
{
    sim_async_queue_t *q = &ctx->async;
    uint64_t cnt;
    int ret = EAGAIN;

    pthread_mutex_lock(&ctx->lock);
    if (q->head != q->tail) {
        *ev = q->ev[q->head++ % 256];
        ret = 0;
    }
    if (q->head == q->tail) {
        if (read(ctx->async_fd, &cnt, sizeof(cnt)) < 0) {
            /* nothing to clear */
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return ret;
}
