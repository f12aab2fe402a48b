import nodemailer from 'nodemailer';

/** The email transport's health. Sending comes with the notifications module. */
export interface Mailer {
  readonly kind: 'outbox' | 'smtp';
  /** Throws when the transport cannot be reached (readiness probe). */
  check(): Promise<void>;
  close(): void;
}

/** Without SMTP_URL every email lands in the outbox table, which lives in the database. */
export class OutboxMailer implements Mailer {
  readonly kind = 'outbox';
  check(): Promise<void> {
    return Promise.resolve();
  }
  close(): void {}
}

export class SmtpMailer implements Mailer {
  readonly kind = 'smtp';
  private readonly transport: nodemailer.Transporter;

  constructor(url: string) {
    this.transport = nodemailer.createTransport(url);
  }

  async check(): Promise<void> {
    await this.transport.verify();
  }

  close(): void {
    this.transport.close();
  }
}
