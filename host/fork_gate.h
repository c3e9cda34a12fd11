/* The supervisor's fork gate, for a thread of its own that talks to Redis
 * (the schedule timer): the lease keeper's gate (host/lease_sync.c says
 * why forks wait for such threads to be between passes), declared here
 * with the same prototypes so a user of the gate needs nothing else of
 * the keeper's insides. */
#ifndef WHARF_FORK_GATE_H
#define WHARF_FORK_GATE_H

/* Makes the gate (once a process) and has every fork wait at it while a
 * thread that uses it runs. */
void lease_gate_setup(void);

/* A thread that uses the gate is about to start (counted until
 * _stopped): from now on forks wait at the gate. */
void lease_gate_keeper_started(void);
void lease_gate_keeper_stopped(void);

/* A thread's pass begins (a reader of the gate) and ends. */
void lease_gate_enter(void);
void lease_gate_leave(void);

#endif /* WHARF_FORK_GATE_H */
