/* GET /api/dead and GET /api/task (console_tasks.c). */
#ifndef WHARF_CONSOLE_TASKS_H
#define WHARF_CONSOLE_TASKS_H

#include "console_state.h"
#include "http.h"

/* Dead-set page size bound (GET /api/dead?limit=). */
#define CONSOLE_PAGE_MAX 100

void console_dead_page(console *c, http_reply *reply);
void console_task_detail(console *c, http_reply *reply);

#endif /* WHARF_CONSOLE_TASKS_H */
