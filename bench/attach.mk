# Time to attach to a running process and to detach (alloctrace -p, --detach).
BENCHES += bench/attach
