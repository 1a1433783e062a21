/*
 * postproc/gate/gate_run.h: the gate mode of alloctrace-postproc. main.c hands
 * over when its first argument is "--gate": the gate has its own options
 * and reads many traces, so it does not fit the one-input stage chain.
 */
#ifndef AT_GATE_RUN_H
#define AT_GATE_RUN_H

/* argv[0] is "--gate" (or the program name); returns the exit status. */
int at_gate_main(int argc, char **argv);

#endif
