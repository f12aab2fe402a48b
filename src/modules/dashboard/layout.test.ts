import { describe, expect, it } from 'vitest';
import { translator } from '../../i18n/index.js';
import { html } from '../portal/page/html.js';
import { count, moment, tHtml } from './layout.js';
import { framedEmail } from './sections/developer.routes.js';

describe('dashboard layout helpers', () => {
  it('writes a moment as a <time> in UTC, labelled so, for the script to put in the viewer’s zone', () => {
    expect(moment('2026-11-25T19:06:42.123Z').value).toBe(
      '<time datetime="2026-11-25T19:06:42.123Z">2026-11-25 19:06 UTC</time>',
    );
    expect(moment(null).value).toBe('—');
  });

  it('puts markup into a translated sentence while escaping the sentence and its other values', () => {
    const t = translator('de', 'dashboard');
    const sentence = tHtml(t, 'detail.submitted_at', 'submitted {{at}}', { at: html`<b>jetzt</b>` });
    expect(sentence.value).toBe('eingereicht <b>jetzt</b>');
    const hostile = tHtml(t, 'missing.key', '<script>x</script> {{at}}', { at: html`<i>ok</i>` });
    expect(hostile.value).toBe('&lt;script&gt;x&lt;/script&gt; <i>ok</i>');
  });

  it('groups digits as the language does', () => {
    expect(count({ lang: 'en' }, 10000)).toBe('10,000');
    expect(count({ lang: 'de' }, 10000)).toBe('10.000');
  });

  it('frames a test email with its links opening in a new tab', () => {
    expect(
      framedEmail('<html><head><title>x</title></head><body><a href="/p">Open</a></body></html>'),
    ).toMatch(/^<html><head><base target="_blank"><style>[^<]*<\/style><title>x<\/title>/);
    expect(framedEmail('<p>bare</p>')).toMatch(/^<base target="_blank"><style>[^<]*<\/style><p>bare<\/p>$/);
  });
});
