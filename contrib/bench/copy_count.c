/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * copy_count.so, preloaded (LD_PRELOAD) into a process: counts the bytes
 * it moves with memcpy / memmove calls of at least 256 bytes (the payload
 * copies: UCP's pack and unpack, the software device's copies into and out
 * of its rings, UCX's shared-memory FIFO) and prints at exit
 *   copy_count PID BYTES CALLS
 * on stderr. Copies inside libc itself and the kernel's
 * (process_vm_readv) are not seen. Used by mpi_copies.sh.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define COPY_COUNT_MIN 256

typedef void *(*copy_fn_t)(void *, const void *, size_t);

static _Atomic unsigned long long copy_bytes, copy_calls;
static copy_fn_t                  real_memcpy, real_memmove;
static __thread int resolving; /* dlsym may copy: byte by byte meanwhile */

static void *copy_bytewise(void *dst, const void *src, size_t n)
{
    unsigned char       *d = dst;
    const unsigned char *s = src;

    if (d < s) {
        for (size_t i = 0; i < n; ++i) {
            d[i] = s[i];
        }
    } else {
        while (n-- > 0) {
            d[n] = s[n];
        }
    }
    return dst;
}

static copy_fn_t copy_resolve(copy_fn_t *fn, const char *name)
{
    if (*fn == NULL) {
        if (resolving) {
            return copy_bytewise;
        }
        resolving = 1;
        *fn       = (copy_fn_t)dlsym(RTLD_NEXT, name);
        resolving = 0;
    }
    return *fn;
}

static void copy_account(size_t n)
{
    if (n >= COPY_COUNT_MIN) {
        copy_bytes += n;
        copy_calls += 1;
    }
}

void *memcpy(void *dst, const void *src, size_t n)
{
    copy_account(n);
    return copy_resolve(&real_memcpy, "memcpy")(dst, src, n);
}

void *memmove(void *dst, const void *src, size_t n)
{
    copy_account(n);
    return copy_resolve(&real_memmove, "memmove")(dst, src, n);
}

__attribute__((destructor)) static void copy_report(void)
{
    char line[96];
    int  len = snprintf(line, sizeof(line), "copy_count %d %llu %llu\n",
                        (int)getpid(), (unsigned long long)copy_bytes,
                        (unsigned long long)copy_calls);

    if (write(2, line, (size_t)len) < 0) {
        /* nothing to do about it at exit */
    }
}
