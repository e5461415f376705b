#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Reading callgrind's files for contrib/bench/compare.sh (sourced; its test
# sources it too). Plain POSIX awk: Debian's default awk is mawk, which has
# no strtonum and turns a number subscript above 2^31 into "%.6g" text, so
# code addresses are kept as "%.0f" strings, never as number subscripts.

# cg_tree FN TREE: "calls total sim doorbells EDGE=COST..." from the output of
# callgrind_annotate --inclusive=yes --tree=calling: calls = the calls into
# FN, total = their inclusive cost, sim = the inclusive cost of the calls
# from non-device code into device functions (SIM_FUNC_RE: the doorbell
# processing the software device does inside the post), doorbells = the
# calls FN makes into the device, itself or through FN_general, its general
# path out of line (one per WQE posted).
cg_tree() {
    awk -v fn="$1" -v re="$SIM_FUNC_RE" '
        # "COST (PCT%)  *  FILE:FUNCTION [OBJ]" starts the block of a caller,
        # "COST (PCT%)  >   FILE:FUNCTION (CALLSx) [OBJ]" is one of its callees
        { s = $0; sub(/\( *[0-9.]+%\)/, "", s)
          if (!match(s, /^ *[0-9,]+ +[*>] +/)) next
          split(substr(s, 1, RLENGTH), h, " "); rest = substr(s, RLENGTH + 1)
          cost = h[1]; gsub(/,/, "", cost); n = 0
          if (match(rest, / \([0-9,]+x\)/)) {
              n = substr(rest, RSTART + 2, RLENGTH - 4); gsub(/,/, "", n)
              rest = substr(rest, 1, RSTART - 1)
          }
          sub(/ \[[^]]*\] *$/, "", rest)
          i = index(rest, ":"); name = i ? substr(rest, i + 1) : rest }
        h[2] == "*" { caller = name; next }
        h[2] == ">" { if (name == fn && caller != fn) { calls += n; total += cost }
                      if (caller !~ re && name ~ re) {
                          sim += cost; via[caller "->" name] += cost
                          if ((caller == fn) || (caller == fn "_general"))
                              db += n } }
        END { if (calls == 0) exit 1
              printf "%.0f %.0f %.0f %.0f", calls, total, sim, db
              for (k in via) printf " %s=%.0f", k, via[k]
              printf "\n" }' "$2"
}

# The awk function both readers of callgrind's own files use: a name in
# them is "(id) name" where it is defined, "(id)" where it is referred to.
CG_NAME_OF='
        function name_of(t,   id) {
            if (match(t, /^\([0-9]+\)/)) {
                id = substr(t, 2, RLENGTH - 2)
                if (length(t) > RLENGTH) names[id] = substr(t, RLENGTH + 2)
                return names[id]
            }
            return t
        }'

# cg_fast_len FN OUT DOORBELLS: how many instructions long FN's fast path
# is: the instructions of FN itself (inlined code included, callees not)
# that callgrind's OUT (--dump-instr=yes) counts at least 0.9 x DOORBELLS
# times. The calls it refused or passed to the general path run other
# instructions, except the shared checks, which a fast post runs too. An
# 8-byte post has no loop, so each of its instructions runs once a post.
cg_fast_len() {
    awk -v fn="$1" -v db="$3" "$CG_NAME_OF"'
        /^fn=/ { cur = name_of(substr($0, 4)); next }
        /^calls=/ { skip = 1; next }
        function hex(t,   i, v) {     # mawk has no strtonum
            v = 0
            for (i = 3; i <= length(t); ++i)
                v = v * 16 + index("0123456789abcdef", substr(t, i, 1)) - 1
            return v
        }
        /^[0-9+*-]/ {
            a = $1
            if (a ~ /^0x/) addr = hex(a)
            else if (a ~ /^\+/) addr += substr(a, 2) + 0
            else if (a ~ /^-/) addr -= substr(a, 2) + 0
            if (skip) { skip = 0; next }
            if (cur == fn && NF > 1) cost[sprintf("%.0f", addr)] += $NF
        }
        END { if (db < 1) exit 1
              for (a in cost) n += (cost[a] >= 0.9 * db)
              if (n < 1) exit 1
              print n }' "$2"
}


# cg_arcs FROM TO OUT...: "COST CALLS" of the calls from a function whose
# name matches the regular expression FROM into one whose name matches TO,
# summed over callgrind's OUT files (the processes of one run): COST is
# their inclusive cost, CALLS how many. FROM "!RE": a caller whose name does
# not match RE; with TO the same RE, the cost of the set's outermost calls,
# each instruction under them counted once however the set nests.
cg_arcs() {
    from=$1 to=$2
    shift 2
    awk -v from="$from" -v to="$to" "$CG_NAME_OF"'
        function from_ok(f) {
            if (substr(from, 1, 1) == "!") return f !~ substr(from, 2)
            return f ~ from
        }
        FNR == 1 { split("", names); arc = 0 }   # ids are per file
        /^fn=/ { cur = name_of(substr($0, 4)); next }
        /^cfn=/ { callee = name_of(substr($0, 5)); next }
        /^calls=/ { split(substr($0, 7), c, " ")
                    arc = from_ok(cur) && (callee ~ to); n = c[1]; next }
        /^[0-9+*-]/ { if (arc) { cost += $NF; calls += n }
                      arc = 0 }
        END { printf "%.0f %.0f\n", cost, calls }' "$@"
}
