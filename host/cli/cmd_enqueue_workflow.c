/* wharf enqueue TYPE PAYLOAD --after TYPE:ID[,TYPE:ID...]
 *               [--on-parent-dead dead|run]
 * wharf enqueue TYPE --file FILE --group G --then TYPE2 [PAYLOAD]
 * The workflow forms of enqueue, through <wharf/client_workflow.h>. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <wharf/client_workflow.h>

#include "cmd_enqueue_workflow.h"

/* Parents at most in one --after: a child's list rides in its envelope. */
#define AFTER_MAX 1000

int cli_enqueue_after(cli *ctx, const wharf_enqueue_opts *task,
                      const char *after, const char *on_dead)
{
    wharf_parent parents[AFTER_MAX];
    wharf_after_opts o;
    wharf_enqueue_reply reply;
    wharf_client_status status;
    char *list = NULL, *item, *save = NULL;
    size_t n = 0;
    int code;

    if (on_dead && strcmp(on_dead, "dead") != 0 && strcmp(on_dead, "run") != 0)
        return cli_fail(ctx, EX_USAGE,
                        "--on-parent-dead is dead or run, not '%s'", on_dead);
    if (task->delay_ms)
        return cli_fail(ctx, EX_USAGE,
                        "--after and --delay do not go together: a child "
                        "runs when its parents are done");
    if (!(list = strdup(after)))
        return cli_fail(ctx, EX_OSERR, "out of memory");
    for (item = strtok_r(list, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        if (!colon || colon == item || !colon[1]) {
            code =
                cli_fail(ctx, EX_DATAERR, "--after: '%s' is not TYPE:ID", item);
            goto out;
        }
        if (n == AFTER_MAX) {
            code = cli_fail(ctx, EX_DATAERR, "--after: more than %d parents",
                            AFTER_MAX);
            goto out;
        }
        *colon = '\0';
        parents[n].type = item;
        parents[n].id = colon + 1;
        if ((code = cli_check_type(ctx, item)) != 0 ||
            (code = cli_check_id(ctx, colon + 1)) != 0)
            goto out;
        n++;
    }
    if (n == 0) {
        code = cli_fail(ctx, EX_DATAERR, "--after names no parent");
        goto out;
    }
    if ((code = cli_connect(ctx)) != 0)
        goto out;
    memset(&o, 0, sizeof(o));
    o.type = task->type;
    o.payload = task->payload;
    o.payload_len = task->payload_len;
    o.id = task->id;
    o.trace = task->trace;
    o.parents = parents;
    o.n_parents = n;
    o.run_if_parent_dead = on_dead && strcmp(on_dead, "run") == 0;
    status = wharf_enqueue_after(ctx->client, &o, &reply);
    if (status == WHARF_CLIENT_OK || status == WHARF_CLIENT_DUPLICATE)
        printf("%s\n", reply.id);
    if (status == WHARF_CLIENT_DUPLICATE)
        code = cli_fail(ctx, EX_OK,
                        "duplicate: task '%s' is already "
                        "enqueued",
                        reply.id);
    else if (status != WHARF_CLIENT_OK)
        code = cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
out:
    free(list);
    return code;
}

/* The lines of path ("-": stdin) as payloads: the newline (and a CR
 * before it) is not part of one, an empty line is skipped. 0 with *data
 * (caller frees) and *members (caller frees) set, or the exit code. */
static int read_members(cli *ctx, const char *path, const char *type,
                        char **data, wharf_enqueue_opts **members, size_t *n)
{
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0, count = 0;
    wharf_enqueue_opts *m;
    char *p, *end;

    if (!in)
        return cli_fail(ctx, EX_NOINPUT, "cannot open '%s': %s", path,
                        strerror(errno));
    for (;;) {
        size_t got;
        if (cap - len < 65536) {
            char *grown = realloc(buf, cap ? cap * 2 : 131072);
            if (!grown) {
                free(buf);
                if (in != stdin)
                    fclose(in);
                return cli_fail(ctx, EX_OSERR, "out of memory");
            }
            buf = grown;
            cap = cap ? cap * 2 : 131072;
        }
        got = fread(buf + len, 1, cap - len - 1, in);
        len += got;
        if (got == 0)
            break;
    }
    if (in != stdin)
        fclose(in);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++)
        count += buf[i] == '\n';
    m = calloc(count + 1, sizeof(*m));
    if (!m) {
        free(buf);
        return cli_fail(ctx, EX_OSERR, "out of memory");
    }
    count = 0;
    for (p = buf; p < buf + len; p = end + 1) {
        size_t l;
        end = memchr(p, '\n', (size_t)(buf + len - p));
        if (!end)
            end = buf + len;
        l = (size_t)(end - p);
        if (l > 0 && p[l - 1] == '\r')
            l--;
        if (l == 0)
            continue;
        m[count].type = type;
        m[count].payload = p;
        m[count].payload_len = l;
        count++;
    }
    *data = buf;
    *members = m;
    *n = count;
    return 0;
}

int cli_enqueue_group(cli *ctx, const char *path, const char *type,
                      const char *group, const char *then_type,
                      const char *then_payload)
{
    wharf_enqueue_opts *members = NULL;
    wharf_enqueue_reply *replies = NULL;
    wharf_group_opts o;
    wharf_client_status status;
    char *data = NULL;
    size_t n = 0, duplicates = 0;
    int code;

    if ((code = cli_check_type(ctx, then_type)) != 0)
        return code;
    if ((code = read_members(ctx, path, type, &data, &members, &n)) != 0)
        return code;
    if (n == 0) {
        code = cli_fail(ctx, EX_DATAERR,
                        "group '%s' has no members (%s has no payload "
                        "line): nothing would ever end it",
                        group, path);
        goto out;
    }
    if ((code = cli_connect(ctx)) != 0)
        goto out;
    if (!(replies = calloc(n, sizeof(*replies)))) {
        code = cli_fail(ctx, EX_OSERR, "out of memory");
        goto out;
    }
    memset(&o, 0, sizeof(o));
    o.group = group;
    o.members = members;
    o.n_members = n;
    o.then_type = then_type;
    o.then_payload = then_payload ? then_payload : "";
    status = wharf_enqueue_group(ctx->client, &o, replies);
    if (status != WHARF_CLIENT_OK) {
        code = cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        printf("%s\n", replies[i].id);
        duplicates += replies[i].status == WHARF_CLIENT_DUPLICATE;
    }
    fprintf(stderr,
            "group %s: %zu members (%zu already enqueued); then %s "
            "group:%s\n",
            group, n, duplicates, then_type, group);
    code = EX_OK;
out:
    free(replies);
    free(members);
    free(data);
    return code;
}
