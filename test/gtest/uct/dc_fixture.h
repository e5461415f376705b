/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dc_strand fixture: strand_uct (uct_fixture.h) on dc_strand, two
 * interfaces connected to each other's DCT. What is DC's alone (DCIs, TX
 * policies, streams, DC addresses) is tested on it; what the shared core
 * does on both transports, on strand_uct_tl.
 */
#ifndef STRAND_TEST_DC_FIXTURE_H_
#define STRAND_TEST_DC_FIXTURE_H_

#include "uct_fixture.h"

class dc_strand : public strand_uct {
protected:
    void SetUp() override
    {
        m_tl = "dc_strand";
        strand_uct::SetUp();
    }
};

#endif
