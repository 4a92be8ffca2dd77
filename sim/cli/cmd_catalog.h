/*
 * cmd_catalog.h -- `kvsim catalog`: list or show the model and GPU catalogs (docs/catalog.md).
 * (argv[0] is "catalog"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_CATALOG_H
#define SIM_CLI_CMD_CATALOG_H

int catalog_main(int argc, char **argv);

#endif
