/*
 * The strand memory domain: one per (software or hardware) mlx5 device.
 */
#ifndef STRAND_MD_H_
#define STRAND_MD_H_

#include <uct/base/uct_md.h>

#define STRAND_COMPONENT_NAME "strand"

/* Which device backend the MD opens (UCX_STRAND_DEVICE_TYPE). */
typedef enum strand_dev_type {
    STRAND_DEV_TYPE_AUTO, /* hardware mlx5 when present, else software */
    STRAND_DEV_TYPE_HW,
    STRAND_DEV_TYPE_SIM,
    STRAND_DEV_TYPE_LAST
} strand_dev_type_t;

typedef struct strand_md_config {
    uct_md_config_t   super;
    strand_dev_type_t dev_type;
} strand_md_config_t;

typedef struct strand_md {
    uct_md_t          super;
    strand_dev_type_t dev_type;
} strand_md_t;

extern uct_component_t strand_component;
extern ucs_config_field_t strand_md_config_table[];

#endif
