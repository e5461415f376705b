/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The paths of the build tree the suite was built in, in a file of their
 * own: the rest of the suite's objects do not depend on where the tree is.
 */
extern const char strand_build_plugin[];
const char        strand_build_plugin[] = STRAND_BUILD_PLUGIN;
