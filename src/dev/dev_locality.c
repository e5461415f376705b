/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a hardware device sits in the machine: its PCI address, NUMA node
 * and nearby CPUs, from hwloc's topology (with I/O objects), or from sysfs
 * when hwloc cannot tell.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dev_hw.h"

#include <hwloc.h>
#include <hwloc/openfabrics-verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
dev_locality_from_bitmap(hwloc_const_bitmap_t set, strand_dev_locality_t *loc)
{
    int i;

    memset(loc->cpus, 0, sizeof(loc->cpus));
    hwloc_bitmap_foreach_begin(i, set)
    {
        strand_dev_cpu_set(loc, (unsigned)i);
    }
    hwloc_bitmap_foreach_end();
}

/* hwloc: the device's OS object, its PCI parent and its non-I/O ancestor
 * (the package or NUMA node it hangs off). 0 when found. */
static int dev_locality_hwloc(const char *ibname, strand_dev_locality_t *loc)
{
    hwloc_topology_t topo;
    hwloc_obj_t      osdev, pci, anc;
    int              ret = -1;

    if (hwloc_topology_init(&topo) != 0) {
        return -1;
    }
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        goto out;
    }
    osdev = hwloc_ibv_get_device_osdev_by_name(topo, ibname);
    if (osdev == NULL) {
        goto out;
    }
    for (pci = osdev->parent;
         (pci != NULL) && (pci->type != HWLOC_OBJ_PCI_DEVICE);
         pci = pci->parent) {
    }
    if (pci != NULL) {
        snprintf(loc->pci_bdf, sizeof(loc->pci_bdf), "%04x:%02x:%02x.%01x",
                 pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                 pci->attr->pcidev.dev, pci->attr->pcidev.func);
    }
    anc = hwloc_get_non_io_ancestor_obj(topo, osdev);
    if ((anc != NULL) && (anc->cpuset != NULL) &&
        !hwloc_bitmap_iszero(anc->cpuset)) {
        dev_locality_from_bitmap(anc->cpuset, loc);
        if ((anc->nodeset != NULL) &&
            (hwloc_bitmap_weight(anc->nodeset) == 1)) {
            loc->numa_node = hwloc_bitmap_first(anc->nodeset);
        }
        ret = 0;
    }
out:
    hwloc_topology_destroy(topo);
    return ret;
}

/* sysfs: <ibdev>/device/{local_cpulist,numa_node} and the "device" link,
 * whose target names the PCI function. */
static void
dev_locality_sysfs(const char *sysfs_path, strand_dev_locality_t *loc)
{
    char        path[320], target[512], line[4096];
    const char *bdf;
    unsigned    lo, hi, c;
    ssize_t     len;
    char       *p;
    FILE       *f;

    snprintf(path, sizeof(path), "%s/device", sysfs_path);
    len = readlink(path, target, sizeof(target) - 1);
    if ((len > 0) && (loc->pci_bdf[0] == '\0')) {
        target[len] = '\0';
        bdf         = strrchr(target, '/');
        snprintf(loc->pci_bdf, sizeof(loc->pci_bdf), "%.15s",
                 (bdf != NULL) ? bdf + 1 : target);
    }
    snprintf(path, sizeof(path), "%s/device/numa_node", sysfs_path);
    f = fopen(path, "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &loc->numa_node) != 1) {
            loc->numa_node = -1;
        }
        fclose(f);
    }
    snprintf(path, sizeof(path), "%s/device/local_cpulist", sysfs_path);
    f = fopen(path, "r");
    if ((f == NULL) || (fgets(line, sizeof(line), f) == NULL)) {
        if (f != NULL) {
            fclose(f);
        }
        return; /* keep what we had: all CPUs */
    }
    fclose(f);
    memset(loc->cpus, 0, sizeof(loc->cpus));
    for (p = strtok(line, ",\n"); p != NULL; p = strtok(NULL, ",\n")) {
        if (sscanf(p, "%u-%u", &lo, &hi) != 2) {
            if (sscanf(p, "%u", &lo) != 1) {
                continue;
            }
            hi = lo;
        }
        for (c = lo; (c <= hi) && (c < STRAND_DEV_MAX_CPUS); ++c) {
            strand_dev_cpu_set(loc, c);
        }
    }
}

void strand_dev_hw_locality(const strand_dev_info_t *info,
                            strand_dev_locality_t   *loc)
{
    strand_dev_locality_all(loc);
    if ((dev_locality_hwloc(info->name, loc) != 0) &&
        (info->sysfs_path[0] != '\0')) {
        dev_locality_sysfs(info->sysfs_path, loc);
    }
}
