#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Circles of calls between object files, read from their symbols alone:
#   test/shell/call_circles.sh MAX OBJECT...
# File A calls file B when A leaves undefined a symbol B defines (`nm`:
# functions and data both). Files that reach one another through such calls
# form a circle; every circle of more than MAX files is printed, one line
# each ("N files: a.o b.o ..."), followed by the calls that tie it ("a.o ->
# b.o: sym ..."). Exit 1 when one is printed. Static functions and inline
# functions of headers are no calls between files, as in the linked code.
max=$1
shift
[ $# -gt 0 ] || { echo "usage: $0 MAX OBJECT..." >&2; exit 2; }
for o; do
    # "FILE D SYMBOL" / "FILE U SYMBOL"; a libtool object's name loses its
    # library prefix (libuct_strand_la-ep_ops.o -> ep_ops.o)
    n=$(basename "$o"); n=${n#*_la-}
    nm "$o" | awk -v f="$n" '
        NF == 2 && $1 == "U" { print f, "U", $2; next }
        NF == 3 && $2 ~ /^[TDBRVWGS]$/ { print f, "D", $3 }'
done | awk -v max="$max" '
    $2 == "D" { def[$3] = $1; files[$1] = 1; next }
    { use[$1, $3] = 1; files[$1] = 1 }
    END {
        n = 0
        for (f in files) name[++n] = f
        for (k in use) {
            split(k, p, SUBSEP)
            if (!(p[2] in def) || def[p[2]] == p[1]) continue
            edge[p[1], def[p[2]]] = 1
            why[p[1], def[p[2]]] = why[p[1], def[p[2]]] " " p[2]
        }
        # reach: the transitive closure (Warshall; a few dozen files)
        for (i = 1; i <= n; ++i) for (j = 1; j <= n; ++j)
            reach[i, j] = ((name[i], name[j]) in edge)
        for (k = 1; k <= n; ++k) for (i = 1; i <= n; ++i)
            if (reach[i, k]) for (j = 1; j <= n; ++j)
                if (reach[k, j]) reach[i, j] = 1
        bad = 0
        for (i = 1; i <= n; ++i) {
            if (done[i]) continue
            members = name[i]; size = 1; idx[1] = i
            for (j = i + 1; j <= n; ++j)
                if (reach[i, j] && reach[j, i]) {
                    done[j] = 1; members = members " " name[j]; idx[++size] = j
                }
            if (size <= max) continue
            bad = 1
            print size " files: " members
            for (a = 1; a <= size; ++a) for (b = 1; b <= size; ++b)
                if ((name[idx[a]], name[idx[b]]) in edge)
                    print "  " name[idx[a]] " ->" " " name[idx[b]] ":" why[name[idx[a]], name[idx[b]]]
        }
        exit bad
    }'
