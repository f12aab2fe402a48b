import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteHandlerMethod,
} from 'fastify';
import { z } from 'zod';
import { betweenCommits } from '../db/read-cache.js';
import { toArray } from '../lib/arrays.js';
import type { AppServices } from '../services.js';
import { answerSerializerCompiler } from './answer-serializer.js';
import { authOf, type AuthContext } from './auth.js';
import { etagOf, noneMatch } from './etag.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The answer depends on the database's rows alone: keep it between commits (registerReadMemo). */
    keepBetweenCommits?: boolean;
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** The kept answers' bodies together, in characters (bytes, for the ASCII of JSON): 16 MiB. */
const ANSWERS_MAX_BYTES = 16 * 1024 * 1024;

/** In the OpenAPI document of every route that keeps its answer. */
const NOT_MODIFIED = z.null().meta({
  description: "Not Modified: If-None-Match holds the answer's current ETag. No body.",
});

/** A serialised answer and its entity tag, computed together once. */
interface Answer {
  body: string;
  etag: string;
}

/** The answer, or 304 Not Modified (no body) when the caller already holds it (If-None-Match). */
function sendAnswer(request: FastifyRequest, reply: FastifyReply, answer: Answer): FastifyReply {
  void reply.header('ETag', answer.etag);
  if (noneMatch(request.headers['if-none-match'], answer.etag)) return reply.code(304).send();
  // A string with a JSON type is sent as it is: Fastify serialises only objects.
  return reply.type(JSON_TYPE).send(answer.body);
}

/**
 * Answers of authenticated reads that are a function of the database's rows alone (intakes, their
 * list and status, the account), kept serialised between commits (`betweenCommits`): agents poll these, and a poll that
 * finds nothing committed since the last one costs no query, no validation and no serialisation. A
 * commit that changes a row of the answer's account (a submission, a chase, a plan change, by any
 * connection of any process) drops its answers, so the next read computes afresh; other commits leave
 * them, for one read of the account's version (read-cache.ts, `Db.answerVersion`). Where the database
 * has no change version (PostgreSQL), every read checks its account's version, read with the key
 * (`AuthContext.answerVersion`) or alone (`Db.readAnswerVersion`), and computes only if it moved since
 * the answer was kept.
 *
 * A route opts in with `config: { keepBetweenCommits: true }` and returns its answer as usual. The kept
 * answer is served from an onRequest hook that runs after the authentication hook (so the key, its rate
 * limit and the route's scope are checked first), before the request is validated: a kept answer exists
 * only for a URL that passed validation when it was computed. Answers are kept per account, mode, method
 * and URL, so another account's or mode's request never finds one. The first read serialises through the
 * route's own response schema, like any answer. Only for routes whose answer depends on nothing but the
 * rows: not on the clock, the key's scopes or anything the read itself writes. Their answers are
 * serialised by a copy built from the response schema instead of a parse of it (answer-serializer.ts).
 *
 * Every such answer carries an `ETag`, a digest of its bytes computed when the answer is (so a kept
 * answer's tag costs nothing), and a request whose `If-None-Match` holds it is answered 304 with no
 * body. The tag is a function of the body alone: it changes exactly when the answer does (a commit that
 * changes nothing this caller sees leaves it as it was) and says nothing about other accounts. On
 * PostgreSQL a kept answer and its tag cost the key's statement, which reads the version too.
 */
export function registerReadMemo(app: FastifyInstance, services: AppServices): void {
  // Answers outlive commits that change nothing of their account, so their bytes are bounded too.
  const answers = betweenCommits<Answer>({
    weigh: (answer) => answer.body.length,
    maxWeight: ANSWERS_MAX_BYTES,
    checkEachRead: true,
  });
  const keyOf = (request: FastifyRequest, auth: AuthContext) =>
    `${auth.account.id} ${auth.livemode ? 'live' : 'test'} ${request.method} ${request.url}`;

  function serveKept(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const auth = request.auth;
    const kept = auth ? answers.peek(services.db, keyOf(request, auth)) : undefined;
    // Answering from an onRequest hook ends the request here: no validation, no handler.
    if (kept !== undefined) void sendAnswer(request, reply, kept);
    else done();
  }

  const keepingHandlers = new WeakSet<RouteHandlerMethod>();

  // Without a change version (PostgreSQL) nothing is known before a statement: no hook; the handler
  // reads the account's version and answers the kept answer or a fresh one.
  const canKeep = services.db.changeVersion !== undefined;

  app.addHook('onRoute', (route) => {
    if (!route.config?.keepBetweenCommits) return;
    if (!route.config.scope) throw new Error(`${route.url}: keepBetweenCommits needs an authenticated route`);
    // Registered after the authentication hook's onRoute, so this runs after its guard. The automatic
    // HEAD twin of a GET route may arrive with the GET's hooks and handler already in place.
    if (route.schema) {
      const responses = typeof route.schema.response === 'object' ? route.schema.response : {};
      route.schema = { ...route.schema, response: { ...responses, 304: NOT_MODIFIED } };
      route.serializerCompiler ??= answerSerializerCompiler;
    }
    const hooks = toArray(route.onRequest);
    if (canKeep && !hooks.includes(serveKept)) route.onRequest = [...hooks, serveKept];
    if (keepingHandlers.has(route.handler)) return;
    const compute = route.handler as (request: FastifyRequest, reply: FastifyReply) => unknown;
    const keeping: RouteHandlerMethod = async function (this: FastifyInstance, request, reply) {
      const auth = authOf(request);
      const answer = await answers(
        services.db,
        keyOf(request, auth),
        async () => {
          const body = textOf(reply.serialize(await compute.call(this, request, reply)));
          return { body, etag: etagOf(body) };
        },
        auth.account.id,
        auth.answerVersion,
      );
      // Never undefined: a route that finds nothing throws its 404.
      if (!answer)
        throw new Error(`${request.routeOptions.url ?? request.url}: a kept read answered nothing`);
      return sendAnswer(request, reply, answer);
    };
    keepingHandlers.add(keeping);
    route.handler = keeping;
  });
}

/** The JSON serialisers give strings; bytes (a custom serialiser's) are kept as their text. */
function textOf(serialised: string | Buffer | ArrayBuffer): string {
  return typeof serialised === 'string' ? serialised : new TextDecoder().decode(serialised);
}
