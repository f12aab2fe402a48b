/**
 * The body of `POST /v1/intakes` the benchmarks send: a realistic definition with four items (an image
 * with constraints, long text, a structured item, a free file).
 */
export const INTAKE_BODY = {
  project_name: 'Website refresh for Northwind Bakery',
  client: { email: 'dana.fischer@example.com', name: 'Dana Fischer', language: 'en' },
  due_date: '2099-12-31',
  client_brief:
    'We are rebuilding your website. Please send your logo, a short text about the bakery, a few brand facts and any source files you already have.',
  items: [
    {
      key: 'logo',
      label: 'Your logo',
      help: 'A vector file, or a PNG at least 1000 pixels wide with a transparent background.',
      type: 'image',
      constraints: { formats: ['svg', 'png'], min_width: 1000, transparent_background: true },
    },
    {
      key: 'about',
      label: 'About your company',
      help: 'Two or three paragraphs for the About page.',
      type: 'longtext',
      constraints: { min_chars: 100, max_chars: 2000 },
    },
    {
      key: 'brand',
      label: 'Brand facts',
      type: 'structured',
      schema: {
        type: 'object',
        required: ['company', 'founded'],
        properties: {
          company: { type: 'string', minLength: 1 },
          founded: { type: 'integer', minimum: 1800 },
          tagline: { type: 'string', maxLength: 120 },
        },
      },
    },
    {
      key: 'assets',
      label: 'Source files',
      help: 'Anything else: print-ready PDFs, archives, footage.',
      type: 'file',
      required: false,
    },
  ],
};
/** INTAKE_BODY as the JSON text sent. */
export const INTAKE_BODY_JSON = JSON.stringify(INTAKE_BODY);

/**
 * A small creation for the benchmarks that count creations (scale, growth, the triggers' cost): two
 * items, a long text and an image.
 */
export const SMALL_INTAKE_BODY = {
  project_name: 'Bench',
  client: { email: 'client@example.com', name: 'Client' },
  items: [
    { key: 'about', label: 'About you', type: 'longtext' },
    { key: 'logo', label: 'Logo', type: 'image' },
  ],
};
