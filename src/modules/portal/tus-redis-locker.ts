import { randomBytes } from 'node:crypto';
import { ERRORS, type Lock, type Locker, type RequestRelease } from '@tus/utils';
import { Redis } from 'ioredis';

/**
 * tus upload locks shared by every API process through Redis, so that two requests on one upload
 * (a client resuming on another process while its old PATCH still streams) never write at once.
 *
 * A lock is a key set with NX and a short expiry, renewed while held: a process that dies holding it
 * frees it within `ttlMs`. Like @tus/server's in-memory locker, a request that finds the upload locked
 * asks the holder to let go (a message on a channel every process subscribes to; the holder's tus
 * request is then cancelled and unlocks) and retries until `acquireTimeoutMs`. A published message
 * reaches only the subscribers listening at that moment, so the request is repeated every
 * `askAgainMs` while the lock stays taken (as @tus/server's in-memory locker asks on every retry),
 * and a lock is not reported held before its process listens for such requests.
 */
export interface RedisLockerOptions {
  ttlMs?: number;
  acquireTimeoutMs?: number;
  retryMs?: number;
  askAgainMs?: number;
}

const KEY_PREFIX = 'intake:tus-lock:';
const RELEASE_CHANNEL = 'intake:tus-lock-release';

/** Deletes the key only while it still holds our token (a lapsed lock another process took stays). */
const UNLOCK_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
/** Extends the key only while it still holds our token. */
const RENEW_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

type LockRedis = Redis & {
  tusUnlock(key: string, token: string): Promise<number>;
  tusRenew(key: string, token: string, ttlMs: number): Promise<number>;
};

export class RedisLocker implements Locker {
  private readonly redis: LockRedis;
  private subscriber: Redis | undefined;
  private subscribed: Promise<void> = Promise.resolve();
  /** Locks this process holds: upload id → how to ask its request to finish. */
  readonly held = new Map<string, RequestRelease>();
  readonly ttlMs: number;
  readonly acquireTimeoutMs: number;
  readonly retryMs: number;
  readonly askAgainMs: number;

  constructor(
    private readonly url: string,
    options: RedisLockerOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.acquireTimeoutMs = options.acquireTimeoutMs ?? 30_000;
    this.retryMs = options.retryMs ?? 50;
    this.askAgainMs = options.askAgainMs ?? 500;
    const redis = new Redis(url, { maxRetriesPerRequest: 2 });
    redis.defineCommand('tusUnlock', { numberOfKeys: 1, lua: UNLOCK_SCRIPT });
    redis.defineCommand('tusRenew', { numberOfKeys: 1, lua: RENEW_SCRIPT });
    this.redis = redis as LockRedis;
  }

  newLock(id: string): Lock {
    this.listen();
    return new RedisLock(id, this, this.redis);
  }

  /** Asks whichever process holds the upload's lock to let go. */
  async requestRelease(id: string): Promise<void> {
    await this.redis.publish(RELEASE_CHANNEL, id);
  }

  /** Settles once this process listens for release requests (or failed to: the lock works without). */
  listening(): Promise<void> {
    return this.subscribed;
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    this.redis.disconnect();
    await Promise.resolve();
  }

  /** One subscriber per process, started with the first lock. */
  private listen(): void {
    if (this.subscriber) return;
    const subscriber = new Redis(this.url, { maxRetriesPerRequest: null });
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, id: string) => {
      const release = this.held.get(id);
      if (release) void Promise.resolve(release()).catch(() => undefined);
    });
    this.subscribed = subscriber.subscribe(RELEASE_CHANNEL).then(
      () => undefined,
      () => undefined,
    );
  }
}

class RedisLock implements Lock {
  private readonly key: string;
  private readonly token = randomBytes(16).toString('hex');
  private renewal: NodeJS.Timeout | undefined;

  constructor(
    private readonly id: string,
    private readonly locker: RedisLocker,
    private readonly redis: LockRedis,
  ) {
    this.key = KEY_PREFIX + id;
  }

  async lock(stopSignal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    const deadline = Date.now() + this.locker.acquireTimeoutMs;
    let nextAsk = 0;
    await settledOrAfter(this.locker.listening(), this.locker.askAgainMs);
    while (!stopSignal.aborted && Date.now() < deadline) {
      const set = await this.redis.set(this.key, this.token, 'PX', this.locker.ttlMs, 'NX');
      if (set === 'OK') {
        this.locker.held.set(this.id, requestRelease);
        this.renewal = setInterval(() => void this.renew(), Math.max(100, Math.floor(this.locker.ttlMs / 3)));
        this.renewal.unref();
        return;
      }
      if (Date.now() >= nextAsk) {
        await this.locker.requestRelease(this.id);
        nextAsk = Date.now() + this.locker.askAgainMs;
      }
      await new Promise((resolve) => setTimeout(resolve, this.locker.retryMs));
    }
    // @tus/server answers its own error objects as responses (its documented contract).
    // eslint-disable-next-line @typescript-eslint/only-throw-error
    throw ERRORS.ERR_LOCK_TIMEOUT;
  }

  async unlock(): Promise<void> {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = undefined;
    this.locker.held.delete(this.id);
    await this.redis.tusUnlock(this.key, this.token);
  }

  private async renew(): Promise<void> {
    try {
      await this.redis.tusRenew(this.key, this.token, this.locker.ttlMs);
    } catch {
      // Redis unreachable for a moment: the next renewal tries again; the lock may lapse meanwhile.
    }
  }
}

/** Waits for `promise`, or `ms` at most: a Redis that does not answer must not outlast the deadline. */
async function settledOrAfter(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
