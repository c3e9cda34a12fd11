// Type declarations of wharf-client (index.js). Times are milliseconds.

/** The wharf protocol versions this client speaks (docs/protocol.md). */
export const PROTOCOLS: readonly string[];

export type Payload = Buffer | Uint8Array | string;

export interface ClientOptions {
  /** Key prefix, default "wharf". */
  prefix?: string;
  /** Sent with AUTH (else the URL's own). */
  password?: string;
  /** Refuse (UnservedType) a type no host has ever served; else warn. */
  strict?: boolean;
  /** Connect and command timeout in ms, default 5000. */
  timeout?: number;
  /** Folder of the .lua scripts (default: WHARF_LUA_DIR, sdk/lua, share/wharf). */
  luaDir?: string;
}

export interface EnqueueOptions {
  /** The task's id, its idempotency key (default: SHA-256 of type and payload). */
  id?: string;
  /** Run it no sooner than this many ms from now. */
  delay?: number;
  /** A W3C traceparent to carry (one is made otherwise). */
  trace?: string;
  /** Keep trying this many ms while the type refuses tasks with backpressure. */
  wait?: number;
  /** This task's timeout in ms (1 ms to 30 days; a run gets the shorter of it and the type's). */
  timeout?: number;
  /** This task's attempts (1 to 1000) instead of the type's max_attempts. */
  maxAttempts?: number;
  /** No attempt begins later than this many ms from now: the task is dead with "expired". */
  expireIn?: number;
  /** The same at a given time (not with expireIn). */
  expires?: Date;
}

export interface EnqueueResult {
  id: string;
  /** Already enqueued: nothing was added. */
  duplicate: boolean;
  /** The type's backlog is high: slow down. */
  pressure: boolean;
  /** No host has ever served the type. */
  unserved: boolean;
}

export type TaskState =
  | 'queued' | 'running' | 'delayed' | 'done' | 'dead' | 'cancelled' | 'held' | 'unknown';

export interface TaskStatus {
  state: TaskState;
  /** Redis time of the answer, ms since the epoch. */
  nowMs: number;
  /** queued, running: its stream entry id. */
  entry?: string;
  /** queued, running: this run's attempt; delayed: the next; dead: attempts used. */
  attempt?: number;
  enqueuedAtMs?: number;
  /** running: the consumer that holds it. */
  worker?: string;
  /** running: when its run began (0: not yet). */
  sinceMs?: number;
  /** running: a cancel is on its way to it. */
  cancelRequested?: boolean;
  /** delayed */
  dueAtMs?: number;
  /** dead */
  diedAtMs?: number;
  /** delayed: the last error ("" for a scheduled task); dead: its error. */
  error?: string;
  /** done */
  resultBytes?: number;
  /** done: the result's time to live; cancelled: how long it is remembered. */
  expiresInMs?: number;
  /** held: the parents ("type:id,...") that have not ended yet. */
  waitsFor?: string;
  /** queued, running, delayed, dead: the task's own options, when it was enqueued with them. */
  timeoutMs?: number;
  maxAttempts?: number;
  expiresAtMs?: number;
}

export interface AfterOptions {
  /** The parents: "type:id" or [type, id]. */
  after: Array<string | [string, string]>;
  /** Default: 128 random bits in hex. */
  id?: string;
  trace?: string;
  /** dead (default): a dead parent makes the child dead; run: it runs anyway. */
  onParentDead?: 'dead' | 'run';
}

export interface GroupOptions {
  /** The callback's type; its id is "group:<group>". */
  then: string;
  /** Given to the callback inside its JSON payload. */
  thenPayload?: string;
  /** The members' ids; default "<group>:<n>" from 1. */
  ids?: string[];
}

export interface GroupInfo {
  n: number;
  ok: number;
  dead: number;
  pending: number;
  callbackType: string;
  callback: 'waiting' | 'due' | 'enqueued' | 'cancelled';
}

export interface CancelResult {
  /** removed: it was waiting; cancelling: a worker holds it; already: cancelled before. */
  outcome: 'removed' | 'cancelling' | 'already';
  /** removed: "queued" or "delayed"; cancelling: the consumer running it. */
  detail: string;
}

export class Client {
  constructor(url?: string, options?: ClientOptions);
  readonly prefix: string;
  strict: boolean;
  enqueue(type: string, payload?: Payload, options?: EnqueueOptions): Promise<EnqueueResult>;
  /** One entry per payload: its result, or the error it was refused with. */
  enqueueMany(type: string, payloads: Iterable<Payload>, options?: Pick<EnqueueOptions, 'delay' | 'timeout' | 'maxAttempts' | 'expireIn' | 'expires'>): Promise<Array<EnqueueResult | WharfError>>;
  result(type: string, id: string, options?: { wait?: number }): Promise<Buffer>;
  status(type: string, id: string): Promise<TaskStatus>;
  cancel(type: string, id: string): Promise<CancelResult>;
  /** A task held until every parent has finished (workflows). */
  enqueueAfter(type: string, payload: Payload, options: AfterOptions): Promise<EnqueueResult>;
  /** A group and its callback, enqueued once when the last member ends; the member ids. */
  enqueueGroup(group: string, type: string, payloads: Iterable<Payload>, options: GroupOptions): Promise<string[]>;
  group(group: string): Promise<GroupInfo>;
  close(): Promise<void>;
}

export function hashId(type: string, payload: Payload): string;
export function newTrace(): string;

/** Every error carries the wharf CLI's exit code for the same failure. */
export class WharfError extends Error { readonly exitCode: number; }
/** exit 1 */ export class NotFound extends WharfError {}
/** exit 1 */ export class WaitTimeout extends NotFound {}
/** exit 2 */ export class TaskDead extends WharfError { readonly error: string; readonly attempts: number; }
/** exit 3 */ export class TaskCancelled extends WharfError {}
/** exit 65 */ export class BadInput extends WharfError {}
/** exit 65 */ export class TooLarge extends BadInput { readonly limit: number; }
/** exit 65 */ export class UnservedType extends BadInput {}
/** exit 69 */ export class Unavailable extends WharfError {}
/** exit 75 */ export class Backpressure extends WharfError { readonly limit: number; }
/** exit 75 */ export class RedisFull extends Backpressure {}
/** exit 76 */ export class ProtocolMismatch extends WharfError { readonly hostProtocol: string; }
/** exit 78 */ export class ConfigError extends WharfError {}
