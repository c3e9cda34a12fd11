/* Real Redis deployments for one test, on free loopback ports: a Redis
 * Cluster (redis-server --cluster-enabled yes, joined with redis-cli
 * --cluster create), and a Sentinel set (a primary, its replica and three
 * redis-sentinel processes). Each dies with the test process. */
#ifndef WHARF_TEST_REDIS_CLUSTER_H
#define WHARF_TEST_REDIS_CLUSTER_H

#include <hiredis/hiredis.h>

#include "redis_server.h"

#define TEST_CLUSTER_MAX 6

typedef struct test_cluster {
    test_redis node[TEST_CLUSTER_MAX]; /* the first `primaries` start as
                                          primaries, then their replicas */
    int n, primaries;
    char url[512]; /* redis+cluster://127.0.0.1:P0,127.0.0.1:P1,... */
} test_cluster;

/* Starts primaries nodes (cluster-node-timeout 1 s) and, with replicas,
 * one replica each; joins them into one cluster, every slot served, and
 * waits until every node says cluster_state:ok. Aborts on failure. */
void test_cluster_start(test_cluster *c, int primaries, int replicas);

/* Stops every node. */
void test_cluster_stop(test_cluster *c);

/* A connection to node i (caller frees). */
redisContext *test_cluster_connect(const test_cluster *c, int i);

/* The index of the live node that is primary for slot, as a live node
 * sees it; -1 if none. */
int test_cluster_owner(const test_cluster *c, unsigned slot);

/* The slot of key (CLUSTER KEYSLOT). */
unsigned test_cluster_slot(const test_cluster *c, const char *key);

/* Moves slot from its primary to primary `to`, keys and all (CLUSTER
 * SETSLOT IMPORTING / MIGRATING, MIGRATE in batches, SETSLOT NODE on
 * every primary), as redis-cli --cluster reshard does. pause_ms is slept
 * between the MIGRATING mark and the first MIGRATE, so clients see the
 * slot half moved. */
void test_cluster_move_slot(test_cluster *c, unsigned slot, int to,
                            int pause_ms);

/* Kills node i with SIGKILL and waits (up to 30 s) until its replica has
 * taken over every slot it served and the cluster is ok again. */
void test_cluster_kill_primary(test_cluster *c, int i);

/* Starts killed node i again: it rejoins as a replica of whoever took its
 * slots; waits until its replication link is up. */
void test_cluster_revive(test_cluster *c, int i);

typedef struct test_sentinels {
    test_redis primary, replica;
    test_redis sentinel[3];
    char url[512]; /* redis+sentinel://127.0.0.1:S0,...,127.0.0.1:S2/wharf */
} test_sentinels;

/* Starts a primary, its replica and three sentinels watching it as
 * "wharf" (quorum 2, down-after 2 s), and waits until each sentinel knows
 * the replica and the other two. */
void test_sentinels_start(test_sentinels *s);

void test_sentinels_stop(test_sentinels *s);

/* The port of the master the sentinels name now. */
int test_sentinels_master_port(const test_sentinels *s);

/* Kills the primary (SIGKILL) and waits until the sentinels have promoted
 * the replica and it says it is a master. */
void test_sentinels_kill_primary(test_sentinels *s);

/* A planned switchover: SENTINEL FAILOVER wharf (sent again while the
 * sentinels find no good replica yet), then waits until the replica says
 * it is a master. Returns at once after that: the old primary still
 * answers as a master until the sentinels demote it, seconds later. Then
 * primary names the new master and replica the old one. */
void test_sentinels_switchover(test_sentinels *s);

/* After test_sentinels_switchover: waits (up to 90 s) until every
 * sentinel names the new master and the old one is its connected
 * replica. */
void test_sentinels_settle(test_sentinels *s);

/* Starts the killed primary again; the sentinels make it a replica of the
 * new master. Waits until the new master counts it as a connected
 * replica. */
void test_sentinels_revive(test_sentinels *s);

#endif /* WHARF_TEST_REDIS_CLUSTER_H */
