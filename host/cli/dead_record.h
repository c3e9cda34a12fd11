/* One dead task's record, read as every wharf dead command reads it
 * (docs/protocol.md): dead:<id>, else, for a record an older host wrote,
 * task:<id> unless the id waits in the delayed set (then task:<id> is a
 * new run's envelope, not the record). Read with ZSCORE and HGETALL only. */
#ifndef WHARF_CLI_DEAD_RECORD_H
#define WHARF_CLI_DEAD_RECORD_H

#include <hiredis/hiredis.h>

#include "cli.h"

typedef struct dead_record {
    redisReply *score;   /* ZSCORE dead id: when it died */
    redisReply *all;     /* HGETALL of the record: a hash, maybe empty */
    redisReply *delayed; /* ZSCORE delayed id, when it was asked */
    char key[KEY_MAX];   /* the key all was read from */
} dead_record;

/* Reads the record of id into r (zeroed first). 0 with r->all a hash,
 * empty when the record is gone (dead_record_gone says so); else the
 * exit code after saying why: 1 when the id is not dead. what names the
 * command in messages. r is to be freed with dead_record_free either
 * way. */
int dead_record_read(cli *ctx, const char *what, const char *type,
                     const char *id, dead_record *r);

/* Says that the record of a dead id is gone; returns 1 (CLI_NOT_FOUND). */
int dead_record_gone(cli *ctx, const char *type, const char *id,
                     const dead_record *r);

/* The value of field name in the record, or NULL. */
const redisReply *dead_record_field(const dead_record *r, const char *name);

/* Frees what r holds. */
void dead_record_free(dead_record *r);

#endif /* WHARF_CLI_DEAD_RECORD_H */
