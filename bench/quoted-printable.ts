/**
 * The quoted-printable encoder of email text parts (src/modules/notify/quoted-printable.ts) against the
 * one nodemailer uses (its `encode`, then `wrap` at 76 characters), on the text and HTML of reminders as
 * the service renders them: in English (mostly ASCII) and in German (accents). BENCH_QP_ROUNDS alternating
 * rounds (default 5) of BENCH_QP_ITERATIONS encodings each (default 2,000); prints the microseconds per
 * email for each side and the ratio of their rates per round, with the median.
 *
 *   npx tsx bench/quoted-printable.ts
 */
import { encode, wrap } from 'nodemailer/lib/qp/index.js';
import { quotedPrintable } from '../src/modules/notify/quoted-printable.js';
import { renderEmail, type MessageContext } from '../src/modules/notify/notify.templates.js';
import { median, positiveNumberFromEnv } from './load.js';

const ITERATIONS = Math.round(positiveNumberFromEnv('BENCH_QP_ITERATIONS', 2000));
const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_QP_ROUNDS', 5));

function reminderOf(language: string): { text: string; html: string } {
  const context: MessageContext = {
    language,
    accountName: 'Studio Nord',
    projectName: 'Website refresh',
    clientName: 'Dana',
    portalUrl: 'https://app.example/portal/in_0123456789abcdefghijkl',
    optOutUrl: 'https://app.example/optout/in_0123456789abcdefghijkl?sig=0123456789abcdef',
    dueDate: '2026-12-15',
    outstanding: Array.from({ length: 8 }, (_, i) => ({
      label: `Item ${i + 1}: logo, brand colours and photos`,
      required: i % 2 === 0,
      note: i % 3 === 0 ? 'Please send the vector version' : null,
      owed: true,
    })),
    branding: { logoUrl: null, accentColor: null },
  };
  const { text, html } = renderEmail('reminder', context);
  return { text, html };
}

/** Microseconds per email (its text and HTML) for `encodeParts`, over ITERATIONS. */
function timed(email: { text: string; html: string }, encodeParts: (s: string) => string): number {
  let bytes = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++)
    bytes += encodeParts(email.text).length + encodeParts(email.html).length;
  const micros = Number(process.hrtime.bigint() - started) / 1000 / ITERATIONS;
  if (bytes === 0) throw new Error('nothing encoded');
  return micros;
}

const ours = (s: string) => quotedPrintable(s);
const nodemailers = (s: string) => wrap(encode(s), 76);

for (const language of ['en', 'de']) {
  const email = reminderOf(language);
  // Warm-up, both sides.
  timed(email, ours);
  timed(email, nodemailers);
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const first = round % 2 === 0;
    const baseline = first ? timed(email, nodemailers) : 0;
    const service = timed(email, ours);
    const bare = first ? baseline : timed(email, nodemailers);
    ratios.push(bare / service);
    console.log(
      `${language} (${email.text.length + email.html.length} characters) round ${round + 1}: ours ${service.toFixed(1)} µs, nodemailer's ${bare.toFixed(1)} µs an email`,
    );
  }
  console.log(
    `${language}: ours encodes ${median(ratios).toFixed(2)}× as many emails a second as nodemailer's (median of ${ROUNDS} rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')})`,
  );
}
