import { FILE_PRESETS, TEXT_FORMATS, schemaOfFields, type StructuredField } from '../../domain/builder.js';
import type { ItemDefinitionInput } from '../../domain/items.js';

/**
 * Ready-made templates to start an intake from: the same shape as an account's own templates (a
 * name and item definitions), built in, in English and German (other languages get English). The
 * dashboard's builder loads one into its cards to edit before anything is created.
 */
type Words = { en: string; de: string };
type Lang = keyof Words;

interface StarterItem {
  key: string;
  label: Words;
  help?: Words;
  type: string;
  required?: boolean;
  constraints?: ItemDefinitionInput['constraints'];
  example?: string;
  fields?: { label: Words; kind: StructuredField['kind']; required?: boolean }[];
}

export interface StarterTemplate {
  id: string;
  name: Words;
  description: Words;
  items: StarterItem[];
}

export const STARTER_TEMPLATES: readonly StarterTemplate[] = [
  {
    id: 'brand_kit',
    name: { en: 'Brand kit', de: 'Markenpaket' },
    description: {
      en: 'Logo, colours, fonts, guidelines and photos for a design or website project.',
      de: 'Logo, Farben, Schriften, Richtlinien und Fotos für ein Design- oder Webprojekt.',
    },
    items: [
      {
        key: 'logo',
        label: { en: 'Your logo', de: 'Ihr Logo' },
        help: {
          en: 'The original file from your designer, ideally SVG.',
          de: 'Die Originaldatei Ihres Designers, am besten SVG.',
        },
        type: 'image',
        constraints: FILE_PRESETS.logo_transparent.constraints,
      },
      {
        key: 'logo_dark',
        label: { en: 'Logo for dark backgrounds', de: 'Logo für dunkle Hintergründe' },
        type: 'image',
        required: false,
        constraints: FILE_PRESETS.logo.constraints,
      },
      {
        key: 'brand_colours',
        label: { en: 'Brand colours', de: 'Markenfarben' },
        type: 'color_list',
        constraints: { min_count: 1, max_count: 6 },
      },
      {
        key: 'fonts',
        label: { en: 'Fonts you use', de: 'Ihre Schriften' },
        type: 'text',
        required: false,
        example: 'Inter, Georgia',
      },
      {
        key: 'brand_guidelines',
        label: { en: 'Brand guidelines', de: 'Markenrichtlinien' },
        type: 'file',
        required: false,
        constraints: FILE_PRESETS.document.constraints,
      },
      {
        key: 'photos',
        label: { en: 'Photos we may use', de: 'Fotos, die wir verwenden dürfen' },
        type: 'file_list',
        required: false,
        constraints: { ...FILE_PRESETS.photo.constraints, max_count: 20 },
      },
    ],
  },
  {
    id: 'website_content',
    name: { en: 'Website content', de: 'Website-Inhalte' },
    description: {
      en: 'Texts, team photos and contact details for a new website.',
      de: 'Texte, Teamfotos und Kontaktdaten für eine neue Website.',
    },
    items: [
      {
        key: 'about',
        label: { en: 'About your company', de: 'Über Ihr Unternehmen' },
        type: 'longtext',
        constraints: { max_chars: 3000 },
      },
      {
        key: 'services',
        label: { en: 'Your services', de: 'Ihre Leistungen' },
        help: { en: 'One paragraph per service.', de: 'Ein Absatz pro Leistung.' },
        type: 'longtext',
        constraints: { max_chars: 5000 },
      },
      {
        key: 'team_photos',
        label: { en: 'Team photos', de: 'Teamfotos' },
        type: 'file_list',
        required: false,
        constraints: { ...FILE_PRESETS.photo.constraints, max_count: 30 },
      },
      {
        key: 'current_website',
        label: { en: 'Your current website', de: 'Ihre bisherige Website' },
        type: 'url',
        required: false,
      },
      {
        key: 'contact_email',
        label: { en: 'Email address for enquiries', de: 'E-Mail-Adresse für Anfragen' },
        type: 'email',
      },
      {
        key: 'phone',
        label: { en: 'Phone number', de: 'Telefonnummer' },
        type: 'phone',
        required: false,
      },
    ],
  },
  {
    id: 'onboarding_documents',
    name: { en: 'Onboarding documents', de: 'Unterlagen zum Start' },
    description: {
      en: 'Company details, VAT number, the signed contract and bank details for a new client.',
      de: 'Firmendaten, USt-IdNr., der unterschriebene Vertrag und die Bankverbindung eines neuen Kunden.',
    },
    items: [
      {
        key: 'company',
        label: { en: 'Company details', de: 'Firmendaten' },
        type: 'structured',
        fields: [
          { label: { en: 'Company name', de: 'Firmenname' }, kind: 'text', required: true },
          { label: { en: 'Address', de: 'Anschrift' }, kind: 'longtext', required: true },
          { label: { en: 'Billing email', de: 'E-Mail für Rechnungen' }, kind: 'email', required: true },
          { label: { en: 'Contact person', de: 'Ansprechpartner' }, kind: 'text' },
        ],
      },
      {
        key: 'vat_number',
        label: { en: 'VAT number', de: 'USt-IdNr.' },
        type: 'text',
        constraints: { pattern: TEXT_FORMATS.vat_eu.pattern },
        example: TEXT_FORMATS.vat_eu.example,
      },
      {
        key: 'signed_contract',
        label: { en: 'Signed contract', de: 'Unterschriebener Vertrag' },
        type: 'file',
        constraints: FILE_PRESETS.document.constraints,
      },
      {
        key: 'iban',
        label: { en: 'IBAN for direct debit', de: 'IBAN für das Lastschriftmandat' },
        type: 'text',
        required: false,
        constraints: { pattern: TEXT_FORMATS.iban.pattern },
        example: TEXT_FORMATS.iban.example,
      },
      {
        key: 'start_date',
        label: { en: 'Preferred start date', de: 'Gewünschter Starttermin' },
        type: 'date',
        required: false,
      },
    ],
  },
];

function lang(language: string): Lang {
  return language.toLowerCase().startsWith('de') ? 'de' : 'en';
}

/** A starter's name and description in a language (German or English). */
export function starterSummary(starter: StarterTemplate, language: string) {
  const l = lang(language);
  return { id: starter.id, name: starter.name[l], description: starter.description[l] };
}

/** A starter's items as item definitions, in the client's language. */
export function starterItems(id: string, language: string): ItemDefinitionInput[] | undefined {
  const starter = STARTER_TEMPLATES.find((s) => s.id === id);
  if (!starter) return undefined;
  const l = lang(language);
  return starter.items.map((item) => ({
    key: item.key,
    label: item.label[l],
    ...(item.help ? { help: item.help[l] } : {}),
    type: item.type,
    required: item.required ?? true,
    ...(item.constraints ? { constraints: { ...item.constraints } } : {}),
    ...(item.example ? { example: item.example } : {}),
    ...(item.fields
      ? {
          schema: schemaOfFields(
            item.fields.map((f) => ({
              label: f.label[l],
              kind: f.kind,
              required: f.required ?? false,
              options: [],
            })),
          ),
        }
      : {}),
  }));
}
