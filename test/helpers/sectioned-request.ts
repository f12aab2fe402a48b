/**
 * A request in three sections with a conditional question: the logo link is asked only when "Do you
 * have a logo?" is answered Yes. The browser tests of sections, conditions and comments share it.
 */
export const SECTIONED_ITEMS = [
  { key: 'company', label: 'Company name', type: 'text', section: 'About you' },
  { key: 'has_logo', label: 'Do you have a logo?', type: 'boolean', section: 'Brand' },
  {
    key: 'logo_link',
    label: 'Link to your logo',
    type: 'url',
    section: 'Brand',
    show_if: { item_key: 'has_logo', equals: true },
  },
  { key: 'notes', label: 'Anything else', type: 'longtext', section: 'Access', required: false },
];
