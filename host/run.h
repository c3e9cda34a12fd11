/* The run protocol: how one run of a task is owned, kept alive, ended and
 * told apart from a stale one. The worker (worker.c), the supervisor
 * (supervisor.c), its lease keeper (lease*.c), the broker's scripts
 * (sdk/lua/) and the slot (slots.h) each do a part; this comment is the
 * whole, and the numbers they share live here.
 *
 * Who owns what. Each worker process has its own Redis connection and
 * owns its batch: it claims, begins, runs and finishes, and writes the
 * worker half of its slot. A worker with threads (worker_threads.c) owns
 * a table of entries instead: its main thread claims and begins on the
 * worker's connection, each pool thread runs one entry's plugin call at
 * a time, and a finisher thread finishes what is done on a second
 * connection; every change of an entry and of the slot is made under
 * the worker's lock. The supervisor process runs three threads:
 *   - the loop (supervisor.c): signals, reaping and restarting workers
 *     (supervisor_workers.c), reloads (supervisor_reload.c), HTTP and the
 *     console (supervisor_http.c), the instance heartbeat and host
 *     presence (supervisor_instance.c), and on its own connection
 *     (supervisor_redis.c) the maintenance (supervisor_maint.c: promote,
 *     trim the dead sets, take over silent hosts' entries, queue figures
 *     and pressure, cancel polling) and the recovery of a dead worker's
 *     slot (supervisor_recovery.c);
 *   - the lease keeper's Redis thread (lease_redis.c), on a connection
 *     of its own that nothing else uses: the renewals of every published
 *     batch's entries and locks (wharf:{T}:lock:<id>, the idle time of
 *     the stream entries) and the instance key
 *     (wharf:instance:<host>:<instance>);
 *   - the lease keeper's clock thread (lease_clock.c), which talks to no
 *     one: each run's deadline (the slot's `cancel`, SIGKILL after the
 *     grace), a worker past init_timeout, and leases that went a whole
 *     TTL unrenewed.
 * So a slow console, a slow reload check or a Redis command of the loop
 * that waits out its timeout holds up neither a renewal nor a deadline,
 * and a Redis that hangs holds up no deadline.
 *
 * Ownership. A run owns its task while three things hold at once:
 *   1. the stream entry is pending in the group under the run's consumer
 *      (<host>:<instance>:<slot>): claimed by XREADGROUP, not yet acked;
 *   2. the lock wharf:{T}:lock:<id> holds the run's token, "<fence>-<owner>"
 *      (fence from INCR wharf:{T}:fence, owner a nonce of the begin call),
 *      taken by the begin script with SET NX PX lock_ttl;
 *   3. the lease: the entry's idle time stays below visibility_timeout.
 * Every finish script checks 1 and 2 before it writes; a run that fails
 * either is stale: it writes nothing and counts as `stale`. A task whose
 * result is cached is acked without a run (`cached`); one whose lock
 * another run holds goes back to the delayed set after lock_retry without
 * spending an attempt (`locked`).
 *
 * Renewal. The worker publishes its batch (entry ids, ids, tokens, and
 * when the begin that took the locks was sent) in its slot. The lease
 * keeper renews, every third of the shortest lock_ttl or
 * visibility_timeout, each published entry's idle time (XCLAIM JUSTID by
 * the same consumer) and each lock still holding its token (PEXPIRE), in
 * one script call per worker and type, of any size; the reply says how
 * much time each had left (wharf_lease_margin_seconds). A renewal that
 * fails is sent again at once on a new connection, then every 50 ms
 * doubling, at most half a renewal period apart. Entries idle past
 * visibility_timeout belong to a silent host: any live host takes them
 * over (XAUTOCLAIM), which counts as a failed attempt. With
 * min_replicas_ack, each pass of renewals ends with one WAIT, and a
 * renewal counts towards a lease only once that WAIT came back (a short
 * one on a Sentinel master that moved fails the pass, which is sent again
 * on a new connection, to the new master). lock_ttl and
 * visibility_timeout are at least 1 s (config.c), so a renewal has a few
 * hundred ms to be late in.
 *
 * A lease lost. If a lock of a run whose plugin has not yet returned
 * went a whole TTL unrenewed (Redis away that long), or a renewal finds
 * it no longer holds the run's token, the keeper logs one "lease lost"
 * line (task, margin), counts it (wharf_leases_lost_total), asks the
 * run to end as a timeout does (slot `lease_lost`, then `cancel`), and
 * asks the worker to stop after it: whatever the plugin returns is not
 * kept (a finish that still owns the task retries it; one that does not
 * is stale), the unstarted rest of the batch goes back unrun, and the
 * replacement begins them anew with fresh locks. Another host may by
 * then run the task: a plugin with side effects fences them with the
 * run's token (the `lock` of the log, task->fence).
 *
 * Deadlines. A run's deadline is its type's timeout from the start of the
 * plugin call. The worker owns it: whatever the plugin returns after it,
 * or after the supervisor asked for a cancel, is discarded and the
 * attempt fails with "timeout after N ms". The lease keeper's clock
 * thread, reading the slot, asks for the cancel through the slot once the
 * deadline passes
 * (the plugin sees wharf_cancelled), and SIGKILLs the worker if the same
 * run is still under way RUN_KILL_GRACE_MS later; recover_slot then
 * records the same failure. A `wharf cancel` of a running task takes the
 * same road (cancel:<id> in Redis, noticed by the owning supervisor,
 * then the slot's request): the run ends as `cancelled`, writing
 * nothing, whether the plugin returns or is killed after the grace. A
 * worker that dies in any other way during a plugin call (a signal,
 * exit() called by the plugin) fails that run's attempt ("worker crashed:
 * SIGSEGV", "worker exited with status 0 during the task") and is started
 * again at once: the crash is the task's, charged to it; only a worker
 * that dies before it takes a task waits a growing delay.
 *
 * Threads. Every entry of the slot has its own run, start and timeout,
 * and its own asks (slot_asks: cancel, cancel_requested, lease_lost,
 * each naming the run it is meant for), so each run's deadline, cancel
 * and lost lease are its own. When a worker with several runs under way
 * dies, the runs that single themselves out are charged: one that was
 * asked to end and did not (timeout, lease lost; a wharf cancel ends as
 * cancelled), or one whose thread took a fatal signal (the worker's
 * handler writes the signal into that entry, worker_crash.c). The other
 * runs are given back unrun: their locks released, no attempt spent,
 * counted in wharf_tasks_given_back_total. When none singles itself out
 * (SIGKILL from outside, exit()), every run under way is charged, "...
 * while running N tasks". A run past its deadline stops the worker's
 * claims until it ends, so few neighbours share its fate.
 *
 * Returns are kept as they come. Each plugin call's return (the finish
 * it asks for, its reason and result) goes into the slot as soon as the
 * plugin returns, in the slot's arena (SLOT_ARENA_BYTES); a return that
 * does not fit is finished at once instead, with the returns before it.
 * When a worker dies, the supervisor finishes what its plugins had
 * returned as they asked, fails the run in hand, and releases the locks
 * of the rest of its batch; its replacement reads the slot's pending
 * entries again. If Redis is away at that moment the dead worker's slot
 * is kept and the replacement is not started until all this is
 * recorded: it would run the failed task again at the same attempt.
 *
 * Signals. Workers block SIGTERM, SIGINT and SIGHUP for life, so none
 * interrupts plugin code; a stop is the slot's `stop` flag (or one of
 * those signals, pending), read between tasks. The supervisor: SIGTERM or
 * SIGINT stops the host (workers finish the tasks in hand, the unstarted
 * rest of each batch goes back unrun, then exit 0; SIGKILL at
 * shutdown_timeout); SIGHUP reloads (a plugin check in a child bounded by
 * init_timeout, then workers replaced one at a time through `stop`);
 * SIGCHLD reaps. The only signal the host sends a worker is SIGKILL.
 * Nothing holds the supervisor's loop for long: the check is a child with
 * a deadline, HTTP answers from figures the loop already has, and each of
 * its own Redis commands waits at most RUN_SUPERVISOR_REDIS_TIMEOUT_MS.
 *
 * Outages. A batch whose begin reply was lost is held and, once Redis is
 * back, its locks are released by their owner nonce; a batch whose finish
 * was cut off is held and sent again (a resent finish that had landed
 * counts as done, not stale), even after a stop request, until
 * shutdown_timeout is nearly over. A failover (a Redis Cluster primary
 * or the Sentinel master replaced) is such an outage: the nodes are found
 * again (slot map, sentinels) and the held batch resolved on the new
 * primary. On a cluster a claim is in hand whole before any plugin runs
 * (claim.h), so every claimed entry is in the slot and renewed.
 * Delivery is at least once, and a fault costs little: a worker's death
 * runs again at most the one task whose plugin returned just as it died
 * (before its return reached the slot), so tasks that return OK twice are
 * at most the worker deaths; a host killed with -9 (its supervisor with
 * it) runs again the returned but unfinished tasks of its batches. */
#ifndef WHARF_RUN_H
#define WHARF_RUN_H

/* After a timeout's cancel request, this long before SIGKILL: time for a
 * plugin that checks wharf_cancelled to return. */
#define RUN_KILL_GRACE_MS 1000

/* The supervisor's loop enforces the deadlines and answers /healthz, so
 * it waits on Redis at most this long a command (and a connect): a Redis
 * that stops answering, rather than refusing, delays a timeout's cancel
 * by about this much, not by a worker's 10 s. */
#define RUN_SUPERVISOR_REDIS_TIMEOUT_MS 2000

/* Leases and locks are renewed this many times per lock_ttl (or
 * visibility_timeout, the shorter), so two renewals can be missed before
 * anything expires. */
#define RUN_RENEWALS_PER_TTL 3

/* The instance key lives this long unless the lease keeper refreshes it
 * (every RUN_INSTANCE_EVERY_MS), so a host killed with -9 frees its name
 * within a few seconds. */
#define RUN_INSTANCE_TTL_MS 5000
#define RUN_INSTANCE_EVERY_MS 1000

#endif /* WHARF_RUN_H */
