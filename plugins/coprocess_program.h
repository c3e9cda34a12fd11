/* The handler program of the coprocess plugin as a process: its command
 * line and environment, started without a shell on three pipes, stopped
 * and reaped, and how it ended in words ("handler exited with status 1",
 * "handler killed by SIGSEGV"). Nothing here knows the wire format. */
#ifndef WHARF_COPROCESS_PROGRAM_H
#define WHARF_COPROCESS_PROGRAM_H

#include <stddef.h>
#include <sys/types.h>

/* What starts the program, read from the manifest once. */
typedef struct program_spec {
    char **argv; /* NULL-terminated; argv[0] as written */
    char *path;  /* argv[0] resolved on PATH (or as written, with a '/') */
    char **envp; /* the minimal environment plus `env` */
    char *cwd;   /* NULL: the worker's */
} program_spec;

/* One running program: its pid and the host's ends of its pipes. */
typedef struct program {
    pid_t pid;  /* 0 when none */
    int in_fd;  /* its stdin (we write), non-blocking */
    int out_fd; /* its stdout (we read), non-blocking */
    int err_fd; /* its stderr (we read), non-blocking */
} program;

/* Fills *spec from the manifest values (command required; cwd and env
 * may be NULL). 0, or -1 with why in err (nothing to free then). */
int program_spec_make(program_spec *spec, const char *command, const char *cwd,
                      const char *env, char *err, size_t errlen);
void program_spec_free(program_spec *spec);

/* Starts the program. 0 with *p filled, or -1 with why in err (the exec
 * failed: the reason is the child's errno, reported back on a pipe). */
int program_start(program *p, const program_spec *spec, char *err,
                  size_t errlen);

/* Closes the program's stdin and waits for it: up to wait_ms for it to
 * exit by itself (0 for no wait), then SIGKILL to it and its process
 * group. Writes how it ended into how (for example "handler exited with
 * status 1"); p->pid is 0 after. Its stdout and stderr stay open, so
 * what it wrote last can be read; program_close closes them. A p with
 * no program is left alone and how says so. */
void program_stop(program *p, int wait_ms, char *how, size_t howlen);

/* Closes whatever pipes of p are open. */
void program_close(program *p);

/* Kills the program (and its process group) with SIGKILL at once (its pipes
 * stay open, so what it wrote can still be read); program_stop reaps it. */
void program_kill(program *p);

#endif /* WHARF_COPROCESS_PROGRAM_H */
