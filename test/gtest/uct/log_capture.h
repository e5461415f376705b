/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The error-level lines UCX logs while a test looks (scoped_log_capture).
 */
#ifndef STRAND_TEST_LOG_CAPTURE_H_
#define STRAND_TEST_LOG_CAPTURE_H_

#include <ucs/debug/log_def.h>

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

/* Error-level log lines while it lives (kept from the output): how many
 * contain a string. */
class scoped_log_capture {
public:
    scoped_log_capture()
    {
        lines().clear();
        ucs_log_push_handler(handler);
    }
    ~scoped_log_capture()
    {
        ucs_log_pop_handler();
    }
    size_t count(const char *what) const
    {
        size_t n = 0;
        for (auto &l : lines()) {
            n += (l.find(what) != std::string::npos);
        }
        return n;
    }

private:
    static std::vector<std::string> &lines()
    {
        static std::vector<std::string> l;
        return l;
    }
    static ucs_log_func_rc_t
    handler(const char *, unsigned, const char *, ucs_log_level_t level,
            const ucs_log_component_config_t *, const char *message, va_list ap)
    {
        char buf[512];

        if (level > UCS_LOG_LEVEL_ERROR) {
            return UCS_LOG_FUNC_RC_CONTINUE;
        }
        vsnprintf(buf, sizeof(buf), message, ap);
        lines().push_back(buf);
        return UCS_LOG_FUNC_RC_STOP;
    }
};

#endif
