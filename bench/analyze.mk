# The analyses' benchmark: report, stats, -c report and --diff on a large
# synthetic trace, and the report against heaptrack_print on one traced
# program (make bench).
BENCHES += bench/analyze
