import type { FastifyReply, FastifyRequest } from 'fastify';
import { betweenCommits } from '../db/read-cache.js';
import { andThen, type MaybePromise } from '../lib/maybe-promise.js';
import type { AppServices } from '../services.js';
import { authOf } from './auth.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Answers of authenticated reads that are a function of the database's rows alone (an intake's status,
 * the account), kept serialised between commits (`betweenCommits`): agents poll these, and a poll that
 * finds nothing committed since the last one costs no query and no serialisation. Any commit by any
 * connection of any process (a submission, a chase, a plan change) drops them all, so the next read
 * computes afresh. Where the database has no change version (PostgreSQL), every read computes.
 *
 * An answer is kept per account, mode, method and URL; the route's scope is checked before the
 * handler runs, so a kept answer only reaches callers allowed to read it. The first read serialises
 * through the route's own response schema, like any answer. Use it only on routes whose answer depends
 * on nothing but the rows: not on the clock, the key's scopes or anything the read itself writes.
 */
export function readMemo(services: AppServices) {
  const bodies = betweenCommits<string>();
  /** Sends the kept answer at once when there is one (no promise), else computes, keeps and sends it. */
  return function answerFromMemo(
    request: FastifyRequest,
    reply: FastifyReply,
    compute: () => Promise<unknown>,
  ): MaybePromise<void> {
    const auth = authOf(request);
    const key = `${auth.account.id} ${auth.livemode ? 'live' : 'test'} ${request.method} ${request.url}`;
    const body = bodies(services.db, key, async () => {
      const serialised = reply.serialize(await compute());
      // The JSON serialisers give strings; bytes (a custom serialiser's) are kept as their text.
      return typeof serialised === 'string' ? serialised : new TextDecoder().decode(serialised);
    });
    // A string with a JSON type is sent as it is: Fastify serialises only objects.
    return andThen(body, (json) => {
      void reply.type(JSON_TYPE).send(json);
    });
  };
}
