import { describe, expect, it } from 'vitest';
import { validateJsonSchema } from '../lib/json-schema.js';
import { ItemDefinition, type ItemDefinitionInput } from './items.js';
import { acceptedFormats, checkDraftValue, checkFile, checkSubmission, type FileFacts } from './values.js';

const def = (type: string, extra: Partial<ItemDefinitionInput> = {}): ItemDefinition =>
  ItemDefinition.parse({ key: 'item', label: 'Item', type, ...extra });
const draft = (d: ItemDefinition, value: unknown) => checkDraftValue(d, value, validateJsonSchema);
const submit = (d: ItemDefinition, value: unknown, fileCount = 0) =>
  checkSubmission(d, { value, fileCount }, validateJsonSchema);
const fail = (constraint: string, message: string) => ({ ok: false, constraint, message });
const ok = <T>(value: T) => ({ ok: true, value });

const OPTIONS = [
  { value: 'a', label: 'A' },
  { value: 'b', label: 'B' },
  { value: 'c', label: 'C' },
];

describe('checkDraftValue: file kinds', () => {
  it.each(['image', 'file', 'file_list'])('%s takes files, not a value', (type) => {
    expect(draft(def(type), 'x')).toEqual(fail('type', `${type} items take files, not a value`));
  });
});

describe('checkDraftValue: unknown type', () => {
  it('refuses a value for an unknown type', () => {
    expect(draft(def('picture'), 'x')).toEqual(fail('type', 'unknown item type picture'));
  });
});

describe('checkDraftValue: text kinds', () => {
  it.each(['text', 'longtext', 'secret'])('%s needs a string', (type) => {
    expect(draft(def(type), 'hello')).toEqual(ok('hello'));
    expect(draft(def(type), 5)).toEqual(fail('type', 'value must be a string'));
    expect(draft(def(type), null)).toEqual(fail('type', 'value must be a string'));
  });

  it('max_chars counts characters (code points), not UTF-16 units or bytes', () => {
    const d = def('text', { constraints: { max_chars: 3 } });
    const emoji = '😀😀😀'; // 6 UTF-16 units, 12 UTF-8 bytes, 3 characters
    expect(emoji.length).toBe(6);
    expect(draft(d, emoji)).toEqual(ok(emoji));
    expect(draft(d, '😀😀😀😀')).toEqual(fail('max_chars', '4 characters is more than the 3 allowed'));
    expect(draft(d, 'abc')).toEqual(ok('abc'));
    expect(draft(d, 'abcd')).toEqual(fail('max_chars', '4 characters is more than the 3 allowed'));
  });

  it('min_chars is not checked on drafts', () => {
    expect(draft(def('longtext', { constraints: { min_chars: 10 } }), 'ab')).toEqual(ok('ab'));
  });

  it('pattern must match the whole value', () => {
    const d = def('text', { constraints: { pattern: '[0-9]{3}' } });
    expect(draft(d, '123')).toEqual(ok('123'));
    expect(draft(d, '1234')).toEqual(fail('pattern', 'value does not have the expected form'));
    expect(draft(d, 'a123')).toEqual(fail('pattern', 'value does not have the expected form'));
    expect(draft(d, '12')).toEqual(fail('pattern', 'value does not have the expected form'));
  });

  it('pattern alternatives are anchored as a group', () => {
    const d = def('text', { constraints: { pattern: 'cat|dog' } });
    expect(draft(d, 'dog')).toEqual(ok('dog'));
    expect(draft(d, 'cats')).toEqual(fail('pattern', 'value does not have the expected form'));
    expect(draft(d, 'hotdog')).toEqual(fail('pattern', 'value does not have the expected form'));
  });

  it('pattern does not apply to an empty draft', () => {
    expect(draft(def('text', { constraints: { pattern: '[0-9]+' } }), '')).toEqual(ok(''));
  });

  it('pattern values longer than the bounded engine takes fail the pattern constraint', () => {
    const d = def('text', { constraints: { pattern: 'a+' } });
    expect(draft(d, 'a'.repeat(2000))).toEqual(ok('a'.repeat(2000)));
    expect(draft(d, 'a'.repeat(2001))).toEqual(
      fail('pattern', 'a value with a pattern may have at most 2000 characters'),
    );
  });

  it('pattern runs in unicode mode (. matches one emoji)', () => {
    expect(draft(def('text', { constraints: { pattern: '.' } }), '😀')).toEqual(ok('😀'));
  });
});

