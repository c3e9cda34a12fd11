// TypeScript declarations of handler.js: task handlers that wharf's
// coprocess plugin runs (docs/handlers.md).

/** One task, as the host handed it over. */
export interface Task {
  id: string;
  type: string;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** The fencing token of this run: grows per id. */
  fence: number;
  /** W3C traceparent. */
  trace: string;
  /** ms since the epoch. */
  enqueuedAt: number;
  payload: Buffer;
  /** A workflow's child: what each parent ended with, in the order the
   * child named them (empty for a task without parents). */
  parents: Parent[];
}

/** A parent of a workflow's child. */
export interface Parent {
  /** "<type>:<id>" */
  name: string;
  /** true: it finished ok and result is its result; false: it is dead. */
  ok: boolean;
  result: Buffer;
}

/** What a handler may ask of the host while its task runs. */
export declare class Context {
  /** Date.now() at the task's deadline, or null for none. */
  readonly deadline: number | null;
  /** Aborted once the host cancels the task (deadline or operator). */
  readonly signal: AbortSignal;
  readonly cancelled: boolean;
  /** ms to the deadline (0 once passed), null for none. */
  timeLeft(): number | null;
  /** A line in the host's log, naming the plugin and this task. */
  log(message: string, level?: 'debug' | 'info' | 'warn' | 'warning' | 'error'): void;
}

export type Result = Buffer | Uint8Array | string | null | undefined;
export type Handler = (task: Task, ctx: Context) => Result | Promise<Result>;

/** Throw to try again: after the type's backoff, or after delay ms. */
export declare class Retry extends Error {
  constructor(reason?: string, options?: { delay?: number });
  readonly delay: number | undefined;
}

/** Throw to fail for good: dead at once. */
export declare class Fail extends Error {
  constructor(reason?: string);
}

/** Registers fn as the handler of type. */
export declare function handler(type: string, fn: Handler): Handler;

/** Serves the registered handlers on stdin/stdout until stdin closes. */
export declare function run(): void;

export declare const PROTOCOL_VERSION: 1;
