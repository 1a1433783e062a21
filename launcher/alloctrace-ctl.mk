# launcher/alloctrace-ctl.mk: the launcher's client of the control path
# (docs/tracer.md, "Talking to a running tracer"): sends one request to
# @alloctrace.PID and prints the answer.
LAUNCHER_HELPERS += alloctrace-ctl
