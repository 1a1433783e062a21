# tests/programs/line0.awk: gives line 0 to the code of the statement
# marked by an asm comment AT_LINE0 in an assembly listing (clang -S):
# every .loc from the marker's own statement to the next call becomes
# ".loc FILE 0 COLUMN", as compilers write for code of no particular line.
# (GNU as drops line-0 rows; clang's integrated assembler keeps them.)
{ l[NR] = $0 }
/^[ \t]*\.loc[ \t]/ { last = NR }
/AT_LINE0/ { fix[last] = 1; m = 1 }
m && /^[ \t]*\.loc[ \t]/ { fix[NR] = 1 }
m && /call/ { m = 0 }
END {
    for (i = 1; i <= NR; i++) {
        if (fix[i]) {
            n = split(l[i], f, /[ \t]+/)
            for (k = 1; k <= n; k++) if (f[k] == ".loc") break
            l[i] = "\t.loc\t" f[k + 1] " 0 " f[k + 3]
        }
        print l[i]
    }
}
