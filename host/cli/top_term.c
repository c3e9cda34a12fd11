/* wharf top's terminal: plain ANSI, so it works over SSH and in any
 * terminal. The signal handlers, the raw mode and the own screen (given
 * back to the shell on Ctrl-Z, taken again on SIGCONT), the size, the
 * in-place drawing of a frame, and the wait for keys between frames. */
#include "top_term.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

volatile sig_atomic_t top_stop;

/* The terminal as found and as top sets it, for the stop handler. */
static struct termios term_saved, term_raw;
static volatile sig_atomic_t term_is_raw;

#define ENTER_SCREEN "\033[?1049h\033[?25l" /* own screen, no cursor */
#define LEAVE_SCREEN "\033[?25h\033[?1049l"

/* SIGWINCH only wakes the wait, so the next frame fits the new size. */
static void on_top_signal(int sig)
{
    if (sig != SIGWINCH)
        top_stop = 1;
}

/* Ctrl-Z: give the shell its terminal back as it was, stop, and take it
 * again when continued (the wait then wakes and redraws). Only
 * async-signal-safe calls. */
static void on_suspend(int sig)
{
    sigset_t tstp;
    struct sigaction sa;
    int saved_errno = errno;

    (void)sig;
    if (write(STDOUT_FILENO, LEAVE_SCREEN, sizeof(LEAVE_SCREEN) - 1) < 0) {
        /* nothing to do about it here */
    }
    if (term_is_raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &term_saved);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTSTP, &sa, NULL);
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    sigprocmask(SIG_UNBLOCK, &tstp, NULL);
    raise(SIGTSTP); /* stops here until SIGCONT */
    sigprocmask(SIG_BLOCK, &tstp, NULL);
    sa.sa_handler = on_suspend;
    sigaction(SIGTSTP, &sa, NULL);
    if (term_is_raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &term_raw);
    if (write(STDOUT_FILENO, ENTER_SCREEN, sizeof(ENTER_SCREEN) - 1) < 0) {
        /* the next frame says the same */
    }
    errno = saved_errno;
}

/* Installs handler for sig, without SA_RESTART: a wait wakes. */
static void set_handler(int sig, void (*handler)(int))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

void top_term_catch_signals(void)
{
    set_handler(SIGINT, on_top_signal);
    set_handler(SIGTERM, on_top_signal);
    set_handler(SIGHUP, on_top_signal);
    set_handler(SIGWINCH, on_top_signal);
}

bool top_term_enter(void)
{
    bool keys = false;

    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &term_saved) == 0) {
        term_raw = term_saved;
        term_raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        term_raw.c_cc[VMIN] = 0;
        term_raw.c_cc[VTIME] = 0;
        term_is_raw = keys = tcsetattr(STDIN_FILENO, TCSANOW, &term_raw) == 0;
    }
    set_handler(SIGTSTP, on_suspend);
    fputs(ENTER_SCREEN, stdout);
    return keys;
}

void top_term_leave(void)
{
    set_handler(SIGTSTP, SIG_DFL);
    fputs(LEAVE_SCREEN, stdout);
    fflush(stdout);
    if (term_is_raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &term_saved);
}

void top_term_size(int *cols, int *rows)
{
    struct winsize ws;

    *cols = *rows = 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

/* The last line (the footer, perhaps with a word on the lines that did
 * not fit); the most keys read at once. */
#define TOP_LAST_LINE_MAX 256
#define TOP_KEYS_MAX 32

void top_term_draw(const top_frame *f, int cols, int rows, const char *footer)
{
    int n = 0, shown = 0, room;
    char last[TOP_LAST_LINE_MAX];

    for (size_t i = 0; i < f->len; i++)
        n += f->s[i] == '\n';
    room = rows > 0 ? rows - 2 : n;
    fputs("\033[H", stdout);
    for (const char *s = f->s, *nl;
         s && shown < room &&
         (nl = memchr(s, '\n', (size_t)(f->s + f->len - s)));
         s = nl + 1, shown++) {
        fwrite(s, 1, (size_t)(nl - s), stdout);
        fputs("\033[K\r\n", stdout);
    }
    if (shown < n)
        snprintf(last, sizeof(last),
                 "%s - %d more lines below: a taller terminal shows them",
                 footer, n - shown);
    else
        snprintf(last, sizeof(last), "%s", footer);
    if (cols > 0 && strlen(last) > (size_t)cols)
        last[cols] = '\0';
    if (rows != 1)
        fputs("\033[K\r\n", stdout);
    fprintf(stdout, "%s\033[K\033[J", last);
}

void top_term_wait(bool *keys, int ms)
{
    struct pollfd in = {STDIN_FILENO, POLLIN, 0};

    if (poll(&in, *keys ? 1 : 0, ms) == 1) {
        char typed[TOP_KEYS_MAX];
        ssize_t n = read(STDIN_FILENO, typed, sizeof(typed));
        /* A terminal that hung up answers at once for good: stop
         * reading it rather than spin. */
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            *keys = false;
        for (ssize_t k = 0; k < n; k++)
            if (typed[k] == 'q' || typed[k] == 'Q' || typed[k] == 3)
                top_stop = 1;
    }
}
