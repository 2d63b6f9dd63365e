/**
 * `@a2a-watcher/kit`: the Expectations extension (https://rsaxb.com/a2a/expectations/v1) for
 * agents on `@a2a-js/sdk`, and a client for the watcher's HTTP API. README.md has a quick start.
 *
 * - the wire types, generated from the product's JSON Schemas: `./models.js`;
 * - the extension over the SDK's types (card, activation, raising, lapse tasks): `./expectations.js`;
 * - pushing to the watcher: `./push.js`;
 * - the watcher's HTTP API: `./client.js`.
 */

export * from './models.js';
export * from './expectations.js';
export * from './push.js';
export * from './client.js';