describe('checkDraftValue: url', () => {
  const d = def('url');
  it.each(['https://example.com', 'http://example.com/path?q=1', ''])('accepts %j', (value) => {
    expect(draft(d, value)).toEqual(ok(value));
  });
  it.each(['ftp://example.com', 'javascript:alert(1)', 'mailto:a@b.co', 'file:///etc/passwd'])(
    'refuses the non-http(s) URL %j',
    (value) => {
      expect(draft(d, value)).toEqual(fail('type', 'value must be an http(s) URL'));
    },
  );
  it.each(['not a url', 'https://'])('refuses the non-URL %j', (value) => {
    expect(draft(d, value)).toEqual(fail('type', 'value must be a URL such as https://example.com'));
  });
  it.each([
    ['baeckerei-mueller.de', 'https://baeckerei-mueller.de'],
    [' www.example.com/shop?x=1 ', 'https://www.example.com/shop?x=1'],
    ['//example.com', 'https://example.com'],
    ['localhost:3000', 'https://localhost:3000'],
    [' https://example.com ', 'https://example.com'],
  ])('takes %j as people type it: %j', (value, stored) => {
    expect(draft(d, value)).toEqual(ok(stored));
  });

  it('refuses a non-string and honours max_chars', () => {
    expect(draft(d, 1)).toEqual(fail('type', 'value must be a string'));
    expect(draft(def('url', { constraints: { max_chars: 15 } }), 'https://example.com')).toEqual(
      fail('max_chars', '19 characters is more than the 15 allowed'),
    );
  });
});

describe('checkDraftValue: email', () => {
  const d = def('email');
  it.each(['a@b.co', 'first.last+tag@example.co.uk', ''])('accepts %j', (value) => {
    expect(draft(d, value)).toEqual(ok(value));
  });
  it.each(['a@b', 'ab.co', 'a b@c.de', '@b.co', 'a@b.'])('refuses %j', (value) => {
    expect(draft(d, value)).toEqual(fail('type', 'value must be an email address'));
  });
  it('refuses a non-string', () => {
    expect(draft(d, ['a@b.co'])).toEqual(fail('type', 'value must be a string'));
  });
});

describe('checkDraftValue: phone (stored in E.164)', () => {
  const d = def('phone');
  const message = 'value must be a phone number with its country code, e.g. +14155550123';
  it.each([
    ['+14155552671', '+14155552671'],
    ['+1 (415) 555-2671', '+14155552671'],
    ['+44 20 7946 0958', '+442079460958'],
    ['+49 30 1234567', '+49301234567'],
    ['', ''],
  ])('accepts %j as %j', (value, stored) => {
    expect(draft(d, value)).toEqual(ok(stored));
  });
  it.each(['030 1234567', '+0123456789', '+123456', '+1234567890123456', '+1-415', 'call me'])(
    'refuses %j without a country',
    (value) => {
      expect(draft(d, value)).toEqual(fail('type', message));
    },
  );
  it('reads a number without "+" in the client’s country', () => {
    expect(checkDraftValue(d, '030 1234567', validateJsonSchema, { country: 'DE' })).toEqual(
      ok('+49301234567'),
    );
    expect(checkDraftValue(d, '06 12345678', validateJsonSchema, { country: 'NL' })).toEqual(
      ok('+31612345678'),
    );
    expect(checkDraftValue(d, '+44 20 7946 0958', validateJsonSchema, { country: 'DE' })).toEqual(
      ok('+442079460958'),
    );
    expect(checkDraftValue(d, '12', validateJsonSchema, { country: 'DE' })).toEqual(
      fail('type', 'value must be a phone number of DE or one with its country code, e.g. +14155550123'),
    );
  });
  it('refuses a number', () => {
    expect(draft(d, 14155550123)).toEqual(fail('type', 'value must be a string'));
  });
});

