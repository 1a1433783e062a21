# launcher/alloctrace-supervise.c: the launcher's supervisor (a child
# subreaper that passes signals on and waits for a daemon's whole tree).
LAUNCHER_HELPERS += alloctrace-supervise
