/* The old name of node_scripts.h, for the files that still include it
 * (broker.c, supervisor.c, worker.c and eight tests): remove once they
 * include node_scripts.h and call node_scripts_all and
 * node_scripts_check. */
#ifndef WHARF_SCRIPTS_H
#define WHARF_SCRIPTS_H

#include "node_scripts.h"

#define scripts_all node_scripts_all
#define scripts_init node_scripts_check

#endif /* WHARF_SCRIPTS_H */