describe('checkDraftValue: date', () => {
  const d = def('date', { constraints: { min_date: '2026-01-10', max_date: '2026-03-31' } });
  const message = 'value must be a date YYYY-MM-DD';
  it('accepts dates within and on the bounds', () => {
    expect(draft(d, '2026-01-10')).toEqual(ok('2026-01-10'));
    expect(draft(d, '2026-02-28')).toEqual(ok('2026-02-28'));
    expect(draft(d, '2026-03-31')).toEqual(ok('2026-03-31'));
  });
  it('refuses dates outside the bounds', () => {
    expect(draft(d, '2026-01-09')).toEqual(fail('min_date', 'date must be on or after 2026-01-10'));
    expect(draft(d, '2026-04-01')).toEqual(fail('max_date', 'date must be on or before 2026-03-31'));
  });
  it.each(['2026-1-10', '10.01.2026', '2026-01-10T00:00:00Z', '2026-13-01', '2026-00-10', '', 'soon'])(
    'refuses the malformed %j',
    (value) => {
      expect(draft(def('date'), value)).toEqual(fail('type', message));
    },
  );
  it.each(['2026-02-29', '2026-02-30', '2026-04-31', '2026-01-32'])(
    'refuses the impossible day %s',
    (value) => {
      expect(draft(def('date'), value)).toEqual(fail('type', message));
    },
  );
  it('accepts 29 February in a leap year', () => {
    expect(draft(def('date'), '2028-02-29')).toEqual(ok('2028-02-29'));
  });
  it('refuses a non-string', () => {
    expect(draft(def('date'), 20260110)).toEqual(fail('type', message));
  });
});

describe('checkDraftValue: boolean', () => {
  it('accepts true and false only', () => {
    expect(draft(def('boolean'), true)).toEqual(ok(true));
    expect(draft(def('boolean'), false)).toEqual(ok(false));
    for (const value of ['true', 1, 0, null])
      expect(draft(def('boolean'), value)).toEqual(fail('type', 'value must be true or false'));
  });
});

describe('checkDraftValue: number', () => {
  const d = def('number', { constraints: { min: -1.5, max: 10, integer: true } });
  it('accepts whole numbers within the bounds', () => {
    expect(draft(d, -1)).toEqual(ok(-1));
    expect(draft(d, 10)).toEqual(ok(10));
  });
  it('refuses values outside the bounds', () => {
    expect(draft(d, -2)).toEqual(fail('min', 'value must be at least -1.5'));
    expect(draft(d, 11)).toEqual(fail('max', 'value must be at most 10'));
  });
  it('refuses fractions when integer', () => {
    expect(draft(d, 2.5)).toEqual(fail('integer', 'value must be a whole number'));
    expect(draft(def('number'), 2.5)).toEqual(ok(2.5));
  });
  it.each(['5', NaN, Infinity, -Infinity, null])('refuses %j', (value) => {
    expect(draft(def('number'), value)).toEqual(fail('type', 'value must be a number'));
  });
});

describe('checkDraftValue: select', () => {
  const d = def('select', { options: OPTIONS });
  it('accepts an option value', () => {
    expect(draft(d, 'b')).toEqual(ok('b'));
  });
  it.each(['d', 'A', ['a'], 1])('refuses %j', (value) => {
    expect(draft(d, value)).toEqual(fail('options', 'value must be one of a, b, c'));
  });
});

