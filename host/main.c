/* wharfd: the worker host. Parses the command line, loads the manifest and
 * the plugins, and either checks them (--check) or serves. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "client_ids.h"
#include "config.h"
#include "loader.h"
#include "log.h"
#include "supervisor.h"
#include "quote.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: wharfd --config FILE [--check]\n"
            "  -c, --config FILE  the manifest (INI), e.g. etc/wharf.ini\n"
            "  -n, --check        load the manifest and every plugin (init, "
            "then fini),\n"
            "                     print one line per served type, exit\n"
            "  -h, --help         this text\n"
            "  -V, --version      print the version\n");
}

/* A note on stderr for each plugin held to one thread although [host]
 * threads asks for more: not an error (its tasks still run, one at a
 * time in each worker), but not what the key suggests either. */
static void note_single_threaded(const loader *ld)
{
    char file[256], name[64], path[512];

    quote_text(ld->cfg->file, file, sizeof(file));
    for (size_t i = 0; i < ld->n_plugins; i++) {
        const loaded_plugin *plugin = &ld->plugins[i];

        if (!loader_single_threaded(ld, plugin))
            continue;
        quote_text(plugin->section ? plugin->section->name : plugin->name, name,
                   sizeof(name));
        quote_text(plugin->path, path, sizeof(path));
        fprintf(stderr,
                "%s:%d: note: threads = %u, but %s%s%s (%s) has not opted in "
                "to threads (.thread_safe = 1 in its WHARF_PLUGIN): it runs "
                "1 thread in each worker\n",
                file, ld->cfg->threads_line, ld->cfg->threads,
                plugin->section ? "[plugin." : "plugin ", name,
                plugin->section ? "]" : "", path);
    }
}

/* --check: everything startup does short of touching Redis. Prints
 * "type plugin version path" per served type, and a note per plugin that
 * [host] threads cannot give threads to. */
static int check(const config *cfg)
{
    char err[CONFIG_ERR_LEN];
    loader *ld = NULL;
    int status = EX_CONFIG;

    if (loader_open(cfg, &ld, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        goto out;
    }
    ld->phase = WHARF_PHASE_CHECK;
    if (loader_init(ld, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        goto out;
    }
    loader_fini(ld);
    note_single_threaded(ld);
    for (size_t i = 0; i < ld->n_routes; i++) {
        const route *r = &ld->routes[i];
        printf("%s %s %s %s\n", r->type, r->plugin->name,
               r->plugin->desc->version ? r->plugin->desc->version : "-",
               r->plugin->path);
    }
    if (ld->n_routes == 0) {
        char file[256];
        quote_text(cfg->file, file, sizeof(file));
        fprintf(stderr, "%s: no plugin serves any type\n", file);
    }
    status = ld->n_routes == 0 ? EX_CONFIG : EX_OK;
out:
    loader_close(ld);
    return status;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"check", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *config_path = NULL;
    int check_only = 0;
    char err[CONFIG_ERR_LEN], quoted[256];
    config *cfg = NULL;
    int opt, status;

    opterr = 0; /* our own one-line messages, with what was typed quoted */
    while ((opt = getopt_long(argc, argv, ":c:nhV", options, NULL)) != -1) {
        switch (opt) {
        case 'c':
            config_path = optarg;
            break;
        case 'n':
            check_only = 1;
            break;
        case 'h':
            usage(stdout);
            return EX_OK;
        case 'V':
            printf("wharfd %s (plugin ABI %d; loads ABI %d to %d)\n",
                   WHARF_VERSION, WHARF_PLUGIN_ABI, WHARF_PLUGIN_ABI_OLDEST,
                   WHARF_PLUGIN_ABI);
            return EX_OK;
        case ':':
            quote_text(argv[optind - 1], quoted, sizeof(quoted));
            fprintf(stderr, "wharfd: option '%s' needs a value\n", quoted);
            usage(stderr);
            return EX_USAGE;
        default:
            quote_text(argv[optind - 1], quoted, sizeof(quoted));
            fprintf(stderr, "wharfd: unknown option '%s'\n", quoted);
            usage(stderr);
            return EX_USAGE;
        }
    }
    if (optind < argc) {
        quote_text(argv[optind], quoted, sizeof(quoted));
        fprintf(stderr, "wharfd: unexpected argument '%s'\n", quoted);
        usage(stderr);
        return EX_USAGE;
    }
    if (!config_path) {
        fprintf(stderr, "wharfd: --config FILE is required\n");
        usage(stderr);
        return EX_USAGE;
    }
    if (config_load(config_path, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return EX_CONFIG;
    }
    log_setup(cfg->log_level, cfg->log_format);
    if (!check_only)
        return supervisor_run(config_path, cfg); /* it owns cfg */
    status = check(cfg);
    config_free(cfg);
    return status;
}
