/* Which task a fatal signal belongs to (worker_internal.h). A worker's
 * thread notes the slot entry whose plugin call it is in; a fatal signal
 * taken by that thread writes the signal's number into the entry, with
 * one plain store to shared memory (async-signal-safe), and then goes on
 * to whatever handled the signal before (the default action: the
 * process dies of it; under a sanitizer, its report). The supervisor then
 * charges that task alone, and gives its neighbours back unrun. */
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "worker_internal.h"

/* The signals a fault in plugin code raises. */
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                                    SIGABRT, SIGSYS, SIGTRAP};
#define N_FATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))

static struct sigaction previous[N_FATAL];
static slot *crash_slot;
/* The entry this thread's plugin call is for, or -1. */
static _Thread_local int crash_entry = -1;

static void on_fatal(int sig, siginfo_t *info, void *uc)
{
    size_t k;

    if (crash_slot && crash_entry >= 0 &&
        (uint32_t)crash_entry < crash_slot->capacity)
        crash_slot->batch[crash_entry].crashed = sig;
    for (k = 0; k < N_FATAL && fatal_signals[k] != sig; k++)
        ;
    if (k < N_FATAL && (previous[k].sa_flags & SA_SIGINFO) &&
        previous[k].sa_sigaction) {
        previous[k].sa_sigaction(sig, info, uc);
        return;
    }
    if (k < N_FATAL && previous[k].sa_handler != SIG_DFL &&
        previous[k].sa_handler != SIG_IGN && previous[k].sa_handler) {
        previous[k].sa_handler(sig);
        return;
    }
    /* The default action: once this handler returns, the faulting
     * instruction runs again and kills the process with sig; a signal
     * sent by raise() or abort() is sent again. */
    signal(sig, SIG_DFL);
    if (info->si_code <= 0)
        raise(sig);
}

void worker_crash_setup(slot *sl)
{
    struct sigaction sa;

    crash_slot = sl;
    if (!sl)
        return;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < N_FATAL; k++)
        (void)sigaction(fatal_signals[k], &sa, &previous[k]);
}

/* An alternate stack for this thread's fault handler, so a plugin that
 * overflows its own stack still has its task marked. Its size leaves
 * room for a sanitizer's handler, which the fault goes on to. */
#define ALT_STACK_BYTES (64 * 1024)
static _Thread_local void *alt_stack;

void worker_crash_thread_start(void)
{
    stack_t ss;

    alt_stack = malloc(ALT_STACK_BYTES);
    if (!alt_stack)
        return; /* the handler then runs on the thread's own stack */
    memset(&ss, 0, sizeof(ss));
    ss.ss_sp = alt_stack;
    ss.ss_size = ALT_STACK_BYTES;
    if (sigaltstack(&ss, NULL) != 0) {
        free(alt_stack);
        alt_stack = NULL;
    }
}

void worker_crash_thread_end(void)
{
    stack_t ss;

    if (!alt_stack)
        return;
    memset(&ss, 0, sizeof(ss));
    ss.ss_flags = SS_DISABLE;
    (void)sigaltstack(&ss, NULL);
    free(alt_stack);
    alt_stack = NULL;
}

void worker_crash_enter(uint32_t i)
{
    crash_entry = (int)i;
}

void worker_crash_leave(void)
{
    crash_entry = -1;
}