describe('checkDraftValue: multiselect', () => {
  const d = def('multiselect', { options: OPTIONS, constraints: { min_count: 2, max_count: 2 } });
  it('accepts distinct option values up to max_count (min_count waits for submission)', () => {
    expect(draft(d, ['a', 'c'])).toEqual(ok(['a', 'c']));
    expect(draft(d, ['a'])).toEqual(ok(['a']));
    expect(draft(d, [])).toEqual(ok([]));
  });
  it('refuses duplicates', () => {
    expect(draft(d, ['a', 'a'])).toEqual(fail('options', 'each choice may appear once'));
  });
  it('refuses more than max_count', () => {
    expect(draft(d, ['a', 'b', 'c'])).toEqual(fail('max_count', 'at most 2 choices'));
  });
  it.each([['a', 'x'], 'a', [1]])('refuses %j', (value) => {
    expect(draft(d, value)).toEqual(fail('options', 'value must be a list of a, b, c'));
  });
});

describe('checkDraftValue: color_list', () => {
  const d = def('color_list', { constraints: { max_count: 2 } });
  it('normalises colours to lower case', () => {
    expect(draft(d, ['#FFF', '#1A2b3C'])).toEqual(ok(['#fff', '#1a2b3c']));
  });
  it('refuses more than max_count', () => {
    expect(draft(d, ['#000', '#111', '#222'])).toEqual(fail('max_count', 'at most 2 colours'));
  });
  it.each([['red'], ['#12345'], ['#ggg'], ['000000'], '#000', [0]])('refuses %j', (value) => {
    expect(draft(d, value)).toEqual(fail('type', 'value must be a list of hex colours such as #1a2b3c'));
  });
});

describe('checkDraftValue: structured', () => {
  const d = def('structured', {
    schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  });
  it('accepts any object or array as a draft (the schema waits for submission)', () => {
    expect(draft(d, {})).toEqual(ok({}));
    expect(draft(d, [1])).toEqual(ok([1]));
  });
  it.each(['x', 1, null, true])('refuses %j', (value) => {
    expect(draft(d, value)).toEqual(fail('schema', 'value must be a JSON object or array'));
  });
});

