import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

/**
 * A request's logger, made when the request first logs something. Fastify gives every request a child
 * of the app's logger carrying its `request_id`; making one costs pino a copy of the logger with its own
 * formatters and log methods, about 2% of a polled read's time. Most requests log nothing of their own
 * (the access log writes its line without it), so this stands in for the child and makes it on the first
 * line, with the same bindings and options: every line about a request still carries its id.
 */
export class RequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The request's own child logger, made on first use. */
  private logger(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  /** Logs one line at `method`, unless the level leaves it out (then nothing is made at all). */
  private write(method: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', args: unknown[]): void {
    if (this.made === undefined && this.options.level === undefined && !this.parentWrites(method)) return;
    const logger = this.logger();
    Reflect.apply(logger[method], logger, args);
  }

  /** Whether the parent logger writes lines at `method` (its level at or below it). */
  private parentWrites(method: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'): boolean {
    const parent = this.parent as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
    return parent.isLevelEnabled?.(method) ?? true;
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  /** The silent level writes nothing. */
  silent(): void {
    return undefined;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: each request's logger, made when first used. */
export const requestLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = (
  logger,
  bindings,
  options,
) => new RequestLogger(logger, bindings, options);
