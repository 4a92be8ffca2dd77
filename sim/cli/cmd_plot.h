/*
 * cmd_plot.h -- `kvsim plot`: gnuplot scripts, images and index.html from result folders (docs/plot.md).
 * (argv[0] is "plot"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_PLOT_H
#define SIM_CLI_CMD_PLOT_H

int plot_main(int argc, char **argv);

#endif
