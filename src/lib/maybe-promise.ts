/**
 * A value now, or later. Hot paths whose inputs are usually in memory (a kept API key, the in-process
 * rate limiter, a kept answer) answer synchronously, and pay for promises only when they really wait.
 */
export type MaybePromise<T> = T | Promise<T>;

/** `next(value)`, at once when the value is here, after it settles when it is a promise. */
export function andThen<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}