describe('checkSubmission: value kinds', () => {
  it.each([undefined, null, '', []])('a required item refuses the empty value %j', (value) => {
    expect(submit(def('text'), value)).toEqual(fail('required', 'this item needs a value'));
    expect(submit(def('multiselect', { options: OPTIONS }), value)).toEqual(
      fail('required', 'this item needs a value'),
    );
  });

  it.each([undefined, null, '', [], {}])('an optional item with %j in it cannot be submitted', (value) => {
    const nothing = fail('empty', 'there is nothing to send yet: fill it in first');
    expect(submit(def('text', { required: false, constraints: { min_chars: 5 } }), value)).toEqual(nothing);
    expect(
      submit(def('multiselect', { required: false, options: OPTIONS, constraints: { min_count: 2 } }), value),
    ).toEqual(nothing);
  });

  it('false and 0 are answers, not empty', () => {
    expect(submit(def('boolean', { required: false }), false)).toEqual(ok(null));
    expect(submit(def('number', { required: false }), 0)).toEqual(ok(null));
  });

  it('runs the draft checks', () => {
    expect(submit(def('email'), 'nope')).toEqual(fail('type', 'value must be an email address'));
    expect(submit(def('text', { constraints: { max_chars: 2 } }), 'abc')).toEqual(
      fail('max_chars', '3 characters is more than the 2 allowed'),
    );
  });

  it('checks min_chars in characters', () => {
    const d = def('longtext', { constraints: { min_chars: 3 } });
    expect(submit(d, 'ab')).toEqual(fail('min_chars', 'at least 3 characters needed'));
    expect(submit(d, 'abc')).toEqual(ok(null));
    expect(submit(d, '😀😀')).toEqual(fail('min_chars', 'at least 3 characters needed'));
    expect(submit(d, '😀😀😀')).toEqual(ok(null));
  });

  it('checks min_count for multiselect and color_list', () => {
    const multi = def('multiselect', { options: OPTIONS, constraints: { min_count: 2 } });
    expect(submit(multi, ['a'])).toEqual(fail('min_count', 'at least 2 entries needed'));
    expect(submit(multi, ['a', 'b'])).toEqual(ok(null));
    const colours = def('color_list', { constraints: { min_count: 3 } });
    expect(submit(colours, ['#000', '#fff'])).toEqual(fail('min_count', 'at least 3 entries needed'));
    expect(submit(colours, ['#000', '#fff', '#123'])).toEqual(ok(null));
  });

  it('accepts false and 0 as values', () => {
    expect(submit(def('boolean'), false)).toEqual(ok(null));
    expect(submit(def('number'), 0)).toEqual(ok(null));
  });

  describe('structured', () => {
    const d = def('structured', {
      schema: {
        type: 'object',
        properties: {
          company: {
            type: 'object',
            properties: { name: { type: 'string', minLength: 1 }, vat: { type: 'string' } },
            required: ['name'],
          },
          employees: { type: 'integer', minimum: 1 },
        },
        required: ['company'],
      },
    });

    it('passes a value that satisfies the schema', () => {
      expect(submit(d, { company: { name: 'ACME' }, employees: 3 })).toEqual(ok(null));
    });

    it('names the path of a missing nested property', () => {
      expect(submit(d, { company: {} })).toEqual(
        fail('schema', "/company must have required property 'name'"),
      );
    });

    it('names the path of a wrong type and a broken bound, together', () => {
      expect(submit(d, { company: { name: 5 }, employees: 0 })).toEqual(
        fail('schema', '/company/name must be string; /employees must be >= 1'),
      );
    });

    it('names the root for a missing top-level property', () => {
      expect(submit(d, { employees: 2 })).toEqual(
        fail('schema', "(root) must have required property 'company'"),
      );
    });

    it('passes the schema and value to the injected validator', () => {
      const seen: unknown[] = [];
      const result = checkSubmission(d, { value: { x: 1 }, fileCount: 0 }, (schema, value) => {
        seen.push(schema, value);
        return 'custom error';
      });
      expect(result).toEqual(fail('schema', 'custom error'));
      expect(seen).toEqual([d.schema, { x: 1 }]);
    });

    it('refuses a non-object before validating', () => {
      expect(submit(d, 'text')).toEqual(fail('schema', 'value must be a JSON object or array'));
    });
  });
});

describe('checkSubmission: file kinds', () => {
  it('a required item needs at least one file', () => {
    expect(submit(def('image'), undefined, 0)).toEqual(
      fail('required', 'at least 1 file needed; 0 uploaded'),
    );
    expect(submit(def('image'), undefined, 1)).toEqual(ok(null));
  });

  it('a required item needs a file even with min_count 0', () => {
    const d = def('file_list', { constraints: { min_count: 0 } });
    expect(submit(d, undefined, 0)).toEqual(fail('required', 'at least 1 file needed; 0 uploaded'));
    expect(submit(d, undefined, 1)).toEqual(ok(null));
  });

  it('an optional item without files cannot be submitted, whatever min_count says', () => {
    const nothing = fail('empty', 'there is nothing to send yet: upload a file first');
    expect(submit(def('file', { required: false }), undefined, 0)).toEqual(nothing);
    expect(
      submit(def('file_list', { required: false, constraints: { min_count: 2 } }), undefined, 0),
    ).toEqual(nothing);
  });

  it('min_count bounds a non-empty answer', () => {
    const required = def('file_list', { constraints: { min_count: 3 } });
    expect(submit(required, undefined, 0)).toEqual(fail('min_count', 'at least 3 files needed; 0 uploaded'));
    expect(submit(required, undefined, 2)).toEqual(fail('min_count', 'at least 3 files needed; 2 uploaded'));
    expect(submit(required, undefined, 3)).toEqual(ok(null));
    const optional = def('file_list', { required: false, constraints: { min_count: 2 } });
    expect(submit(optional, undefined, 1)).toEqual(fail('min_count', 'at least 2 files needed; 1 uploaded'));
  });

  it('max_count: explicit, 1 for image and file, unbounded for file_list', () => {
    expect(submit(def('file_list', { constraints: { max_count: 2 } }), undefined, 3)).toEqual(
      fail('max_count', 'at most 2 files; 3 uploaded'),
    );
    expect(submit(def('image'), undefined, 2)).toEqual(fail('max_count', 'at most 1 file; 2 uploaded'));
    expect(submit(def('file'), undefined, 2)).toEqual(fail('max_count', 'at most 1 file; 2 uploaded'));
    expect(submit(def('file_list'), undefined, 500)).toEqual(ok(null));
  });
});

