# The resolver's benchmark against eu-addr2line (make bench).
BENCHES += bench/resolve
