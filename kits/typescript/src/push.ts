/**
 * Pushing a task's events to the watcher: the watcher learns what an agent expects only from its
 * pushes (`POST /v1/agents/{agentId}/push`, docs/openapi.json), with the agent's `push_token` in
 * `X-A2A-Notification-Token`.
 */

import type { TaskPushNotificationConfig } from '@a2a-js/sdk';

import { KitError } from './expectations.js';

/** The header the watcher reads an agent's push token from, as A2A push notifications send it. */
export const PUSH_TOKEN_HEADER = 'X-A2A-Notification-Token';

/**
 * Options for the SDK's `DefaultPushNotificationSender` so that it sends the token where the
 * watcher reads it: `new DefaultPushNotificationSender(store, WATCHER_PUSH_SENDER_OPTIONS)`.
 */
export const WATCHER_PUSH_SENDER_OPTIONS = { tokenHeaderName: PUSH_TOKEN_HEADER } as const;

/**
 * The watcher's push route for agent `agentId`: `{watcher}/v1/agents/{agentId}/push`.
 *
 * @throws KitError when `watcher` is not an http(s) URL or `agentId` is blank.
 */
export function watcherPushUrl(watcher: string, agentId: string): string {
  let base: URL;
  try {
    base = new URL(watcher);
  } catch {
    throw new KitError('watcher', `${JSON.stringify(watcher)} is not a URL`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new KitError('watcher', 'must be an http(s) URL');
  if (typeof agentId !== 'string' || agentId.trim() === '') throw new KitError('agentId', 'must not be blank');
  return `${base.href.replace(/\/+$/, '')}/v1/agents/${encodeURIComponent(agentId)}/push`;
}

/** Where and how an agent pushes to its watcher. */
export interface WatcherPush {
  /** The push route ({@link watcherPushUrl}). */
  url: string;
  /** The agent's `push_token` in the watcher's configuration. */
  token: string;
  /** The push config's id, beside any the caller gave; default `watcher`. */
  id?: string;
}

/**
 * What {@link registerWatcherPush} needs of the SDK's `PushNotificationStore` (the
 * `InMemoryPushNotificationStore`, or a database one), with `C` its call context
 * (`RequestContext.context`). Written by shape, so that a second copy of the SDK's declarations
 * (a linked kit) does not make the types differ.
 */
export interface PushConfigStore<C> {
  load(taskId: string, context: C): Promise<TaskPushNotificationConfig[]>;
  save(taskId: string, context: C, config: TaskPushNotificationConfig): Promise<void>;
}

/**
 * Stores a push config to the watcher for task `taskId`, so that the SDK's push sender posts
 * every event of the task there. Call it when a task starts (no `RequestContext.task`). Beside a
 * caller's own push config (its own `id`), and not at all when the task already pushes to
 * `push.url` (a lapse task from a watcher with `public_url` carries the watcher's config itself).
 *
 * @returns whether a config was added.
 * @throws KitError when `push.url` or `push.token` is blank.
 */
export async function registerWatcherPush<C>(
  store: PushConfigStore<C>,
  context: C,
  taskId: string,
  push: WatcherPush,
): Promise<boolean> {
  if (typeof push.url !== 'string' || push.url.trim() === '') throw new KitError('push.url', 'must not be blank');
  if (typeof push.token !== 'string' || push.token === '') throw new KitError('push.token', 'must not be empty');
  const given = await store.load(taskId, context);
  if (given.some((c) => c.url === push.url)) return false;
  const config: TaskPushNotificationConfig = {
    tenant: '',
    id: push.id ?? 'watcher',
    taskId,
    url: push.url,
    token: push.token,
    authentication: undefined,
  };
  await store.save(taskId, context, config);
  return true;
}