const png = (extra: Partial<FileFacts> = {}): FileFacts => ({
  format: 'png',
  contentType: 'image/png',
  bytes: 1000,
  width: 2000,
  height: 1000,
  transparent: true,
  ...extra,
});

describe('acceptedFormats', () => {
  it('returns the listed formats in canonical form', () => {
    expect(acceptedFormats(def('file', { constraints: { formats: ['JPEG', 'pdf', 'heif'] } }))).toEqual([
      'jpg',
      'pdf',
      'heic',
    ]);
  });
  it('defaults to every image format for image items and to anything otherwise', () => {
    expect(acceptedFormats(def('image'))).toEqual(['png', 'jpg', 'svg', 'heic', 'webp', 'gif']);
    expect(acceptedFormats(def('file'))).toBeUndefined();
    expect(acceptedFormats(def('file_list'))).toBeUndefined();
  });
});

describe('checkFile', () => {
  it('accepts a file that meets every constraint', () => {
    const d = def('image', {
      constraints: {
        formats: ['png'],
        max_bytes: 1000,
        min_width: 2000,
        min_height: 1000,
        transparent_background: true,
      },
    });
    expect(checkFile(d, png(), 0)).toEqual(ok(null));
  });

  it('refuses once max_count files are there (default 1 for single-file kinds)', () => {
    expect(checkFile(def('image'), png(), 1)).toEqual(
      fail('max_count', 'this item takes at most 1 file; remove one first'),
    );
    expect(checkFile(def('file_list', { constraints: { max_count: 3 } }), png(), 3)).toEqual(
      fail('max_count', 'this item takes at most 3 files; remove one first'),
    );
    expect(checkFile(def('file_list', { constraints: { max_count: 3 } }), png(), 2)).toEqual(ok(null));
    expect(checkFile(def('file_list'), png(), 1000)).toEqual(ok(null));
  });

  it('refuses a file over max_bytes', () => {
    const d = def('file', { constraints: { max_bytes: 999 } });
    expect(checkFile(d, png(), 0)).toEqual(fail('max_bytes', 'the file is 1000 bytes; at most 999 allowed'));
    expect(checkFile(d, png({ bytes: 999 }), 0)).toEqual(ok(null));
  });

  it('judges the format by detected content, not by the name', () => {
    const d = def('file', { constraints: { formats: ['pdf'] } });
    expect(checkFile(d, { format: 'pdf', contentType: 'application/pdf', bytes: 10 }, 0)).toEqual(ok(null));
    expect(checkFile(d, png(), 0)).toEqual(fail('formats', "the file's content is png; accepted: pdf"));
  });

  it('names the content type when the format could not be recognised', () => {
    const d = def('file', { constraints: { formats: ['pdf', 'docx'] } });
    expect(
      checkFile(d, { format: undefined, contentType: 'application/x-msdownload', bytes: 10 }, 0),
    ).toEqual(fail('formats', "the file's content is application/x-msdownload; accepted: pdf, docx"));
  });

  it('accepts any format on a file item without formats', () => {
    expect(
      checkFile(def('file'), { format: undefined, contentType: 'application/octet-stream', bytes: 1 }, 0),
    ).toEqual(ok(null));
  });

  it('image items accept image formats only by default', () => {
    expect(checkFile(def('image'), { format: 'pdf', contentType: 'application/pdf', bytes: 1 }, 0)).toEqual(
      fail('formats', "the file's content is pdf; accepted: png, jpg, svg, heic, webp, gif"),
    );
    expect(checkFile(def('image'), png({ format: 'webp', contentType: 'image/webp' }), 0)).toEqual(ok(null));
  });

  it('checks min_width and min_height', () => {
    const d = def('image', { constraints: { min_width: 1000, min_height: 500 } });
    expect(checkFile(d, png({ width: 999 }), 0)).toEqual(
      fail('min_width', 'the image is 999 px wide; at least 1000 px needed'),
    );
    expect(checkFile(d, png({ height: 499 }), 0)).toEqual(
      fail('min_height', 'the image is 499 px high; at least 500 px needed'),
    );
    expect(checkFile(d, png({ width: 1000, height: 500 }), 0)).toEqual(ok(null));
  });

  it('refuses when the width or height cannot be read', () => {
    const d = def('image', { constraints: { min_width: 1000, min_height: 500 } });
    expect(checkFile(d, png({ width: undefined }), 0)).toEqual(
      fail('min_width', 'the image width could not be read'),
    );
    expect(checkFile(d, png({ height: undefined }), 0)).toEqual(
      fail('min_height', 'the image height could not be read'),
    );
  });

  it('exempts SVG from min_width and min_height (it scales)', () => {
    const d = def('image', { constraints: { min_width: 1000, min_height: 500 } });
    const svg: FileFacts = { format: 'svg', contentType: 'image/svg+xml', bytes: 100 };
    expect(checkFile(d, svg, 0)).toEqual(ok(null));
    expect(checkFile(d, { ...svg, width: 10, height: 10 }, 0)).toEqual(ok(null));
  });

  it('transparent_background: true passes, false and unknown fail with their own messages', () => {
    const d = def('image', { constraints: { transparent_background: true } });
    expect(checkFile(d, png({ transparent: true }), 0)).toEqual(ok(null));
    expect(checkFile(d, png({ transparent: false }), 0)).toEqual(
      fail('transparent_background', 'the image has no transparent background'),
    );
    expect(checkFile(d, png({ transparent: undefined }), 0)).toEqual(
      fail(
        'transparent_background',
        'the image has no alpha channel, so its background cannot be transparent',
      ),
    );
  });

  it('transparent_background false or absent asks nothing', () => {
    expect(
      checkFile(
        def('image', { constraints: { transparent_background: false } }),
        png({ transparent: false }),
        0,
      ),
    ).toEqual(ok(null));
    expect(checkFile(def('image'), png({ transparent: undefined }), 0)).toEqual(ok(null));
  });

  it('checks in order: count, size, format, dimensions, transparency', () => {
    const d = def('image', {
      constraints: { formats: ['jpg'], max_bytes: 1, min_width: 5000, transparent_background: true },
    });
    const facts = png({ width: 1, transparent: false });
    expect(checkFile(d, facts, 1)).toMatchObject({ ok: false, constraint: 'max_count' });
    expect(checkFile(d, facts, 0)).toMatchObject({ ok: false, constraint: 'max_bytes' });
    expect(checkFile(d, { ...facts, bytes: 1 }, 0)).toMatchObject({ ok: false, constraint: 'formats' });
    expect(checkFile(d, { ...facts, bytes: 1, format: 'jpg' }, 0)).toMatchObject({
      ok: false,
      constraint: 'min_width',
    });
    expect(checkFile(d, { ...facts, bytes: 1, format: 'jpg', width: 5000 }, 0)).toMatchObject({
      ok: false,
      constraint: 'transparent_background',
    });
  });
});
